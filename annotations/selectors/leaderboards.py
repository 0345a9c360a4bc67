"""The leaderboard computed from stored scores: means, bootstrap CIs, judged@k, bounds, and
the per-query matrix its all-pairs significance is computed from (`scores.significance`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from django.utils import timezone

from annotations.formats import score_bytes
from annotations.metrics import significance_arrays
from annotations.metrics.ndcg_arrays import ordered_means
from annotations.models import Collection, Run
from annotations.selectors.score_matrix import (
    ScoreMatrix,
    matrix_means,
    score_matrix_held,
    score_matrix_read,
)
from annotations.selectors.scores_state import ScoresState, scores_state
from annotations.selectors.stored_scores import evaluated_queries
from annotations.selectors.top_grade_bounds import (
    BoundArrays,
    bound_arrays,
    top_grade_bounds_by_query,
)

# Fixed so that a page reload never moves an interval or a group by chance alone.
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
ALPHA = 0.05
HSD_PERMUTATIONS = 10_000
HSD_SEED = 0


@dataclass(frozen=True)
class RunRef:
    """What a leaderboard shows of a run (kept in the stored snapshot: no run rows to read)."""

    id: int
    name: str
    owner: str | None  # the owner's username

    @classmethod
    def of(cls, run: Run) -> RunRef:
        return cls(run.id, run.name, run.owner.get_username() if run.owner else None)


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    run: RunRef
    ndcg: float
    ci_low: float | None
    ci_high: float | None
    judged: float
    ndcg_condensed: float
    queries: int
    # nDCG@k if every unjudged document of the run's top k had the scale's highest grade.
    ndcg_top_grade: float
    pending: bool
    # From the all-pairs significance pass (``Significance``): the run's compact letters
    # (runs sharing a letter are not significantly different), whether it is significantly
    # below the best run, and the HSD-adjusted p-value against the best run. Empty/None
    # until that pass has run for the run.
    letters: str = ""
    below_best: bool = False
    p_best: float | None = None

    @property
    def best_case_below(self) -> bool:
        """The best case is below the reported score: the promoted documents joined the
        ideal list and raised it more than the run's own gain."""
        return self.ndcg_top_grade < self.ndcg


@dataclass(frozen=True)
class Significance:
    """The randomised Tukey HSD over every pair of a leaderboard's runs, as last computed.

    ``stamp`` is the scores stamp of the rows it was computed from; it may trail the
    leaderboard's while the pass runs again (``current``). ``run_ids`` is the order of the
    p-value matrix (rank order at that stamp); ``critical`` is the half-width of the
    simultaneous intervals (a pair whose mean difference exceeds it is significant).
    """

    stamp: str
    alpha: float
    permutations: int
    seed: int
    queries: int
    critical: float | None
    seconds: float
    computed_at: datetime | None
    run_ids: tuple[int, ...]
    letters: dict[int, str]
    below_best: dict[int, bool]
    p_best: dict[int, float]
    reduced: bool = False  # fewer permutations than HSD_PERMUTATIONS, to bound its time
    test: str = "randomised Tukey HSD over queries"


@dataclass(frozen=True)
class Leaderboard:
    collection: Collection
    k: int
    rows: list[LeaderboardRow]
    unscored: list[RunRef]
    state: ScoresState
    # When the statistics were computed, and the scores stamp they were computed at: a stored
    # snapshot may trail the live state (``stale``) while a worker refreshes it.
    computed_at: datetime | None = None
    computed_stamp: str = ""
    resamples: int = BOOTSTRAP_RESAMPLES
    bootstrap_seed: int = BOOTSTRAP_SEED
    confidence: float = CONFIDENCE
    alpha: float = ALPHA
    significance: Significance | None = None
    # The per-query matrix (rows: ``rows`` in order; columns: ``query_ids``) the significance
    # pass tests; only on a freshly computed leaderboard, not on one read from a snapshot.
    query_ids: list[int] = field(default_factory=list)
    per_query: npt.NDArray[np.float64] | None = None

    @property
    def stale(self) -> bool:
        return bool(self.computed_stamp) and self.computed_stamp != self.state.stamp

    @property
    def significance_current(self) -> bool:
        """Whether the letters are those of the rows shown (else a later pass brings them)."""
        return self.significance is not None and self.significance.stamp == self.computed_stamp


# A run's values its mean counts: (query ids in qid order, nDCG@k of each).
RunVector = tuple[Sequence[int], npt.NDArray[np.float64]]


# --- intervals kept from an earlier computation ------------------------------------------


