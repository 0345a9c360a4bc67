"""Webhook subscriptions and the sender: signed deliveries from the outbox, with retries.

Deliveries are signed as the Standard Webhooks spec says (`webhook-id`,
`webhook-timestamp`, `webhook-signature`: v1, HMAC-SHA256 over `id.timestamp.body`, by the
`standardwebhooks` package). A 2xx answer delivers; anything else (an error status, a
redirect, a timeout, a refused target) is tried again after each of RETRY_SECONDS in
turn (longer when the receiver sends Retry-After), then
given up as failed. At least once: a receiver deduplicates by `webhook-id`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime

import httpx2
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone
from standardwebhooks import Webhook

from annotations import events
from annotations.models import Collection, WebhookDelivery, WebhookSubscription
from annotations.models.webhooks import EVENT_TYPES
from annotations.services.outbound import (
    AnswerRefused,
    OutboundRefused,
    Rule,
    outbound_client,
    outbound_refusal,
)

USER_AGENT = "ndcg-platform-webhooks/1"
BATCH = 50
MAX_RETRY_AFTER = timedelta(days=1)
MAX_SUBSCRIPTIONS = 20
# Only the status and headers of an answer count; its body is never read.
ANSWER_BYTES = 64 * 1024
# One attempt waits this long for the receiver: a receiver is expected to acknowledge at
# once and work afterwards (as GitHub's and Stripe's webhooks expect), and a slow one must
# not hold an outbound thread from the other collections' deliveries.
TIMEOUT_SECONDS = 5.0
# The waits before each retry of a failed delivery, growing so that a receiver down for
# hours still gets the event, without hammering one that is down; after the last the
# delivery is failed (a receiver's longer Retry-After wins).
RETRY_SECONDS = (5.0, 30.0, 120.0, 600.0, 3600.0, 21600.0)
# Delivered and failed deliveries stay in the delivery log this long: long enough for an
# organiser to look into a receiver's failures, short enough that the log stays small.
KEEP_DAYS = 14


def _rule() -> Rule:
    return Rule(
        allow_private=settings.NDCG_WEBHOOK_ALLOW_PRIVATE,
        setting="NDCG_WEBHOOK_ALLOW_PRIVATE",
        credentials="deliveries are signed",
    )


def target_refusal(url: str) -> str | None:
    """Why the platform will not send to `url`, or None (`outbound.outbound_refusal`; internal
    addresses allowed by NDCG_WEBHOOK_ALLOW_PRIVATE)."""
    return outbound_refusal(url, _rule())


def subscription_create(
    *, collection: Collection, url: str, events: Iterable[str] = (), created_by: User | None
) -> WebhookSubscription:
    """Subscribe `url` to the collection's events (all of them when `events` is empty)."""
    wanted = sorted(set(events))
    unknown = [name for name in wanted if name not in EVENT_TYPES]
    if unknown:
        raise ValidationError({"events": f"Unknown event types: {', '.join(unknown)}."})
    subscription = WebhookSubscription(
        collection=collection, url=url.strip(), events=wanted, created_by=created_by
    )
    subscription.full_clean(exclude=["collection", "created_by", "secret"])
    refusal = target_refusal(subscription.url)
    if refusal is not None:
        raise ValidationError({"url": refusal})
    if WebhookSubscription.objects.filter(collection=collection).count() >= MAX_SUBSCRIPTIONS:
        raise ValidationError(
            {"url": f"A collection has at most {MAX_SUBSCRIPTIONS} webhooks; delete one first."}
        )
    subscription.save()
    return subscription


def subscription_delete(subscription: WebhookSubscription) -> None:
    """Remove the subscription and its delivery log (nothing more is sent to it)."""
    subscription.delete()


# -- sending ----------------------------------------------------------------------------------


def _claim_seconds() -> float:
    return 2 * TIMEOUT_SECONDS + 5


def _collection_seconds() -> float:
    """How long one collection's deliveries may take of one sending call: two attempts that
    run to the timeout (the others' turns come before its third)."""
    return 2 * TIMEOUT_SECONDS


