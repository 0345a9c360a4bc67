"""A collection's webhooks with their latest deliveries, for the organiser's page."""

from __future__ import annotations

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from annotations.models import Collection, WebhookDelivery, WebhookSubscription


def subscriptions_with_log(*, collection: Collection, rows: int) -> list[WebhookSubscription]:
    """Every subscription of the collection (oldest first) with its latest `rows` deliveries,
    newest first, as `log`: two queries however many subscriptions there are."""
    subscriptions = list(
        WebhookSubscription.objects.filter(collection=collection)
        .select_related("created_by")
        .order_by("id")
    )
    latest = (
        WebhookDelivery.objects.filter(subscription__collection=collection)
        .annotate(
            newest=Window(RowNumber(), partition_by=[F("subscription_id")], order_by=F("id").desc())
        )
        .filter(newest__lte=rows)
        .order_by("subscription_id", "-id")
    )
    logs: dict[int, list[WebhookDelivery]] = {item.id: [] for item in subscriptions}
    for delivery in latest:
        logs.setdefault(delivery.subscription_id, []).append(delivery)
    for subscription in subscriptions:
        subscription.log = logs[subscription.id]  # type: ignore[attr-defined]
    return subscriptions