@dataclass(frozen=True)
class KnownIntervals:
    """Bootstrap CIs computed earlier, each with the exact values it was computed from.

    A run's CI is a function of its per-query values (their bits, in qid order) and of the
    fixed ``BOOTSTRAP_RESAMPLES``, ``CONFIDENCE`` and ``BOOTSTRAP_SEED`` alone: the draws
    depend on the query count and the seed only, and ``bootstrap_cis`` equals
    ``significance.bootstrap_ci`` run by run, whatever the other runs. So a run whose values
    are the same bits over the same queries gets the same CI, and it is taken from here
    instead of being resampled again. A judgement moves one query's values of the runs that
    retrieved the document (or of every run, if it moves the query's ideal list): the rest
    keep their CIs.

    ``values`` holds, per run, its values over ``query_ids`` (float64 bytes) as they were
    when ``intervals`` were computed. A stored zero bound may have lost its sign (jsonb keeps
    no -0.0), so it is kept only for values with no sign bit set: the means of such values,
    and the quantiles between them, are never -0.0.
    """

    query_ids: tuple[int, ...]
    values: Mapping[int, bytes]
    intervals: Mapping[int, tuple[float, float]]
    matrix: bytes = b""  # the stored matrix they were taken from, whole
    stamp: str = ""  # the stamp it was stored with

    def interval(self, run_id: int, vector: RunVector) -> tuple[float, float] | None:
        """The kept CI of the run if `vector` (its query ids in qid order, and its values) is
        the same bits over the same queries as the values it was computed from, else None."""
        kept = self.intervals.get(run_id)
        if kept is None or self.values.get(run_id) is None:
            return None
        query_ids, now = vector
        if len(query_ids) != len(self.query_ids) or tuple(query_ids) != self.query_ids:
            return None
        if np.ascontiguousarray(now, dtype="<f8").tobytes() != self.values[run_id]:
            return None
        if 0.0 in kept and np.signbit(now).any():
            return None
        return kept


def intervals_kept(
    with_values: Sequence[int],
    vectors: Mapping[int, RunVector],
    known: KnownIntervals | None,
) -> dict[int, tuple[float, float]]:
    """run id -> bootstrap CI of its values: kept from `known` where its values did not move,
    the others computed at once (``bootstrap_cis``)."""
    intervals: dict[int, tuple[float, float]] = {}
    if known is not None:
        for run_id in with_values:
            kept = known.interval(run_id, vectors[run_id])
            if kept is not None:
                intervals[run_id] = kept
    missing = [run_id for run_id in with_values if run_id not in intervals]
    computed = significance_arrays.bootstrap_cis(
        [vectors[run_id][1] for run_id in missing],
        resamples=BOOTSTRAP_RESAMPLES,
        confidence=CONFIDENCE,
        seed=BOOTSTRAP_SEED,
    )
    intervals.update(zip(missing, computed, strict=True))
    return intervals


# --- leaderboard --------------------------------------------------------------------------


def _promoted(matrix: ScoreMatrix, bounds: BoundArrays) -> npt.NDArray[np.float64]:
    """(runs, queries) nDCG@k with each run's top-grade bound in place of its stored value
    where it has one (`top_grade_bounds_by_query`)."""
    promoted = matrix.values[:, 0, :].copy()
    run_ids = np.asarray(matrix.run_ids, dtype=np.int64)  # ascending
    column = {query_id: q for q, query_id in enumerate(matrix.query_ids)}
    for query_id, (runs, values) in bounds.items():
        q = column.get(query_id)
        if q is None or not len(run_ids):
            continue
        rows = np.minimum(np.searchsorted(run_ids, runs), len(run_ids) - 1)
        found = run_ids[rows] == runs
        promoted[rows[found], q] = values[found]
    return promoted