def deliveries_send_due(*, limit: int = BATCH) -> float | None:
    """Send the deliveries that are due (up to `limit` per call); the seconds until the next
    pending one is due (0 when more are due now), None if none is pending. Collections take
    turns, oldest due first within each, and one collection's deliveries stop for this call
    once they have taken two attempts' time (`_collection_seconds`): a collection whose
    receivers are slow delays another's by at most that. Safe to run in several processes:
    each delivery is claimed before it is sent."""
    now = timezone.now()
    unclaimed = Q(claimed__isnull=True) | Q(claimed__lt=now - timedelta(seconds=_claim_seconds()))
    due = WebhookDelivery.objects.filter(
        unclaimed, state=WebhookDelivery.PENDING, next_attempt__lte=now
    )
    collections = sorted(
        set(due.order_by().values_list("subscription__collection_id", flat=True).distinct())
    )
    turns = {
        collection_id: deque(
            due.filter(subscription__collection_id=collection_id)
            .order_by("next_attempt", "id")
            .values_list("id", flat=True)[:limit]
        )
        for collection_id in collections
    }
    spent = dict.fromkeys(turns, 0.0)
    sent = 0
    while turns and sent < limit:
        for collection_id in list(turns):
            waiting = turns[collection_id]
            if not waiting or spent[collection_id] >= _collection_seconds() or sent >= limit:
                del turns[collection_id]
                continue
            delivery_id = waiting.popleft()
            claimed = WebhookDelivery.objects.filter(
                unclaimed, id=delivery_id, state=WebhookDelivery.PENDING
            ).update(claimed=timezone.now())
            if claimed:
                started = time.monotonic()
                _send(WebhookDelivery.objects.select_related("subscription").get(id=delivery_id))
                spent[collection_id] += time.monotonic() - started
                sent += 1
    following = (
        WebhookDelivery.objects.filter(state=WebhookDelivery.PENDING)
        .order_by("next_attempt")
        .values_list("next_attempt", flat=True)
        .first()
    )
    if following is None:
        return None
    return max(0.0, (following - timezone.now()).total_seconds())


def signed_headers(delivery: WebhookDelivery, moment: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt of the delivery at `moment`."""
    signature = Webhook(delivery.subscription.secret).sign(
        delivery.webhook_id, moment, delivery.body
    )
    return {
        "webhook-id": delivery.webhook_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": signature,
    }


def _send(delivery: WebhookDelivery) -> None:
    moment = timezone.now()
    status: int | None = None
    error = ""
    retry_after: timedelta | None = None
    seconds = TIMEOUT_SECONDS
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signed_headers(delivery, moment),
    }
    try:
        with (
            outbound_client(_rule(), answer_bytes=ANSWER_BYTES, seconds=seconds) as client,
            client.stream(
                "POST", delivery.subscription.url, content=delivery.body.encode(), headers=headers
            ) as answer,
        ):
            status = answer.status_code
            retry_after = retry_after_of(answer.headers.get("Retry-After"), moment)
    except (OutboundRefused, AnswerRefused) as refusal:
        error = str(refusal)
    except (httpx2.HTTPError, httpx2.InvalidURL, OSError, ValueError) as failure:
        # The class only: an error's text can quote what the receiver sent.
        error = type(failure).__name__
    if status is not None and not 200 <= status < 300:
        # The standard phrase, not the receiver's own.
        error = f"HTTP {status} {httpx2.codes.get_reason_phrase(status)}".rstrip()
    _record(delivery, status, error, retry_after)


def _record(
    delivery: WebhookDelivery, status: int | None, error: str, retry_after: timedelta | None
) -> None:
    now = timezone.now()
    attempts = delivery.attempts + 1
    fields: dict[str, object] = {
        "attempts": attempts,
        "last_status": status,
        "last_error": error[:500],
        "claimed": None,
    }
    if status is not None and 200 <= status < 300:
        fields.update(state=WebhookDelivery.DELIVERED, delivered=now, last_error="")
    else:
        schedule = RETRY_SECONDS
        if attempts > len(schedule):
            fields["state"] = WebhookDelivery.FAILED
        else:
            wait = timedelta(seconds=schedule[attempts - 1])
            fields["next_attempt"] = now + max(wait, retry_after or timedelta(0))
    WebhookDelivery.objects.filter(id=delivery.id).update(**fields)


def retry_after_of(raw: str | None, moment: datetime) -> timedelta | None:
    """Retry-After as seconds or an HTTP date, at most a day; None if absent or unreadable."""
    if not raw:
        return None
    raw = raw.strip()
    if raw.isdigit():
        return min(timedelta(seconds=int(raw)), MAX_RETRY_AFTER)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return min(max(when - moment, timedelta(0)), MAX_RETRY_AFTER)


def deliveries_sweep() -> float | None:
    """Periodic: send what is due (a wake lost with the broker) and forget old log rows."""
    keep = timezone.now() - timedelta(days=KEEP_DAYS)
    WebhookDelivery.objects.filter(~Q(state=WebhookDelivery.PENDING), created__lt=keep).delete()
    return deliveries_send_due()


def subscription_test(subscription: WebhookSubscription) -> None:
    """Queue a `webhook.test` delivery to the subscription (sent like any other)."""
    events.emit_test(subscription)
