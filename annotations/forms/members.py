"""Forms of the members page: add a user, create an account, change a role."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator

from annotations.models import Membership

ROLE_HELP = (
    "Organisers manage the collection; assessors grade what is assigned to them (blinded to "
    "systems and scores); system owners submit runs and read the leaderboard."
)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="The account's username.")
    role = forms.ChoiceField(choices=Membership.ROLE_CHOICES, help_text=ROLE_HELP)

    def clean_username(self) -> Any:
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError(
                f"No account is called {username!r}; create it below instead."
            )
        return user


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

    def clean_username(self) -> str:
        username: str = self.cleaned_data["username"]
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise forms.ValidationError(
                "An account with this username exists; add it as an existing user above."
            )
        return username


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.ROLE_CHOICES)
