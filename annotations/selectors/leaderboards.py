"""The leaderboard computed from stored scores: means, bootstrap CIs, judged@k, bounds, and
the per-query matrix its all-pairs significance is computed from (`scores.significance`)."""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Collection as Container
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt
from django.db.models import Max
from django.utils import timezone

from annotations.metrics import ndcg, significance_arrays
from annotations.metrics.ndcg import ordered_mean
from annotations.models import Collection, Run
from annotations.selectors import effective_grades_by_query, top_documents
from annotations.selectors.scores_state import ScoresState, scores_state
from annotations.selectors.stored_scores import (
    RunMean,
    evaluated_queries,
    query_vector,
    run_means_and_ndcg,
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


# --- bounds -------------------------------------------------------------------------------

BoundsByQuery = dict[int, dict[int, float]]  # query id -> run id -> top-grade nDCG@k


def top_grade_bounds_by_query(
    *,
    collection: Collection,
    k: int,
    run_ids: Sequence[int],
    query_ids: Container[int] | None = None,
) -> BoundsByQuery:
    """query id -> run id -> nDCG@k if every unjudged document of the run's top k had the
    scale's highest grade, for the given queries (all evaluated ones when None).

    The what-if is scored like any real judging would be: the promoted documents join the
    query's ideal list too, so the value is the score the run would get had they been judged
    at the top grade. Because the ideal list grows, a run whose unjudged documents sit low in
    an already good top k can score *less* than reported; pages show both values as a range.
    A run with no unjudged document in a query's top k has no entry there: its reported
    value stands. Computed from current judgements, so while scores are pending it can be
    ahead of the stored values.
    """
    top_grade = collection.grades.aggregate(top=Max("value"))["top"]
    bounds: BoundsByQuery = defaultdict(dict)
    if top_grade is None or not run_ids:
        return bounds
    wanted = set(query_ids) if query_ids is not None else None
    # Every run's top k of every query is held until its query's grades stream by: packed
    # 8-byte ids (about 220 bytes a ranking at k = 20), not lists of Python ints (about 780).
    rankings: dict[int, dict[int, array[int]]] = defaultdict(dict)
    for run_id, query_id, documents in top_documents(
        run_ids=list(run_ids), query_ids=wanted, depth=k
    ):
        rankings[query_id][run_id] = array("q", documents)
    # All of a collection's judgements are streamed only when every query is asked for.
    graded = effective_grades_by_query(collection=collection, query_ids=wanted)
    for query_id, grades in graded:
        found = query_top_grade_bounds(
            rankings.pop(query_id, {}), grades, top_grade=top_grade, k=k, scheme=collection.gain
        )
        if found:
            bounds[query_id] = found
    return bounds


def query_top_grade_bounds(
    rankings: Mapping[int, Sequence[int]],
    grades: Mapping[int, int],
    *,
    top_grade: int,
    k: int,
    scheme: str,
) -> dict[int, float]:
    """run id -> one query's top-grade bound (see `top_grade_bounds_by_query`) of every run
    with an unjudged document in its top k.

    The same bits as scoring the run against all of the query's grades with its unjudged
    documents promoted, without copying those grades per run: the promoted ideal list is the
    top grade once per promoted document (no judged grade is higher), then the judged grades
    in descending order, of which IDCG@k reads at most k; the ranking's DCG reads only its
    own documents' grades."""
    best = sorted((grade for grade in grades.values() if grade > 0), reverse=True)[:k]
    found: dict[int, float] = {}
    for run_id, ranking in rankings.items():
        promoted: dict[int, int] = {}
        unjudged = 0
        for doc in ranking:
            grade = grades.get(doc)
            if grade is not None and grade >= 0:  # judged (`ndcg.is_judged`)
                promoted[doc] = grade
            else:
                promoted[doc] = top_grade
                unjudged += 1
        if not unjudged:
            continue
        ideal = ndcg.idcgs_for([top_grade] * unjudged + best, [k], scheme)
        scores = ndcg.query_scores(ranking, promoted, [k], scheme, idcgs=ideal)
        found[run_id] = scores[k].ndcg
    return found


def _top_grade_mean(row: RunMean, vector: dict[int, float], promoted: dict[int, float]) -> float:
    """The run's mean with the promoted values in place of the stored ones, summed as the
    mean itself is (trec_eval's order: the vector is in qid order)."""
    if not promoted:
        return row.ndcg
    return ordered_mean(promoted.get(q, v) for q, v in vector.items())


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

    def interval(self, run_id: int, vector: dict[int, float]) -> tuple[float, float] | None:
        """The kept CI of the run if `vector` (query id -> value, qid order) is the same bits
        over the same queries as the values it was computed from, else None."""
        kept = self.intervals.get(run_id)
        if kept is None or self.values.get(run_id) is None:
            return None
        if len(vector) != len(self.query_ids) or tuple(vector) != self.query_ids:
            return None
        now = np.fromiter(vector.values(), dtype="<f8", count=len(vector))
        if now.tobytes() != self.values[run_id]:
            return None
        if 0.0 in kept and np.signbit(now).any():
            return None
        return kept


def _intervals(
    with_values: Sequence[int],
    vectors: Mapping[int, dict[int, float]],
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
        [list(vectors[run_id].values()) for run_id in missing],
        resamples=BOOTSTRAP_RESAMPLES,
        confidence=CONFIDENCE,
        seed=BOOTSTRAP_SEED,
    )
    intervals.update(zip(missing, computed, strict=True))
    return intervals


# --- leaderboard --------------------------------------------------------------------------


def per_query_matrix(
    evaluated: Sequence[int], vectors: Sequence[dict[int, float]]
) -> tuple[list[int], npt.NDArray[np.float64]]:
    """(query ids, runs x queries nDCG@k) over the queries every run's mean counts: all
    evaluated queries when unanswered ones count 0, else those every run answered."""
    common = [q for q in evaluated if all(q in vector for vector in vectors)]
    matrix = np.array([[vector[q] for q in common] for vector in vectors], dtype=np.float64)
    return common, matrix.reshape(len(vectors), len(common))


def leaderboard_compute(
    *,
    collection: Collection,
    k: int,
    bounds: BoundsByQuery | None = None,
    known: KnownIntervals | None = None,
) -> Leaderboard:
    """Every scored run at k, best first, with CI, judged@k, bounds and the per-query matrix.

    - Mean nDCG@k, judged@k, nDCG'@k and the query count are the run means computed from
      the stored per-query values (``stored_scores.run_means_and_ndcg``).
    - CI: percentile bootstrap of the mean over the run's per-query values (the same queries
      the mean is over), ``BOOTSTRAP_RESAMPLES`` resamples, seed ``BOOTSTRAP_SEED``.
    - ``per_query``: runs (in rank order) x queries (``query_ids``, see
      ``per_query_matrix``), which the significance pass (``scores.significance``) tests
      all pairs on; letters and below-best marks are left empty here.
    - Runs without stored means at k (never scored yet) are listed in ``unscored``.

    CIs come from ``bootstrap_cis`` (all runs in one matrix product), equal bit for bit to
    ``significance.bootstrap_ci`` per run; with ``known`` (the last snapshot's), only the
    runs whose values moved are resampled, the others keep their CI, the same bits. ``bounds``
    (query id -> run id -> value) may be passed in from a cache; by default they are
    computed here. This is the expensive read: pages get it from a stored snapshot.
    """
    state = scores_state(collection=collection)
    # the means and the per-query nDCG their statistics need, in one read
    stored_means, stored = run_means_and_ndcg(collection, k)
    scored_ids = {row.run_id for row in stored_means}
    unscored = [
        RunRef.of(run)
        for run in Run.objects.filter(collection=collection)
        .exclude(id__in=scored_ids)
        .select_related("owner")
        .order_by("name")
    ]
    evaluated = [query_id for query_id, _, _ in evaluated_queries(collection, k)]
    vectors = {
        row.run_id: query_vector(collection, evaluated, stored[row.run_id]) for row in stored_means
    }
    if bounds is None:
        bounds = top_grade_bounds_by_query(
            collection=collection, k=k, run_ids=sorted(scored_ids), query_ids=set(evaluated)
        )
    with_values = [row.run_id for row in stored_means if vectors[row.run_id]]
    intervals = _intervals(with_values, vectors, known)
    promoted_by_run: dict[int, dict[int, float]] = defaultdict(dict)
    for query_id, by_run in bounds.items():
        for run_id, value in by_run.items():
            promoted_by_run[run_id][query_id] = value
    rows: list[LeaderboardRow] = []
    for index, row in enumerate(stored_means):
        ci = intervals.get(row.run_id)
        vector = vectors[row.run_id]
        promoted = {q: v for q, v in promoted_by_run.get(row.run_id, {}).items() if q in vector}
        rows.append(
            LeaderboardRow(
                rank=index + 1,
                run=RunRef.of(row.run),
                ndcg=row.ndcg,
                ci_low=ci[0] if ci else None,
                ci_high=ci[1] if ci else None,
                judged=row.judged,
                ndcg_condensed=row.ndcg_condensed,
                queries=row.queries,
                ndcg_top_grade=_top_grade_mean(row, vector, promoted),
                pending=row.run.scored_at is None,
            )
        )
    query_ids, matrix = per_query_matrix(evaluated, [vectors[row.run_id] for row in stored_means])
    return Leaderboard(
        collection=collection,
        k=k,
        rows=rows,
        unscored=unscored,
        state=state,
        computed_at=timezone.now(),
        computed_stamp=state.stamp,
        query_ids=query_ids,
        per_query=matrix,
    )
