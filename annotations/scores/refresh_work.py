"""What the derived worker runs for a collection's leaderboards (queued by
`scores.refresh_queue`): the rows refresh, then the significance passes, one cutoff each,
then one kept measure each (`scores.measure_significance`)."""

from __future__ import annotations

import logging
import time

from annotations.models import Collection, LeaderboardSnapshot
from annotations.scores import refresh_pacing, refresh_queue, snapshots
from annotations.scores.measure_significance import (
    measure_significance_behind,
    measure_significance_refresh,
    tested_measure,
)
from annotations.scores.significance import significance_refresh
from annotations.selectors.scores_state import scores_state

logger = logging.getLogger(__name__)


def leaderboards_refresh_task(*, collection_id: int) -> int | None:
    """The rows refresh, one at a time per collection: while another worker refreshes the
    collection, or the last refresh's rest is not over (`refresh_pacing`), this one queues
    the refresh again for after it and returns None; otherwise it clears the queued mark
    first (later changes queue again), stores every cutoff's rows that are behind, and
    queues the significance pass if any cutoff's letters are behind its rows, or any kept
    measure's behind the scores."""
    rest = refresh_pacing.refresh_countdown(collection_id=collection_id, countdown=0.0)
    if rest > 0:  # queued while the last refresh ran: wait out its rest (refresh_pacing)
        refresh_queue.forget(refresh_queue.refresh_key(collection_id))
        refresh_queue.leaderboards_refresh_schedule(collection_id=collection_id, delay=rest)
        return None
    running = refresh_queue.running_key(collection_id)
    if not refresh_queue.lock_take(running):
        refresh_queue.forget(refresh_queue.refresh_key(collection_id))
        refresh_queue.leaderboards_refresh_schedule(
            collection_id=collection_id, delay=max(1.0, refresh_queue.refresh_debounce())
        )
        return None
    started = time.perf_counter()
    try:
        refresh_queue.forget(refresh_queue.refresh_key(collection_id))
        collection = Collection.objects.filter(id=collection_id).first()
        if collection is None:
            return 0
        done = snapshots.leaderboards_refresh_rows(collection=collection)
    finally:
        refresh_pacing.refresh_done(
            collection_id=collection_id, seconds=time.perf_counter() - started
        )
        refresh_queue.lock_release(running)
    if significance_due(collection) is not None:
        refresh_queue.significance_schedule(collection_id=collection_id)
    return done


def leaderboards_sweep() -> int:
    """Periodic: queue the rows refresh of every collection whose stored leaderboards are
    missing or behind its scores (not pending: their recomputation queues it), e.g. after a
    refresh lost with the broker, or, its rows current, the significance pass of one whose
    letters are behind (a pass lost likewise); how many were queued."""
    queued = 0
    for collection in Collection.objects.all():
        state = scores_state(collection=collection)
        if state.pending:
            continue
        stored = dict(
            LeaderboardSnapshot.objects.filter(collection=collection).values_list("k", "stamp")
        )
        if any(stored.get(k) != state.stamp for k in collection.sorted_cutoffs):
            refresh_queue.leaderboards_refresh_schedule(collection_id=collection.id)
            queued += 1
        elif significance_due(collection) is not None:
            refresh_queue.significance_schedule(collection_id=collection.id)
            queued += 1
    return queued


def significance_behind(collection: Collection) -> tuple[int, str] | None:
    """The first cutoff (and its rows' stamp) whose significance pass has not run for its
    stored rows; None when every stored snapshot's letters are current."""
    found = (
        LeaderboardSnapshot.objects.filter(collection=collection)
        .values_list("k", "stamp", "significance__stamp")
        .order_by("k")
    )
    cutoffs = set(collection.sorted_cutoffs)
    for k, stamp, significance_stamp in found:
        if k in cutoffs and significance_stamp != stamp:
            return k, stamp
    return None


def significance_due(collection: Collection) -> tuple[int | str, str] | None:
    """The next significance pass to run and the scores stamp it is for: the first cutoff
    whose letters are behind its rows, else the first kept measure whose pass is behind the
    scores (its name); None when every one is current."""
    return significance_behind(collection) or measure_significance_behind(collection)


def significance_task(*, collection_id: int) -> int | str | None:
    """One significance pass, of the first cutoff whose letters are behind its rows, else of
    the first kept measure whose letters are behind the scores, one at a time per
    collection; then queued again while another is behind. Over rows newer than the last
    pass's it first waits out that pass's rest (queued again for its end, returning None),
    so under steady judging the passes take at most `refresh_pacing.SIGNIFICANCE_SHARE` of
    the worker. Returns the cutoff or the measure computed (0: none)."""
    refresh_queue.forget(refresh_queue.significance_key(collection_id))
    collection = Collection.objects.filter(id=collection_id).first()
    due = significance_due(collection) if collection is not None else None
    if collection is None or due is None:
        return 0
    k, stamp = due
    rest = refresh_pacing.significance_rest_left(collection_id=collection_id, stamp=stamp)
    if rest > 0:
        refresh_queue.significance_schedule(collection_id=collection_id, delay=rest)
        return None
    running = refresh_queue.significance_running_key(collection_id)
    if not refresh_queue.lock_take(running):
        refresh_queue.significance_schedule(collection_id=collection_id, delay=1.0)
        return None
    started = time.perf_counter()
    try:
        if isinstance(k, str):
            measure = tested_measure(collection, k)
            if measure is not None:  # else no longer kept: the next due pass is another's
                measure_significance_refresh(collection=collection, measure=measure)
        elif significance_refresh(collection=collection, k=k) is None:
            snapshots.leaderboard_refresh(collection=collection, k=k)  # rows of older code
            significance_refresh(collection=collection, k=k)
    finally:
        refresh_pacing.significance_pass_done(
            collection_id=collection_id, stamp=stamp, seconds=time.perf_counter() - started
        )
        refresh_queue.lock_release(running)
    if significance_due(collection) is not None:
        refresh_queue.significance_schedule(collection_id=collection_id)
    return k
