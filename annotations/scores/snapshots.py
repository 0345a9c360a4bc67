"""Leaderboard snapshots: computed once per scores stamp, stored, and read by every page.

Reads never compute what a write could have stored. A leaderboard's statistics (CIs,
significance groups, bounds) change only when scores or judgements change, which moves the
collection's scores stamp (`selectors.scores_state`). So the computed leaderboard is stored
per (collection, k) with the stamp it was computed at, and a read costs the stamp's
aggregates plus one row:

- stamp equal: the stored snapshot is served as is;
- stamp moved, with a Celery broker: workers refresh snapshots after every recomputation
  (coalesced per collection), so a read serves the stored one, marked stale with the time
  it was computed, while the scores are pending or a refresh is queued or running, and
  otherwise as long as it is younger than ``NDCG_LEADERBOARD_STALE_SECONDS``; older than
  that with nothing in hand (a worker down) the read computes it;
- stamp moved, inline (no broker) or no snapshot yet: the read computes, stores and serves it,
  unless the stored one is younger than ``NDCG_LEADERBOARD_MIN_INTERVAL_MS`` (1 s): then it
  is served, marked stale, so a stream of judgements costs at most one computation per
  interval however many pages watch.

The all-pairs significance (randomised Tukey HSD, `scores.significance`) is a second pass,
run after the rows are stored: by the worker as tasks of their own (`scores.refresh_queue`,
`scores.refresh_work`), inline by the next read that finds the rows current, so the first
read after a judgement costs what the rows cost; one leaderboard's passes take at most
``NDCG_SIGNIFICANCE_MAX_SHARE`` of the worker's (or inline, a web process's) time under
steady judging (the letters of the last pass are served meanwhile, marked as
being recomputed). The top-grade bounds are the costly part of the rows, cached per query
(`scores.bounds_cache`).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotations import events
from annotations.models import Collection, LeaderboardSnapshot
from annotations.models.webhooks import LEADERBOARD_CHANGED
from annotations.scores import refresh_pacing, refresh_queue, significance_thread
from annotations.scores.bounds_cache import bounds_cached
from annotations.scores.healing import scores_heal_pending
from annotations.scores.significance import significance_of, significance_refresh
from annotations.scores.snapshot_intervals import known_intervals
from annotations.scores.snapshot_store import snapshot_store
from annotations.selectors.leaderboards import (
    Leaderboard,
    LeaderboardRow,
    RunRef,
    leaderboard_compute,
    leaderboard_runs,
)
from annotations.selectors.scores_state import ScoresState, scores_state

DEFAULT_MIN_INTERVAL_MS = 1000.0
_ROW_FIELDS = (
    "rank", "ndcg", "ci_low", "ci_high", "judged", "ndcg_condensed", "queries",
    "ndcg_top_grade", "pending",
)  # fmt: skip
# What a read loads of a snapshot: not the matrices, which only the significance page reads.
_READ_FIELDS = ("id", "k", "stamp", "rows", "unscored", "computed_at", "significance")


def min_interval_ms() -> float:
    return float(getattr(settings, "NDCG_LEADERBOARD_MIN_INTERVAL_MS", DEFAULT_MIN_INTERVAL_MS))


def served_stale(computed_at: datetime) -> bool:
    """Whether a read serves a snapshot computed at `computed_at` that the scores have moved
    past as it is, marked stale, instead of computing it: with a broker while it is younger
    than NDCG_LEADERBOARD_STALE_SECONDS (a worker refreshes it), and in any mode while it is
    younger than NDCG_LEADERBOARD_MIN_INTERVAL_MS (judgements arriving faster would
    otherwise keep one process computing leaderboards for the pages that watch them)."""
    age = timezone.now() - computed_at
    if settings.CELERY_BROKER_URL and age < timedelta(seconds=refresh_queue.stale_seconds()):
        return True
    return age < timedelta(milliseconds=min_interval_ms())


# --- reading ------------------------------------------------------------------------------


def leaderboard_read(*, collection: Collection, k: int) -> Leaderboard:
    """The leaderboard at k from its stored snapshot, computed and stored first if need be.

    One computation at a time per (collection, k): the read that finds the snapshot behind
    locks its row (PostgreSQL; ``SKIP LOCKED``) and computes; reads meanwhile serve the
    stored snapshot, marked stale, instead of computing the same thing again.
    """
    state = scores_state(collection=collection)
    if scores_heal_pending(collection=collection, state=state):
        state = scores_state(collection=collection)
    snapshot = _snapshot(collection, k)
    if snapshot is None or not _readable(snapshot):
        board = leaderboard_refresh(collection=collection, k=k)
        if settings.CELERY_BROKER_URL:  # the other cutoffs and the passes, on a worker
            refresh_queue.leaderboards_refresh_schedule(collection_id=collection.id)
        return board
    if snapshot.stamp == state.stamp:
        if (snapshot.significance or {}).get("stamp") != snapshot.stamp:
            snapshot = _significance_pass(collection, snapshot)
        return _from_snapshot(collection, snapshot, state)
    if served_stale(snapshot.computed_at) or refresh_coming(collection, state):
        if settings.CELERY_BROKER_URL and not state.pending:
            refresh_queue.leaderboards_refresh_schedule(collection_id=collection.id)
        return _from_snapshot(collection, snapshot, state)
    with transaction.atomic():
        locked = (
            LeaderboardSnapshot.objects.select_for_update(skip_locked=True)
            .filter(pk=snapshot.pk)
            .values_list("stamp", flat=True)
            .first()
        )
        if locked is not None:
            return leaderboard_refresh(collection=collection, k=k)
    return _from_snapshot(collection, snapshot, state)  # another read is computing it


def refresh_coming(collection: Collection, state: ScoresState) -> bool:
    """With a broker, whether the workers have the change in hand, so that a snapshot behind
    the scores, however old, is served (marked stale) rather than computed by the read: the
    scores are pending (their recomputation queues the refresh as it ends; a large import's
    takes minutes) or a rows refresh is queued or running. With neither, a snapshot older
    than NDCG_LEADERBOARD_STALE_SECONDS means a worker is down and the read computes it."""
    if not settings.CELERY_BROKER_URL:
        return False
    return state.pending or refresh_queue.refresh_in_hand(collection_id=collection.id)


def leaderboard_read_complete(*, collection: Collection, k: int) -> Leaderboard:
    """``leaderboard_read`` with its significance pass done for the rows it returns, here if
    need be (reports and the command line, which must not print letters of earlier scores)."""
    board = leaderboard_read(collection=collection, k=k)
    if board.significance_current:
        return board
    if significance_refresh(collection=collection, k=k) is None:
        leaderboard_refresh(collection=collection, k=k)
        significance_refresh(collection=collection, k=k)
    snapshot = _snapshot(collection, k)
    if snapshot is None:
        return board
    return _from_snapshot(collection, snapshot, board.state)


def _snapshot(collection: Collection, k: int) -> LeaderboardSnapshot | None:
    return (
        LeaderboardSnapshot.objects.filter(collection=collection, k=k).only(*_READ_FIELDS).first()
    )


def _significance_pass(
    collection: Collection, snapshot: LeaderboardSnapshot
) -> LeaderboardSnapshot:
    """The rows are current but their significance is not: see `significance_nudge`; if
    this read must run the pass, it does (`significance_pass_run`)."""
    if significance_nudge(collection=collection, k=snapshot.k, rows_at=snapshot.computed_at):
        return snapshot
    significance_pass_run(collection=collection, k=snapshot.k)
    return _snapshot(collection, snapshot.k) or snapshot


def significance_nudge(*, collection: Collection, k: int, rows_at: datetime) -> bool:
    """Set the significance pass of the rows computed at `rows_at` going where it runs; True
    if the read has nothing more to do for it: with a broker it is queued for a worker;
    without one it waits until the scores have been still for
    NDCG_SIGNIFICANCE_QUIET_SECONDS and the last pass's rest is over
    (`refresh_pacing.significance_due`), then this process's significance thread runs it
    (`scores.significance_thread`). False when it is due and that thread is off: the read
    runs it."""
    if settings.CELERY_BROKER_URL:
        refresh_queue.significance_schedule(collection_id=collection.id)
        return True
    if not refresh_pacing.significance_due(
        collection_id=collection.id, k=k, rows_computed_at=rows_at
    ):
        return True
    if significance_thread.significance_thread_on():
        significance_hand_over(collection_id=collection.id, k=k)
        return True
    return False


def significance_hand_over(*, collection_id: int, k: int) -> bool:
    """Hand the significance pass of (collection, k) to this process's significance thread
    (`scores.significance_thread`); True if handed over now."""
    return significance_thread.significance_pass_start(
        collection_id=collection_id, k=k, run=_significance_pass_of
    )


def _significance_pass_of(collection_id: int, k: int) -> None:
    collection = Collection.objects.filter(id=collection_id).first()
    if collection is not None:
        significance_pass_run(collection=collection, k=k)


def significance_pass_run(*, collection: Collection, k: int) -> None:
    """Run the significance pass of (collection, k) here if it is still behind, one at a time
    per (collection, k) across processes (`refresh_pacing.significance_pass_lock`), and
    start its rest."""
    started = time.perf_counter()
    with refresh_pacing.significance_pass_lock(collection_id=collection.id, k=k) as taken:
        if not taken:
            return  # another process is computing it
        computed = significance_refresh(collection=collection, k=k)
        if computed is None:
            leaderboard_refresh(collection=collection, k=k)
            computed = significance_refresh(collection=collection, k=k)
    if computed:  # the rest follows a pass that ran, not a look that found none due
        refresh_pacing.significance_done(
            collection_id=collection.id, k=k, seconds=time.perf_counter() - started
        )


def _readable(snapshot: LeaderboardSnapshot) -> bool:
    """Whether the snapshot has this code's shape (else it is computed again, not misread)."""
    fields = {"run", "name", "owner", *_ROW_FIELDS}
    return all(isinstance(row, dict) and fields <= row.keys() for row in snapshot.rows) and all(
        isinstance(run, list) and len(run) == 3 for run in snapshot.unscored
    )


