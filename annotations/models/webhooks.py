"""Webhooks: a collection's subscriptions to its events and the outbox of their deliveries."""

from __future__ import annotations

import base64
import secrets
import uuid

from django.conf import settings
from django.db import models

# The events a subscription can ask for (`annotations.events` emits them).
JUDGEMENT_CREATED = "judgement.created"
JUDGEMENT_CHANGED = "judgement.changed"
SCORES_UPDATED = "scores.updated"
LEADERBOARD_CHANGED = "leaderboard.changed"
VERSION_TAGGED = "version.tagged"
IMPORT_FINISHED = "import.finished"
IMPORT_FAILED = "import.failed"
SYSTEM_REGRESSED = "system.regressed"
WEBHOOK_TEST = "webhook.test"
EVENT_TYPES: dict[str, str] = {
    JUDGEMENT_CREATED: "a pair got its first grade from an assessor",
    JUDGEMENT_CHANGED: "an assessor changed or took back a grade",
    SCORES_UPDATED: "a query's stored scores were recomputed (one per query, coalesced)",
    LEADERBOARD_CHANGED: "the leaderboard's snapshot at a cutoff was replaced",
    VERSION_TAGGED: "a qrels version was tagged",
    IMPORT_FINISHED: "an import job finished",
    IMPORT_FAILED: "an import job failed",
    SYSTEM_REGRESSED: "a run fetched from a search system scored significantly worse than the "
    "system's previous run on the collection's main measure",
}


def new_secret() -> str:
    """A signing secret as the Standard Webhooks spec writes it: `whsec_` + base64 bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


class WebhookSubscription(models.Model):
    """A URL that receives a collection's events, signed with the subscription's secret."""

    collection = models.ForeignKey(
        "annotations.Collection", on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=2000)
    events = models.JSONField(
        default=list, blank=True, help_text="Event types delivered; empty: all"
    )
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["collection", "active"], name="webhook_collection")]

    def __str__(self) -> str:
        return f"webhook {self.id} of collection {self.collection_id}: {self.url}"

    def wants(self, event_type: str) -> bool:
        return event_type == WEBHOOK_TEST or not self.events or event_type in self.events


class WebhookDelivery(models.Model):
    """One event for one subscription: the outbox row its sender works from.

    Written in the transaction of the change it reports (so a committed change is never
    left untold), sent after commit by the background engine, retried with backoff. The body
    and `message_id` (the `webhook-id` header) stay the same over retries, so a receiver
    deduplicates by it. A burst of one kind (`coalesce_key`, e.g. one query's scores) keeps
    updating the one delivery not yet attempted instead of adding more.
    """

    PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
    STATE_CHOICES = [(PENDING, "pending"), (DELIVERED, "delivered"), (FAILED, "failed")]

    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    message_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event_type = models.CharField(max_length=40)
    body = models.TextField(help_text="The JSON body, exactly as sent")
    coalesce_key = models.CharField(max_length=100, blank=True)
    state = models.CharField(max_length=10, choices=STATE_CHOICES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt = models.DateTimeField(help_text="When the next attempt is due")
    claimed = models.DateTimeField(null=True, blank=True, help_text="A sender is sending it")
    last_status = models.PositiveIntegerField(null=True, blank=True, help_text="HTTP status")
    last_error = models.CharField(max_length=500, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    delivered = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["state", "next_attempt"], name="webhook_delivery_due"),
            models.Index(
                fields=["subscription", "coalesce_key"],
                name="webhook_delivery_coalesce",
                condition=models.Q(state="pending", attempts=0),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} to webhook {self.subscription_id} ({self.state})"

    @property
    def webhook_id(self) -> str:
        return f"msg_{self.message_id.hex}"
