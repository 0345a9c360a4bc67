"""Webhooks: subscriptions and their delivery log."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotations.models import WebhookDelivery, WebhookSubscription
from annotations.models.webhooks import EVENT_TYPES
from annotations.serializers.inputs import StrictInputMixin, http_url

EVENT_HELP = "; ".join(f"`{name}`: {meaning}" for name, meaning in EVENT_TYPES.items())


class WebhookSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=list(EVENT_TYPES)),
        help_text=f"The event types delivered (empty: all). {EVENT_HELP}",
    )
    secret = serializers.CharField(
        read_only=True,
        help_text="The signing secret (`whsec_` + base64), for verifying `webhook-signature`",
    )

    class Meta:
        model = WebhookSubscription
        fields = ["id", "url", "events", "active", "secret", "created", "created_by"]
        read_only_fields = fields


class WebhookCreateSerializer(StrictInputMixin, serializers.Serializer):
    url = serializers.CharField(
        max_length=2000,
        help_text="Where deliveries are POSTed: an http:// or https:// URL",
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=list(EVENT_TYPES)),
        required=False,
        default=list,
        max_length=len(EVENT_TYPES),
        help_text=f"The event types to deliver (left out or empty: all). {EVENT_HELP}",
    )

    def validate_url(self, value: str) -> str:
        return http_url(value)


class WebhookDeliverySerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    webhook_id = serializers.CharField(read_only=True, help_text="The `webhook-id` header sent")

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "webhook_id",
            "event_type",
            "state",
            "attempts",
            "last_status",
            "last_error",
            "created",
            "next_attempt",
            "delivered",
            "body",
        ]
        read_only_fields = fields