def leaderboard_compute(
    *,
    collection: Collection,
    k: int,
    bounds: BoundArrays | None = None,
    known: KnownIntervals | None = None,
    held: bool = False,
    runs: LeaderboardRuns | None = None,
) -> Leaderboard:
    """Every scored run at k, best first, with CI, judged@k, bounds and the per-query matrix.

    - Mean nDCG@k, judged@k, nDCG'@k and the query count are the run means computed from
      the stored per-query values in trec_eval's order (``score_matrix.matrix_means``).
    - CI: percentile bootstrap of the mean over the run's per-query values (the same queries
      the mean is over), ``BOOTSTRAP_RESAMPLES`` resamples, seed ``BOOTSTRAP_SEED``.
    - ``per_query``: runs (in rank order) x queries (``query_ids``: all evaluated queries
      when unanswered ones count 0, else those every run answered), which the significance
      pass (``scores.significance``) tests all pairs on; letters and below-best marks are
      left empty here.
    - Runs without stored means at k (never scored yet) are listed in ``unscored``.

    CIs come from ``bootstrap_cis`` (all runs in one matrix product), equal bit for bit to
    ``significance.bootstrap_ci`` per run; with ``known`` (the last snapshot's), only the
    runs whose values moved are resampled, the others keep their CI, the same bits. ``bounds``
    (query id -> run ids, values) may be passed in from a cache; by default they are
    computed here. With ``held`` the stored values come from the matrix this process holds,
    read again only where they moved (``score_matrix_held``). This is the expensive read:
    pages get it from a stored snapshot.
    """
    state = scores_state(collection=collection)
    scored, unscored = runs if runs is not None else leaderboard_runs(collection=collection, k=k)
    if held and k in collection.sorted_cutoffs:
        matrix = score_matrix_held(collection, k, [(run[0], run[3], run[4]) for run in scored])
    else:
        evaluated = (
            [query_id for query_id, _, _ in evaluated_queries(collection, k)] if scored else []
        )
        matrix = score_matrix_read(collection, k, [run[0] for run in scored], evaluated)
    if bounds is None:
        bounds = bound_arrays(
            top_grade_bounds_by_query(
                collection=collection,
                k=k,
                run_ids=list(matrix.run_ids),
                query_ids=set(matrix.query_ids),
            )
        )
    zero = collection.missing_queries == "zero"
    means, counts = matrix_means(matrix, zero=zero)
    mask = np.ones(matrix.answered.shape, dtype=bool) if zero else matrix.answered
    top_grade = ordered_means(_promoted(matrix, bounds), mask)
    order = sorted(range(len(scored)), key=lambda r: (-float(means[r, 0]), scored[r][1]))
    every = np.asarray(matrix.query_ids, dtype=np.int64)
    vectors: dict[int, RunVector] = {}
    for r, run in enumerate(scored):
        if zero:
            vectors[run[0]] = (matrix.query_ids, matrix.values[r, 0, :])
        else:
            vectors[run[0]] = (every[mask[r]].tolist(), matrix.values[r, 0, mask[r]])
    with_values = [scored[r][0] for r in order if counts[r]]
    intervals = intervals_kept(with_values, vectors, known)
    rows: list[LeaderboardRow] = []
    for rank, r in enumerate(order, start=1):
        run_id, name, owner, _, scored_at = scored[r]
        ci = intervals.get(run_id)
        ndcg, condensed, judged = means[r].tolist()
        rows.append(
            LeaderboardRow(
                rank=rank,
                run=RunRef(run_id, name, owner),
                ndcg=ndcg,
                ci_low=ci[0] if ci else None,
                ci_high=ci[1] if ci else None,
                judged=judged,
                ndcg_condensed=condensed,
                queries=int(counts[r]),
                ndcg_top_grade=float(top_grade[r]),
                pending=scored_at is None,
            )
        )
    common = np.all(mask, axis=0) if len(scored) else np.ones(len(matrix.query_ids), dtype=bool)
    per_query = (
        matrix.values[order][:, 0, :][:, common] if order else np.zeros((0, int(common.sum())))
    )
    return Leaderboard(
        collection=collection,
        k=k,
        rows=rows,
        unscored=unscored,
        state=state,
        computed_at=timezone.now(),
        computed_stamp=state.stamp,
        query_ids=every[common].tolist(),
        per_query=np.ascontiguousarray(per_query, dtype=np.float64),
    )


# (id, name, owner's username, updated, scored_at) of a run.
RunFacts = tuple[int, str, str | None, datetime, datetime | None]
# The runs with stored scores in the collection's current layout (by id), and the others.
LeaderboardRuns = tuple[list[RunFacts], list[RunRef]]


def leaderboard_runs(*, collection: Collection, k: int) -> LeaderboardRuns:
    """The runs a leaderboard at k ranks (by id) and those it lists as unscored (by name), in
    one read."""
    ks = collection.sorted_cutoffs
    layout = score_bytes.layout(ks) if k in ks else None
    runs = list(
        Run.objects.filter(collection=collection)
        .order_by("name", "id")
        .values_list("id", "name", "owner__username", "updated", "scored_at", "run_scores__cutoffs")
    )
    scored: list[RunFacts] = sorted(
        (run[:5] for run in runs if layout is not None and run[5] == layout), key=_first
    )
    unscored = [
        RunRef(run[0], run[1], run[2]) for run in runs if layout is None or run[5] != layout
    ]
    return scored, unscored


def _first(run: tuple[Any, ...]) -> Any:
    return run[0]
