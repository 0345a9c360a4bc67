"""Events out: what changed, written to the webhook outbox in the writer's own transaction.

`emit` appends one `WebhookDelivery` per subscription that wants the event, in the
transaction of the change, so a committed change always has its deliveries and a rolled
back one has none; after commit the sender, a Celery task queued by name, is woken.
Nothing is sent on the writer's path. A collection nobody subscribed to costs one indexed
read per event.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.utils import timezone

from annotations import publishing
from annotations.bulk import cursor
from annotations.models import WebhookDelivery, WebhookSubscription
from annotations.models.webhooks import WEBHOOK_TEST

logger = logging.getLogger(__name__)

Data = dict[str, Any]
WAKE_KEY = "webhooks-wake"
# A leaderboard is refreshed after every judgement that moves it; its subscribers hear of a
# burst of refreshes once per cutoff, this long after the first.
LEADERBOARD_EVENT_SECONDS = 15.0


def emit(
    *,
    collection_id: int,
    event_type: str,
    data: Data | Callable[[], Data],
    coalesce_key: str = "",
    only: WebhookSubscription | None = None,
    delay_seconds: float = 0.0,
) -> int:
    """Queue the event for every active subscription of the collection that wants it (or
    for `only`); the number of deliveries written or refreshed. `data` may be a callable,
    called only when somebody subscribed. With a `coalesce_key`, a delivery of the same key
    not yet attempted is refreshed with the new body instead of a second one; with
    `delay_seconds` as well, a new delivery is due that much later and a refresh keeps its
    time, so a burst of changes within it is one delivery with the last body."""
    if only is not None:
        subscriptions = [only]
    else:
        subscriptions = [
            subscription
            for subscription in _active_subscriptions(collection_id)
            if subscription.wants(event_type)
        ]
    if not subscriptions:
        return 0
    now = timezone.now()
    due = now + timedelta(seconds=delay_seconds)
    refreshed = {"body": None} if delay_seconds > 0 else {"body": None, "next_attempt": now}
    payload = data() if callable(data) else data
    body = json.dumps(
        {"type": event_type, "timestamp": now.isoformat(), "data": payload},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    with transaction.atomic():
        fresh: list[WebhookDelivery] = []
        for subscription in subscriptions:
            if coalesce_key and (
                WebhookDelivery.objects.filter(
                    subscription_id=subscription.id,
                    coalesce_key=coalesce_key,
                    state=WebhookDelivery.PENDING,
                    attempts=0,
                    claimed__isnull=True,
                ).update(**{**refreshed, "body": body})
            ):
                continue
            fresh.append(
                WebhookDelivery(
                    subscription_id=subscription.id,
                    event_type=event_type,
                    body=body,
                    coalesce_key=coalesce_key,
                    next_attempt=due,
                )
            )
        WebhookDelivery.objects.bulk_create(fresh)
        transaction.on_commit(wake)
    return len(subscriptions)


def _active_subscriptions(collection_id: int) -> list[WebhookSubscription]:
    """The collection's active subscriptions (id and events only), in one plain statement:
    every judgement asks, and almost always the answer is none."""
    with cursor() as found_rows:  # prepared once per connection on PostgreSQL
        found_rows.execute(
            f"SELECT id, events FROM {WebhookSubscription._meta.db_table} "
            "WHERE collection_id = %s AND active",
            [collection_id],
        )
        rows = found_rows.fetchall()
    found = []
    for subscription_id, events in rows:
        if isinstance(events, str | bytes):  # JSON as text (SQLite; jsonb loaded as text)
            events = json.loads(events)
        found.append(WebhookSubscription(id=subscription_id, events=events or []))
    return found


def emit_test(subscription: WebhookSubscription) -> int:
    """A `webhook.test` event for one subscription (its page's and API's test button)."""
    return emit(
        collection_id=subscription.collection_id,
        event_type=WEBHOOK_TEST,
        data={"subscription": subscription.id, "url": subscription.url},
        only=subscription,
    )


# -- waking the sender ------------------------------------------------------------------------


def wake() -> None:
    """After commit: have the due deliveries sent by a worker."""
    _publish(0.0)


def schedule_retry(seconds: float) -> None:
    """From a Celery sender: the next attempt is due in `seconds` (the beat sweep heals a
    lost one)."""
    _publish(seconds)


def wake_release() -> None:
    """A Celery sender starts: changes from now on publish another wake."""
    try:
        caches["coordination"].delete(WAKE_KEY)
    except Exception:  # the mark expires by itself
        logger.warning("could not clear %s", WAKE_KEY)


def _publish(countdown: float) -> None:
    try:
        coalesced = countdown <= 0 and settings.NDCG_COORDINATION_SHARED
        if coalesced and not caches["coordination"].add(WAKE_KEY, 1, timeout=30):
            return  # a sender is queued and will see this delivery
        publishing.WEBHOOKS_SEND.apply_async((), countdown=max(0.0, countdown), retry=False)
    except Exception as error:  # the beat sweep sends it once the broker is back
        logger.warning("could not queue the webhook sender: %r", error)