def _from_snapshot(
    collection: Collection, snapshot: LeaderboardSnapshot, state: ScoresState
) -> Leaderboard:
    significance = significance_of(snapshot.significance or {})
    letters = significance.letters if significance else {}
    below = significance.below_best if significance else {}
    p_best = significance.p_best if significance else {}
    rows = [
        LeaderboardRow(
            run=RunRef(row["run"], row["name"], row["owner"]),
            **{field: row[field] for field in _ROW_FIELDS},
            letters=letters.get(row["run"], ""),
            below_best=below.get(row["run"], False),
            p_best=p_best.get(row["run"]),
        )
        for row in snapshot.rows
    ]
    unscored = [RunRef(*run) for run in snapshot.unscored]
    return Leaderboard(
        collection=collection,
        k=snapshot.k,
        rows=rows,
        unscored=unscored,
        state=state,
        computed_at=snapshot.computed_at,
        computed_stamp=snapshot.stamp,
        significance=significance,
    )


# --- computing ----------------------------------------------------------------------------


def leaderboard_refresh(*, collection: Collection, k: int) -> Leaderboard:
    """Compute the leaderboard at k (bounds from their cache), store it and return it.

    The first pass: rows and the per-query matrix. The CIs of runs whose values did not move
    since the stored snapshot are kept from it (``snapshot_intervals``): a judgement costs
    the resampling of the runs it moved, not of every run. The letters returned and kept are
    those of the last significance pass (marked not current) until ``significance_refresh``
    runs.
    """
    started = time.perf_counter()
    runs = leaderboard_runs(collection=collection, k=k)
    bounds = bounds_cached(collection=collection, k=k, runs=[(run[0], run[3]) for run in runs[0]])
    known = known_intervals(collection=collection, k=k)
    board = leaderboard_compute(
        collection=collection, k=k, bounds=bounds, known=known, held=True, runs=runs
    )
    rows = [
        {
            "run": row.run.id,
            "name": row.run.name,
            "owner": row.run.owner,
            **{field: getattr(row, field) for field in _ROW_FIELDS},
        }
        for row in board.rows
    ]
    matrix = _matrix_bytes(board)
    stored = snapshot_store(
        collection_id=collection.id,
        k=k,
        stamp=board.computed_stamp,
        rows=rows,
        unscored=[[run.id, run.name, run.owner] for run in board.unscored],
        computed_at=board.computed_at or timezone.now(),
        seconds=time.perf_counter() - started,
        query_ids=board.query_ids,
        per_query=matrix,
        same_as_stored_at=known.stamp if known is not None and known.matrix == matrix else None,
    )
    events.emit(
        collection_id=collection.id,
        event_type=LEADERBOARD_CHANGED,
        data=lambda: {
            "collection": collection.slug,
            "k": k,
            "runs": len(rows),
            "leader": rows[0]["name"] if rows else None,
        },
        coalesce_key=f"leaderboard:{k}",
    )
    significance = significance_of(stored)
    if significance is None:
        return board
    return _with_significance(board, significance)


