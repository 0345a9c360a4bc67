"""Members and accounts: the bodies the members page's forms take, and what they answer."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import Membership
from annotations.serializers.inputs import StrictInputMixin

ROLE_CHOICES = [role for role, _ in Membership.ROLE_CHOICES]
ROLE_HELP = (
    "organiser: manages the collection; assessor: grades what is assigned (blinded to systems "
    "and scores); owner: submits runs and reads the leaderboard."
)


class MemberSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The membership's id (one per user and role).")
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=ROLE_CHOICES)
    link_available = serializers.BooleanField(
        help_text="A set-password link may be issued for this account from this collection."
    )


class MemberAddSerializer(StrictInputMixin, serializers.Serializer):
    username = serializers.CharField(max_length=150, help_text="An existing account's username.")
    role = serializers.ChoiceField(choices=ROLE_CHOICES, help_text=ROLE_HELP)


class RoleSerializer(StrictInputMixin, serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLE_CHOICES, help_text=ROLE_HELP)


class AccountCreateSerializer(StrictInputMixin, serializers.Serializer):
    username = serializers.CharField(
        max_length=150, help_text="Letters, digits and @ . + - _ only; not taken in any case."
    )
    email = serializers.EmailField(
        required=False, help_text="Optional; the set-password link is mailed when mail is set up."
    )
    role = serializers.ChoiceField(
        choices=ROLE_CHOICES, required=False, default=Membership.ASSESSOR, help_text=ROLE_HELP
    )


class PasswordLinkSerializer(serializers.Serializer):
    username = serializers.CharField()
    url = serializers.URLField(
        help_text="The one-time set-password page: it stops working once the password is set "
        "or after PASSWORD_RESET_TIMEOUT. Give it to the person only."
    )
    mailed = serializers.BooleanField(help_text="Also mailed to the account's address.")


class AccountCreatedSerializer(serializers.Serializer):
    member = MemberSerializer()
    link = PasswordLinkSerializer()
