"""A leaderboard read that never computes a first snapshot in the request while a worker can.

Every cutoff's snapshot (and the top-grade bounds it needs) is computed by the derived worker
after an import, a cutoff change or a rescore (`refresh_queue.leaderboards_refresh_schedule`,
queued by the recomputations). A read that comes before it, at a cutoff with no snapshot
stored yet, queues that refresh (once, however many ask) and answers "being computed" at
once instead of computing for seconds. Without a broker (inline mode) there is no worker:
the read computes the snapshot itself, as before.

Also what reads cost little by: `stored_read` names a leaderboard served as stored (for
the API's rendered body), and `table_stamp` tells the open page when reloading its table
would show something new.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import TextField
from django.db.models.functions import MD5, Cast

from annotations.models import Collection, ImpactSnapshot, LeaderboardSnapshot
from annotations.scores import refresh_pacing, refresh_queue, significance_thread, snapshots
from annotations.scores.bounds_cache import bounds_cached
from annotations.selectors.leaderboards import Leaderboard, leaderboard_runs
from annotations.selectors.score_matrix import score_matrix_held, score_matrix_is_held
from annotations.selectors.scores_state import ScoresState, scores_state

# What a "being computed" answer suggests as the wait before asking again (Retry-After).
RETRY_AFTER_SECONDS = 2


def leaderboard_read_ready(*, collection: Collection, k: int) -> Leaderboard | None:
    """The leaderboard at k (`snapshots.leaderboard_read`), or None while its first snapshot
    is being computed by a worker (queued now if it was not)."""
    if (
        settings.CELERY_BROKER_URL
        and not LeaderboardSnapshot.objects.filter(collection=collection, k=k).exists()
    ):
        refresh_queue.leaderboards_refresh_schedule(collection_id=collection.id, delay=0.0)
        return None
    return snapshots.leaderboard_read(collection=collection, k=k)


@dataclass(frozen=True)
class StoredRead:
    """What a read of a leaderboard would serve as stored: its name (``key``, for a body
    rendered for it) and the scores stamp of its rows."""

    key: str
    stamp: str


def stored_read(*, collection: Collection, k: int) -> StoredRead | None:
    """What a read of the leaderboard at k serves, when it would serve what is stored as it
    is: no score pending, the rows at the current scores stamp, the flip marks (if any) for
    those rows, and their significance either at that stamp too or set going where it runs
    (`snapshots.significance_nudge`: queued, waiting, or on this process's thread; the
    name then holds the earlier letters' time). None when the read has work to do.

    Four small reads, none of them the rows: a page or endpoint can answer from a body it
    rendered under this name without decoding the stored rows (hundreds of runs)."""
    state = scores_state(collection=collection)
    if state.pending:
        return None
    header = (
        LeaderboardSnapshot.objects.filter(collection=collection, k=k)
        .values_list("stamp", "computed_at", "significance__stamp", "significance__computed_at")
        .first()
    )
    if header is None:
        return None
    stamp, computed_at, significance_stamp, significance_at = header
    if stamp != state.stamp:
        return None
    if significance_stamp != stamp and not snapshots.significance_nudge(
        collection=collection, k=k, rows_at=computed_at
    ):
        return None
    flips = (
        ImpactSnapshot.objects.filter(collection=collection, k=k)
        .annotate(digest=MD5(Cast("adjacent", TextField())))
        .values_list("leaderboard_stamp", "digest")
        .first()
    )
    if flips is not None and flips[0] != stamp:
        return None  # the marks trail the rows: the read refreshes them
    marks = flips[1] if flips is not None else "none"
    parts = (
        collection.id, k, stamp, computed_at.timestamp(), significance_stamp, significance_at, marks
    )  # fmt: skip
    _inputs_warm_soon(collection=collection, k=k)
    return StoredRead(key=":".join(map(str, parts)), stamp=stamp)


def _inputs_warm_soon(*, collection: Collection, k: int) -> None:
    """Inline, a process that serves a board as stored computes the next one itself after a
    judgement: unless it holds the inputs to patch, its significance thread reads them now,
    so that computation reads one query's values, not every run's (150 ms at 500 runs)."""
    if (
        settings.CELERY_BROKER_URL
        or not significance_thread.significance_thread_on()
        or score_matrix_is_held(collection_id=collection.id, k=k)
    ):
        return
    significance_thread.inputs_warm_start(collection_id=collection.id, k=k, run=inputs_warm)


def inputs_warm(collection_id: int, k: int) -> None:
    """Read into this process what its next computation of the leaderboard at k patches: the
    score matrix and the top-grade bounds (each kept by the process as it reads them)."""
    collection = Collection.objects.filter(id=collection_id).first()
    if collection is None or k not in collection.sorted_cutoffs:
        return
    scored, _ = leaderboard_runs(collection=collection, k=k)
    bounds_cached(collection=collection, k=k, runs=[(run[0], run[3]) for run in scored])
    score_matrix_held(collection, k, [(run[0], run[3], run[4]) for run in scored])


def table_stamp(*, collection: Collection, k: int, state: ScoresState) -> str:
    """What the open leaderboard page's table should carry as its stamp (``data-stamp``):
        the scores stamp, with ``+significance`` while its significance pass has not run for
        them. The page reloads its table when this differs from its own; while the pass is
        only waiting (for a worker, or inline for the rest or a still moment) nothing changes,
        and inline, once a pass is due, the poll hands it to the web process's significance
    thread (with that thread off, ``+significance-due`` asks for a reload that runs it). A
        snapshot behind the scores that a read would still serve names itself, so that pages
        reload once it is computed again, not at every poll meanwhile."""
    stored = LeaderboardSnapshot.objects.filter(collection=collection, k=k)
    found = stored.values_list("stamp", "computed_at", "significance__stamp").first()
    if found is None:
        return state.stamp
    stamp, computed_at, significance_stamp = found
    if stamp != state.stamp:
        # Behind the scores. While a read would still serve it as it is (a worker is
        # refreshing it, or the last computation is younger than the minimum interval) the
        # page holding it has nothing to reload: its stamp, as the page carries a stale one.
        if not (snapshots.served_stale(computed_at) or snapshots.refresh_coming(collection, state)):
            return state.stamp
        pending = significance_stamp != stamp and not stored.filter(rows=[]).exists()
        return f"{stamp}+significance" if pending else stamp
    if significance_stamp == stamp or stored.filter(rows=[]).exists():
        return state.stamp
    if not settings.CELERY_BROKER_URL and refresh_pacing.significance_due(
        collection_id=collection.id, k=k, rows_computed_at=computed_at
    ):
        if not significance_thread.significance_thread_on():
            return f"{state.stamp}+significance-due"
        # The poll itself hands the pass to the thread; the page reloads once it is done.
        snapshots.significance_hand_over(collection_id=collection.id, k=k)
    return f"{state.stamp}+significance"
