"""A search system's history: its runs in fetch order with their means and bootstrap CIs (also
on a stored qrels version), and what changed between two of its runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from annotations.metrics import significance_arrays
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.metrics.ndcg import ordered_mean
from annotations.models import Collection, Document, QrelsVersion, Query, Run, SearchSystem
from annotations.selectors.compare_page import comparison_cached
from annotations.selectors.comparisons import Comparison, ComparisonRow
from annotations.selectors.judging import pool_candidates
from annotations.selectors.leaderboards import (
    ALPHA,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
)
from annotations.selectors.measure_values import runs_measure_rows
from annotations.selectors.rankings import top_documents
from annotations.selectors.scores_state import scores_state
from annotations.selectors.stored_scores import evaluated_queries, query_vector, stored_ndcg
from annotations.selectors.versions import Mark, leaderboard_as_of

# The runs a history shows and charts: the latest ones (a run a day is four months).
HISTORY_RUNS = 120
# The queries "what changed" lists by how much they moved, and the documents per query.
MOVED_SHOWN = 20


def main_cutoff(collection: Collection) -> int:
    """The k of the collection's main measure, nDCG@k: its first (smallest) cutoff, the one
    a regression is judged on."""
    return collection.sorted_cutoffs[0]


def system_runs(system: SearchSystem, *, limit: int = HISTORY_RUNS) -> list[Run]:
    """The system's latest runs (at most `limit`), oldest first: the order they were fetched."""
    latest = Run.objects.filter(system=system).order_by("-created", "-id")[:limit]
    return list(reversed(latest))


def previous_run(run: Run) -> Run | None:
    """The run its system stored just before `run`, if any."""
    if run.system_id is None:
        return None
    return (
        Run.objects.filter(system_id=run.system_id, created__lte=run.created, id__lt=run.id)
        .order_by("-created", "-id")
        .first()
    )


@dataclass(frozen=True)
class VersionMean:
    """A run's mean nDCG@k on a qrels version's judgements, with its bootstrap CI."""

    mean: float
    ci_low: float | None
    ci_high: float | None
    queries: int


@dataclass(frozen=True)
class HistoryPoint:
    """One run of the history: its mean over the queries that count, and the percentile
    bootstrap CI of that mean (the leaderboard's resamples and seed); None while pending.
    `on_version`: the same on the qrels version asked for (None without one)."""

    run: Run
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    queries: int
    on_version: VersionMean | None = None

    @property
    def fetched(self) -> datetime:
        return self.run.created


@dataclass(frozen=True)
class History:
    system: SearchSystem
    measure: str  # "nDCG@10", or a kept measure in ir_measures' syntax
    k: int | None  # the cutoff of nDCG@k; None for a kept measure
    points: list[HistoryPoint]
    confidence: float
    pending: bool  # some run's scores, or some query's, are still being computed
    version: QrelsVersion | None = None  # the qrels version of each point's `on_version`

    @property
    def scored(self) -> list[HistoryPoint]:
        return [point for point in self.points if point.mean is not None]


def _ndcg_vectors(
    collection: Collection, runs: Sequence[Run], k: int
) -> dict[int, tuple[list[float], float]]:
    """run id -> (its nDCG@k over the queries that count, in qid order; trec_eval's mean)."""
    ids = [query_id for query_id, _, _ in evaluated_queries(collection, k)]
    stored = stored_ndcg(collection, [run.id for run in runs], k)
    out: dict[int, tuple[list[float], float]] = {}
    for run in runs:
        if run.scored_at is None:
            continue
        # A scored run without stored rows has no evaluated query it answered.
        values = list(query_vector(collection, ids, stored.get(run.id, {})).values())
        out[run.id] = (values, ordered_mean(values))
    return out


def _measure_vectors(
    collection: Collection, runs: Sequence[Run], measure: Measure
) -> dict[int, tuple[list[float], float]]:
    """run id -> (its values of a kept measure over the queries that count; its `all`)."""
    out: dict[int, tuple[list[float], float]] = {}
    for run_id, (rows, mean) in runs_measure_rows(collection, measure, runs).items():
        out[run_id] = ([value for _, value, _ in rows], mean.value)
    return out


def _intervals(
    vectors: dict[int, tuple[list[float], float]],
) -> dict[int, tuple[float, float]]:
    """run id -> the bootstrap CI of its mean (the leaderboard's), for runs with values."""
    with_values = [run_id for run_id, (values, _) in vectors.items() if values]
    found = significance_arrays.bootstrap_cis(
        [vectors[run_id][0] for run_id in with_values],
        resamples=BOOTSTRAP_RESAMPLES,
        confidence=CONFIDENCE,
        seed=BOOTSTRAP_SEED,
    )
    return dict(zip(with_values, found, strict=True))