def _matrix_bytes(board: Leaderboard) -> bytes:
    matrix = board.per_query
    if matrix is None or not math.prod(matrix.shape):
        return b""
    return bytes(matrix.astype("<f8", copy=False).tobytes())


def _with_significance(board: Leaderboard, significance: Any) -> Leaderboard:
    rows = [
        replace(
            row,
            letters=significance.letters.get(row.run.id, ""),
            below_best=significance.below_best.get(row.run.id, False),
            p_best=significance.p_best.get(row.run.id),
        )
        for row in board.rows
    ]
    return replace(board, rows=rows, significance=significance)


def leaderboards_refresh_rows(*, collection: Collection) -> int:
    """Refresh every cutoff's rows whose stamp is behind; count the ones computed."""
    stamp = scores_state(collection=collection).stamp
    current = dict(
        LeaderboardSnapshot.objects.filter(collection=collection).values_list("k", "stamp")
    )
    done = 0
    for k in collection.sorted_cutoffs:
        if current.get(k) != stamp:
            leaderboard_refresh(collection=collection, k=k)
            done += 1
    return done


def leaderboards_refresh(*, collection: Collection) -> int:
    """Refresh every cutoff's rows that are behind, then every significance pass that is
    (here, in turn: a worker runs the passes as tasks of their own, `scores.refresh_work`);
    count the rows computed."""
    done = leaderboards_refresh_rows(collection=collection)
    for k in collection.sorted_cutoffs:
        if significance_refresh(collection=collection, k=k) is None:
            leaderboard_refresh(collection=collection, k=k)
            significance_refresh(collection=collection, k=k)
    return done


def statistics_warm() -> int:
    """Make this process's random draws for every query count a stored leaderboard has, so
    its first leaderboard computation is as fast as the next; returns how many sizes."""
    from annotations.metrics import significance_arrays

    sizes: set[object] = set()
    for row in LeaderboardSnapshot.objects.values_list("rows", flat=True):
        sizes.update(entry.get("queries") for entry in row if isinstance(entry, dict))
    counts = sorted(size for size in sizes if isinstance(size, int))
    for size in counts:
        significance_arrays.draws_warm(size)
    return len(counts)
