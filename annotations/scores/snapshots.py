"""Leaderboard snapshots: computed once per scores stamp by a worker, stored, read by every page.

A leaderboard's statistics (CIs, significance groups, bounds) change only when scores or
judgements change, which moves the collection's scores stamp (`selectors.scores_state`). A
worker computes the leaderboard after every recomputation (`scores.refresh_queue`, coalesced
per collection) and stores it per (collection, k) with the stamp it was computed at. A read
serves what is stored, one row, and never computes, stores or queues anything:

- stamp equal: the stored snapshot is served as is;
- stamp moved: the stored snapshot is served, marked stale (``Leaderboard.stale``) with the
  time it was computed, until the worker stores the next one;
- no snapshot yet: nothing to serve; the page or endpoint answers "being computed".

The all-pairs significance (randomised Tukey HSD, `scores.significance`) is a second pass
the worker runs after the rows are stored, as tasks of their own (`scores.refresh_work`);
one leaderboard's passes take at most ``refresh_pacing.SIGNIFICANCE_SHARE`` of the worker's
time under steady judging, and the letters of the last pass are served meanwhile, marked as being
recomputed. The top-grade bounds are the costly part of the rows, cached per query
(`scores.bounds_cache`).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from django.utils import timezone

from annotations import events
from annotations.models import Collection, LeaderboardSnapshot
from annotations.models.webhooks import LEADERBOARD_CHANGED
from annotations.scores.bounds_cache import bounds_cached
from annotations.scores.measure_significance import (
    measure_significance_refresh,
    tested_measures,
)
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

_ROW_FIELDS = (
    "rank", "ndcg", "ci_low", "ci_high", "judged", "ndcg_condensed", "queries",
    "ndcg_top_grade", "pending",
)  # fmt: skip
# What a read loads of a snapshot: not the matrices, which only the significance page reads.
_READ_FIELDS = ("id", "k", "stamp", "rows", "unscored", "computed_at", "significance")


# --- reading ------------------------------------------------------------------------------


def leaderboard_read(*, collection: Collection, k: int) -> Leaderboard | None:
    """The leaderboard at k as stored, marked stale while the scores have moved past it;
    None before a worker has stored the first one (or one of this code's shape)."""
    snapshot = _snapshot(collection, k)
    if snapshot is None or not _readable(snapshot):
        return None
    return _from_snapshot(collection, snapshot, scores_state(collection=collection))


def leaderboard_current(*, collection: Collection, k: int) -> Leaderboard:
    """The leaderboard at k at the current scores: the stored one, or computed and stored
    here if it is behind (workers and commands, never a request)."""
    state = scores_state(collection=collection)
    snapshot = _snapshot(collection, k)
    if snapshot is not None and _readable(snapshot) and snapshot.stamp == state.stamp:
        return _from_snapshot(collection, snapshot, state)
    return leaderboard_refresh(collection=collection, k=k)


def leaderboard_complete(*, collection: Collection, k: int) -> Leaderboard:
    """``leaderboard_current`` with its significance pass done for the rows it returns, here
    if need be (the command line, which must not print letters of earlier scores)."""
    board = leaderboard_current(collection=collection, k=k)
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
    before = (
        LeaderboardSnapshot.objects.filter(collection_id=collection.id, k=k)
        .values_list("per_query", "rows")
        .first()
    )
    moved = before is None or (bytes(before[0]), [row["name"] for row in before[1] or []]) != (
        matrix,
        [row["name"] for row in rows],
    )
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
    if moved:  # its values or its runs, not only its stamp
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
            delay_seconds=events.LEADERBOARD_EVENT_SECONDS,
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
    """Refresh every cutoff's rows whose stamp is behind, or whose shape is not this code's
    (reads serve neither as current); count the ones computed."""
    stamp = scores_state(collection=collection).stamp
    done = 0
    for k in collection.sorted_cutoffs:
        snapshot = _snapshot(collection, k)
        if snapshot is None or snapshot.stamp != stamp or not _readable(snapshot):
            leaderboard_refresh(collection=collection, k=k)
            done += 1
    return done


def leaderboards_refresh(*, collection: Collection) -> int:
    """Refresh every cutoff's rows that are behind, then every significance pass that is,
    the kept measures' too (here, in turn: a worker runs the passes as tasks of their own,
    `scores.refresh_work`); count the rows computed."""
    done = leaderboards_refresh_rows(collection=collection)
    for k in collection.sorted_cutoffs:
        if significance_refresh(collection=collection, k=k) is None:
            leaderboard_refresh(collection=collection, k=k)
            significance_refresh(collection=collection, k=k)
    for measure in tested_measures(collection):
        measure_significance_refresh(collection=collection, measure=measure)
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
