"""Healing in the embedded (inline) mode: scores a failed recomputation left pending.

With a broker, workers recompute and the periodic sweep (celery beat) heals what a lost task
left pending. Inline there is neither, so the reads that show pending scores heal them: when
the leaderboard or its poll sees the same pending state (the same scores stamp) for
NDCG_INLINE_HEAL_SECONDS, nothing is recomputing it, and the read sweeps the collection's
stale queries and unscored runs. On PostgreSQL a read never waits for a recomputation in
progress (the collection row is tried with SKIP LOCKED first).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction

from annotations.models import Collection
from annotations.scores.rescoring import scores_sweep_stale
from annotations.selectors.scores_state import ScoresState

logger = logging.getLogger(__name__)


def pending_mark_key(collection_id: int) -> str:
    """Cache key of (stamp, first seen) of the pending state a read last saw."""
    return f"scores-pending:{collection_id}"


def scores_heal_pending(*, collection: Collection, state: ScoresState) -> int:
    """Inline mode: recompute what `state` shows pending once it has stood still for the
    heal interval; how many queries and runs were recomputed."""
    if settings.CELERY_BROKER_URL or not state.pending:
        return 0
    interval = settings.NDCG_INLINE_HEAL_SECONDS
    marks = caches["default"]
    key = pending_mark_key(collection.id)
    now = time.time()
    seen = marks.get(key)
    if seen is None or seen[0] != state.stamp:
        marks.set(key, (state.stamp, now), timeout=max(3 * interval, 60))
        if interval > 0:
            return 0  # first sight: a recomputation may be under way
    elif now - seen[1] < interval:
        return 0
    if _being_recomputed(collection):
        return 0
    marks.delete(key)  # the next heal of this state waits a full interval again
    try:
        return scores_sweep_stale(collection=collection)
    except Exception:  # the marks stay; a later read tries again
        logger.exception("healing the pending scores of %s failed", collection.slug)
        return 0


def _being_recomputed(collection: Collection) -> bool:
    """Whether a recomputation holds the collection's lock now (PostgreSQL; never waits)."""
    if connection.vendor != "postgresql":
        return False
    with transaction.atomic():
        free = (
            Collection.objects.select_for_update(skip_locked=True)
            .filter(pk=collection.pk)
            .values_list("pk", flat=True)
        )
        return not free.exists()
