"""Where accounts come from, and the audit trail of what organisers did to accounts."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotations.models.collections import Collection


class AccountOrigin(models.Model):
    """Which collection's members page created an account, or that it is a system account.

    A set-password link is issued only for an account its own collection created (see
    ``services.members.link_refusal``); accounts that existed before have no origin, and only
    staff give them a link. System accounts (the import account ``trec``) never get one.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="account_origin",
    )
    collection = models.ForeignKey(
        Collection, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    system = models.BooleanField(
        default=False, help_text="A non-login account the platform uses (never a password)."
    )
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        if self.system:
            return f"{self.user_id}: system account"
        return f"{self.user_id}: created in {self.collection_id}"


class AccountAudit(models.Model):
    """One thing an organiser (or staff) did to an account through a members page."""

    CREATED = "created"
    ADDED = "added"
    LINK = "link"
    ROLE = "role"
    REMOVED = "removed"
    ACTION_CHOICES = [
        (CREATED, "Account created"),
        (ADDED, "Existing user added"),
        (LINK, "Set-password link issued"),
        (ROLE, "Role changed"),
        (REMOVED, "Role removed"),
    ]

    time = models.DateTimeField(auto_now_add=True, db_index=True)
    action = models.CharField(max_length=8, choices=ACTION_CHOICES)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150, help_text="Kept when the account goes.")
    target = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    target_name = models.CharField(max_length=150)
    collection = models.ForeignKey(
        Collection, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    collection_slug = models.CharField(max_length=100)
    detail = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-time", "-id"]

    def __str__(self) -> str:
        return f"{self.actor_name}: {self.action} {self.target_name} in {self.collection_slug}"
