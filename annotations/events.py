"""Events out: what changed, written to the webhook outbox in the writer's own transaction.

`emit` appends one `WebhookDelivery` per subscription that wants the event, in the
transaction of the change, so a committed change always has its deliveries and a rolled
back one has none; after commit the sender is woken (a Celery task by name, or the
process's own sender thread without a broker). Nothing is sent on the writer's path. A
collection nobody subscribed to costs one indexed read per event.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import connections, transaction
from django.utils import timezone

from annotations import publishing
from annotations.bulk import cursor
from annotations.models import WebhookDelivery, WebhookSubscription
from annotations.models.webhooks import WEBHOOK_TEST

logger = logging.getLogger(__name__)

Data = dict[str, Any]
WAKE_KEY = "webhooks-wake"


def emit(
    *,
    collection_id: int,
    event_type: str,
    data: Data | Callable[[], Data],
    coalesce_key: str = "",
    only: WebhookSubscription | None = None,
) -> int:
    """Queue the event for every active subscription of the collection that wants it (or
    for `only`); the number of deliveries written or refreshed. `data` may be a callable,
    called only when somebody subscribed. With a `coalesce_key`, a delivery of the same key
    not yet attempted is refreshed with the new body instead of a second one."""
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
                ).update(body=body, next_attempt=now)
            ):
                continue
            fresh.append(
                WebhookDelivery(
                    subscription_id=subscription.id,
                    event_type=event_type,
                    body=body,
                    coalesce_key=coalesce_key,
                    next_attempt=now,
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

_sender: Callable[[], float | None] | None = None
_thread: threading.Thread | None = None
_thread_lock = threading.Lock()
_wakeup = threading.Event()


def sender_register(send_due: Callable[[], float | None]) -> None:
    """The function that sends what is due and answers the seconds until the next attempt
    (None: nothing pending); registered once by the app (`annotations.apps`)."""
    global _sender
    _sender = send_due


def wake() -> None:
    """After commit: have the due deliveries sent, never on this thread."""
    if settings.CELERY_BROKER_URL:
        _publish(0.0)
        return
    _thread_start()
    _wakeup.set()


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


def _thread_start() -> None:
    global _thread
    with _thread_lock:
        if _thread is not None and _thread.is_alive():
            return
        _thread = threading.Thread(target=_thread_loop, name="webhook-sender", daemon=True)
        _thread.start()


def _thread_loop() -> None:
    """The sender of a process without a broker: sends what is due whenever woken, and again
    when the next retry is due."""
    wait: float | None = None
    while True:
        _wakeup.wait(timeout=wait if wait is not None else 60.0)
        _wakeup.clear()
        if _sender is None:
            wait = None
            continue
        try:
            wait = _sender()
        except Exception:
            logger.exception("sending webhooks failed; retried in a minute")
            wait = 60.0
        finally:
            connections.close_all()  # this thread's own
        if wait is not None:
            wait = min(max(wait, 0.05), timedelta(hours=1).total_seconds())
