"""Forms of the members page: add a user, create an account, change a role."""

from __future__ import annotations

from django import forms
from django.contrib.auth.validators import UnicodeUsernameValidator

from annotations.models import Membership

ROLE_HELP = (
    "Organisers manage the collection; assessors grade what is assigned to them (blinded to "
    "systems and scores); system owners submit runs and read the leaderboard."
)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="The account's username.")
    role = forms.ChoiceField(choices=Membership.ROLE_CHOICES, help_text=ROLE_HELP)
    # Whether the account can be added is the service's rule (services.membership_add),
    # answered in one message whatever the reason.


class AccountCreateForm(forms.Form):
    username = forms.CharField(
        max_length=150,
        validators=[UnicodeUsernameValidator()],
        help_text="Letters, digits and @ . + - _ only.",
    )
    email = forms.EmailField(
        required=False, help_text="Optional; the set-password link is mailed when mail is set up."
    )
    role = forms.ChoiceField(
        choices=Membership.ROLE_CHOICES, initial=Membership.ASSESSOR, help_text=ROLE_HELP
    )
    # Whether the username is free is the service's rule (services.account_create).


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.ROLE_CHOICES)
