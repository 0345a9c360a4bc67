"""Queueing the derived worker's leaderboard work: the rows refresh and the significance pass.

A collection's leaderboard snapshots are refreshed by the derived worker in
two kinds of task, queued here and run by `scores.refresh_work`:

- the **rows refresh** (``refresh_leaderboards``): every cutoff's rows whose stamp is
  behind the scores, in one task, debounced (`refresh_pacing.DEBOUNCE_SECONDS` after the first
  change of a burst), one at a time per collection and paced under steady judging
  (`refresh_pacing`, on the rows' own time). It is what makes a leaderboard current, so it
  never waits for the statistics;
- the **significance pass** (``refresh_significance``): the randomised Tukey HSD of one
  cutoff whose rows it has not seen, then queued again for the next. One cutoff per task,
  so a rows refresh queued meanwhile on the same worker runs after at most one cutoff's
  pass; one at a time per collection, resting after each pass so that under steady judging
  the passes take at most `refresh_pacing.SIGNIFICANCE_SHARE` of the worker's time. Pages show the
  last pass's letters, marked as being recomputed, meanwhile.

A cache key marks each kind as queued until the worker starts it, so a burst queues one of
each, not one per judgement. Publishing is best effort: with the broker down nothing is
queued, reads serve the stored snapshot marked stale, and the periodic sweep queues the
refresh again (`refresh_work.leaderboards_sweep`).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import transaction

from annotations import publishing
from annotations.scores import refresh_pacing

logger = logging.getLogger(__name__)

# A refresh or a pass holds its collection's lock at most this long (a worker killed
# mid-refresh leaves the lock to expire).
LOCK_SECONDS = 300
# A queued mark outlives its task's countdown by this much: a task lost with the broker
# leaves the mark to expire, and the next change queues the refresh again.
MARK_SECONDS = 30.0


def refresh_key(collection_id: int) -> str:
    """Marks a rows refresh of the collection as queued."""
    return f"ndcg:leaderboards-refresh:{collection_id}"


def running_key(collection_id: int) -> str:
    """Held while a worker refreshes the collection's rows."""
    return f"ndcg:leaderboards-refreshing:{collection_id}"


def significance_key(collection_id: int) -> str:
    """Marks a significance pass of the collection as queued."""
    return f"ndcg:significance-queued:{collection_id}"


def significance_running_key(collection_id: int) -> str:
    """Held while a worker runs a significance pass of the collection."""
    return f"ndcg:significance-running:{collection_id}"


def refresh_debounce() -> float:
    return refresh_pacing.DEBOUNCE_SECONDS


def leaderboards_refresh_schedule(*, collection_id: int, delay: float | None = None) -> None:
    """Queue one rows refresh of the collection's snapshots on a worker, however often asked.

    It starts `refresh_pacing.DEBOUNCE_SECONDS` after the first change of a burst (or after
    `delay`), so the burst's later changes are in it, and not before the last refresh's
    rest is over (`refresh_pacing`); after a pause in the judgements a recomputation's ask
    drops that rest and queues one now, whatever is queued for the rest's end.
    """
    key = refresh_key(collection_id)
    countdown = refresh_debounce() if delay is None else delay
    # The mark outlives the longest wait (debounce, or the last refresh's rest: pacing).
    lifetime = MARK_SECONDS + countdown + refresh_pacing.MAX_REST_SECONDS
    try:
        resumed = delay is None and refresh_pacing.rest_dropped_after_pause(
            collection_id=collection_id
        )
        if resumed:
            caches["coordination"].set(key, 1, timeout=lifetime)
        elif settings.NDCG_COORDINATION_SHARED and not caches["coordination"].add(
            key, 1, timeout=lifetime
        ):
            return
        countdown = refresh_pacing.refresh_countdown(
            collection_id=collection_id, countdown=countdown
        )
        _publish(publishing.REFRESH_LEADERBOARDS, collection_id, countdown)
    except Exception:
        forget(key)
        logger.warning("could not queue a leaderboard refresh for collection %s", collection_id)


def leaderboards_refresh_after_commit(*, collection_id: int) -> None:
    """After a write that moves the scores stamp without a recomputation (a collection
    created, its settings or publication changed, a run deleted): queue the rows refresh
    once the transaction commits, so that reads serve a current snapshot again."""
    transaction.on_commit(lambda: leaderboards_refresh_schedule(collection_id=collection_id))


def significance_schedule(*, collection_id: int, delay: float = 0.0) -> None:
    """Queue one significance pass of the collection on a worker, however often asked (it
    waits out the last pass's rest itself: `refresh_work.significance_task`)."""
    key = significance_key(collection_id)
    lifetime = MARK_SECONDS + delay + refresh_pacing.MAX_REST_SECONDS
    try:
        if settings.NDCG_COORDINATION_SHARED and not caches["coordination"].add(
            key, 1, timeout=lifetime
        ):
            return
        _publish(publishing.REFRESH_SIGNIFICANCE, collection_id, delay)
    except Exception:
        forget(key)
        logger.warning("could not queue a significance pass for collection %s", collection_id)


def refresh_in_hand(*, collection_id: int) -> bool:
    """Whether a rows refresh of the collection is queued or running now (False without
    shared coordination, or when the cache cannot tell)."""
    if not settings.NDCG_COORDINATION_SHARED:
        return False
    try:
        keys = [refresh_key(collection_id), running_key(collection_id)]
        return bool(caches["coordination"].get_many(keys))
    except Exception:
        return False


def _publish(task: publishing.TaskByName, collection_id: int, countdown: float) -> None:
    options: dict[str, Any] = {"retry": False}
    if countdown > 0:
        options["countdown"] = countdown
    task.apply_async((collection_id,), **options)


def forget(key: str) -> None:
    """Clear a mark (best effort: it expires by itself)."""
    try:
        caches["coordination"].delete(key)
    except Exception:
        logger.warning("could not clear %s", key)


def lock_take(key: str) -> bool:
    """Take a per-collection lock; True when taken, or when there is no shared coordination
    (two at once cost time, not data)."""
    if not settings.NDCG_COORDINATION_SHARED:
        return True
    try:
        return bool(caches["coordination"].add(key, 1, timeout=LOCK_SECONDS))
    except Exception:
        logger.warning("could not take %s", key)
        return True


def lock_release(key: str) -> None:
    if settings.NDCG_COORDINATION_SHARED:
        forget(key)