def _version_means(
    collection: Collection, runs: Sequence[Run], k: int, version: QrelsVersion
) -> dict[int, VersionMean]:
    """run id -> its mean nDCG@k and CI on the version's qrels (the versions' leaderboard
    as of the version: the runs as they are now, the qrels and rules as they were)."""
    board = leaderboard_as_of(collection=collection, mark=Mark.of_version(version), k=k)
    rows = {row.run: row for row in board.rows}
    vectors = {
        run.id: (list(rows[run.name].per_query.values()), rows[run.name].ndcg)
        for run in runs
        if run.name in rows
    }
    intervals = _intervals(vectors)
    found = {}
    for run_id, (values, mean) in vectors.items():
        low, high = intervals.get(run_id, (None, None))
        found[run_id] = VersionMean(mean, low, high, len(values))
    return found


def system_history(
    *,
    system: SearchSystem,
    k: int,
    measure: Measure | None = None,
    version: QrelsVersion | None = None,
) -> History:
    """The system's runs in fetch order with their mean nDCG@k (or the mean of a measure the
    collection keeps) and its bootstrap CI over the queries; a run with no evaluated query
    has its mean (0 in zero mode) and no interval. With `version` (nDCG@k only: a version
    is scored by it), each run's mean and CI on that version's qrels too."""
    collection = system.collection
    runs = system_runs(system)
    if measure is None:
        vectors = _ndcg_vectors(collection, runs, k)
        label = f"nDCG@{k}"
    else:
        vectors = _measure_vectors(collection, runs, measure)
        label = format_measure(measure)
    intervals = _intervals(vectors)
    on_version = (
        _version_means(collection, runs, k, version)
        if version is not None and measure is None
        else {}
    )
    points = []
    for run in runs:
        values, mean = vectors.get(run.id, ([], None))  # type: ignore[arg-type]
        low, high = intervals.get(run.id, (None, None))
        points.append(HistoryPoint(run, mean, low, high, len(values), on_version.get(run.id)))
    pending = scores_state(collection=collection).pending or any(
        point.mean is None for point in points
    )
    return History(
        system=system,
        measure=label,
        k=k if measure is None else None,
        points=points,
        confidence=CONFIDENCE,
        pending=pending,
        version=version if measure is None else None,
    )


@dataclass(frozen=True)
class TopChange:
    """A query's top k in the old run and the new: the documents that entered and left."""

    qid: str
    entered: list[str]
    left: list[str]


@dataclass(frozen=True)
class Change:
    """What changed from `old` to `new` (two runs of one system): the paired comparison
    (new - old, the compare page's) on nDCG@k or a kept measure, the queries that moved most
    on it, the documents that entered or left each query's top k, and the new run's
    unjudged top-k pairs."""

    comparison: Comparison
    alpha: float
    moved: list[ComparisonRow]
    tops: list[TopChange]
    queries_changed: int  # queries whose top k changed
    unjudged: int  # (query, document) pairs of the new run's top k nobody judged

    @property
    def new(self) -> Run:
        return self.comparison.a

    @property
    def old(self) -> Run:
        return self.comparison.b

    @property
    def significant(self) -> bool:
        p = self.comparison.p_value
        return p is not None and p < self.alpha

    @property
    def regressed(self) -> bool:
        difference = self.comparison.mean_difference
        return self.significant and difference is not None and difference < 0


def _tops(old: Run, new: Run, k: int) -> list[TopChange]:
    """Per query either run answered, the documents of its top k that entered or left,
    in rank order (those of the new run, then those the old one had); unchanged ones left out."""
    tops: dict[int, dict[int, list[int]]] = defaultdict(dict)
    for run_id, query_id, documents in top_documents(run_ids=[old.id, new.id], depth=k):
        tops[query_id][run_id] = documents
    changes: list[tuple[int, list[int], list[int]]] = []
    for query_id, by_run in tops.items():
        before, after = by_run.get(old.id, []), by_run.get(new.id, [])
        entered = [doc for doc in after if doc not in set(before)]
        left = [doc for doc in before if doc not in set(after)]
        if entered or left:
            changes.append((query_id, entered, left))
    if not changes:
        return []
    wanted = {doc for _, entered, left in changes for doc in (*entered, *left)}
    docnos = dict(Document.objects.filter(id__in=wanted).values_list("id", "docno"))
    qids = dict(
        Query.objects.filter(id__in=[query_id for query_id, _, _ in changes]).values_list(
            "id", "qid"
        )
    )
    found = [
        TopChange(qids[q], [docnos[d] for d in entered], [docnos[d] for d in left])
        for q, entered, left in changes
    ]
    return sorted(found, key=lambda change: change.qid)


def runs_changed(
    *, old: Run, new: Run, k: int, measure: Measure | None = None, shown: int = MOVED_SHOWN
) -> Change:
    """What changed from `old` to `new` (see `Change`), compared on nDCG@k or on `measure`
    (one the collection keeps; the top k and its unjudged pairs stay at k): the queries that
    moved most are the `shown` of largest |new - old| (then by qid), those that did not move
    left out."""
    comparison = comparison_cached(a=new, b=old, k=k, measure=measure)
    moving = [row for row in comparison.rows if row.difference != 0.0]
    moved = sorted(moving, key=lambda row: (-abs(row.difference), row.qid))[:shown]
    tops = _tops(old, new, k)
    unjudged = len(pool_candidates(runs=[new], queries=[], depth=k))
    return Change(comparison, ALPHA, moved, tops, len(tops), unjudged)
