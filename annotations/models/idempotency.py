"""Responses to API writes stored under the client's Idempotency-Key, for safe retries."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IdempotentResponse(models.Model):
    """The first successful answer to a write sent with an ``Idempotency-Key`` header.

    Stored in the write's own transaction, so that a committed write always has its answer
    here and a write that was rolled back never does; a retry with the same key and the same
    request replays it. Kept for a day (`annotations.idempotency.KEEP_HOURS`).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body.")
    status = models.PositiveSmallIntegerField(null=True)
    headers = models.JSONField(default=dict)
    body = models.BinaryField(default=b"")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotent_response_key")
        ]
        indexes = [models.Index(fields=["created"], name="idempotent_response_created")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.key} -> {self.status}"
