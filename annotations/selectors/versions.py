"""Qrels versions read back: the effective qrels of a version or of a past time, replayed
from the judgement history, and scored; and the difference between two versions.

Replaying: for each (query, document) the latest history row of each assessor up to the
mark gives that assessor's grade (a deleted judgement has none), the latest adjudication
row its adjudicated grade; the pair's effective grade is the adjudication if the pair still
has a grade, else the assessors' grades combined by the rule the collection had when the
version was tagged, machine judges' grades counted by the version's rule for them. Rows
of documents or queries deleted since are gone with them.
Scoring uses the runs as they are now (a version fixes the qrels, not the systems), with
the version's gain and missing-query rule and the same scoring code as the stored scores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache

from annotations import selectors
from annotations.formats import trec
from annotations.metrics import measures, ndcg, rank_correlation
from annotations.metrics.machine_grades import assessed_pair_grade
from annotations.metrics.measure_names import format_measure, trec_name
from annotations.metrics.measures import Measure
from annotations.metrics.ndcg import ordered_mean
from annotations.models import Collection, JudgementHistory, QrelsVersion, Run
from annotations.selectors.grades import machine_accounts

ADJUDICATION = "adjudication"
HISTORY_FIELDS = (
    "query_id",
    "query__qid",
    "document_id",
    "document__docno",
    "assessor_id",
    "source",
    "new_grade",
)


@dataclass(frozen=True)
class Mark:
    """Where to stop replaying: a version, or a moment."""

    history_id: int | None = None
    at: datetime | None = None
    aggregation: str = "median"
    machine_grades: str = "assessor"
    gain: str = "linear"
    missing_queries: str = "zero"
    label: str = ""

    @classmethod
    def of_version(cls, version: QrelsVersion) -> Mark:
        return cls(
            history_id=version.history_id,
            aggregation=version.aggregation,
            machine_grades=version.machine_grades,
            gain=version.gain,
            missing_queries=version.missing_queries,
            label=version.name,
        )

    @classmethod
    def of_time(cls, collection: Collection, at: datetime) -> Mark:
        return cls(
            at=at,
            aggregation=collection.aggregation,
            machine_grades=collection.machine_grades,
            gain=collection.gain,
            missing_queries=collection.missing_queries,
            label=at.isoformat(),
        )

    @property
    def key(self) -> str:
        at = self.at.isoformat() if self.at else ""
        return f"{self.history_id}:{at}:{self.aggregation}:{self.machine_grades}"


def qrels_as_of(*, collection: Collection, mark: Mark) -> Iterator[tuple[int, str, int, str, int]]:
    """(query id, qid, document id, docno, effective grade) of every pair judged at the
    mark, ordered by qid then docno (the order of the current qrels export)."""
    rows = JudgementHistory.objects.filter(query__collection=collection)
    if mark.history_id is not None:
        rows = rows.filter(id__lte=mark.history_id)
    if mark.at is not None:
        rows = rows.filter(changed_at__lte=mark.at)
    stream = (
        rows.order_by("query__qid", "document__docno", "id")
        .values_list(*HISTORY_FIELDS)
        .iterator(chunk_size=20000)
    )
    machines = machine_accounts(collection)
    pair: tuple[int, str, int, str] | None = None
    grades: dict[int, int | None] = {}
    adjudicated: int | None = None
    for query_id, qid, document_id, docno, assessor_id, source, new_grade in stream:
        if pair is None or (pair[0], pair[2]) != (query_id, document_id):
            if pair is not None:
                yield from _effective(pair, grades, adjudicated, machines, mark)
            pair, grades, adjudicated = (query_id, qid, document_id, docno), {}, None
        if source == ADJUDICATION:
            adjudicated = new_grade
        else:
            grades[assessor_id] = new_grade
    if pair is not None:
        yield from _effective(pair, grades, adjudicated, machines, mark)


def _effective(
    pair: tuple[int, str, int, str],
    grades: dict[int, int | None],
    adjudicated: int | None,
    machines: set[int],
    mark: Mark,
) -> Iterator[tuple[int, str, int, str, int]]:
    # Nothing held: every judgement of the pair was deleted by then.
    grade = assessed_pair_grade(
        ((a, grade) for a, grade in grades.items() if grade is not None),
        machines,
        adjudicated,
        aggregation=mark.aggregation,
        rule=mark.machine_grades,
    )
    if grade is not None:
        yield (*pair, grade)


def qrels_text_as_of(*, collection: Collection, mark: Mark) -> Iterator[str]:
    """The version's qrels as TREC text, byte for byte what the export wrote then."""
    return trec.qrels_text(
        (qid, docno, grade)
        for _, qid, _, docno, grade in qrels_as_of(collection=collection, mark=mark)
    )


@dataclass(frozen=True)
class RunAsOf:
    run: str
    rank: int
    ndcg: float
    judged: float
    queries: int
    per_query: dict[str, float]  # qid -> nDCG@k (the queries that count)


@dataclass(frozen=True)
class LeaderboardAsOf:
    label: str
    k: int
    pairs: int
    queries: int
    rows: list[RunAsOf]  # best first

    @property
    def ranking(self) -> list[str]:
        return [row.run for row in self.rows]


def leaderboard_as_of(*, collection: Collection, mark: Mark, k: int) -> LeaderboardAsOf:
    """Every run's mean nDCG@k and judged@k under the qrels at the mark (cached: a version
    never changes; the key holds the runs' last change too)."""
    runs, runs_key = _runs_key(collection)
    key = f"as-of:{collection.id}:{k}:{mark.key}:{mark.gain}:{mark.missing_queries}:{runs_key}"
    found = cache.get(key)
    if found is None:
        found = _leaderboard(collection, mark, k, runs)
        cache.set(key, found, timeout=3600)
    return found


@dataclass(frozen=True)
class MeasureRunAsOf:
    run: str
    rank: int
    mean: float  # trec_eval's `all` value (counts summed)
    queries: int


@dataclass(frozen=True)
class MeasureAsOf:
    """Every run's `all` value of one measure under the qrels at a mark, best first."""

    label: str
    name: str  # ir_measures' name
    trec_eval: str  # trec_eval's name
    pairs: int
    queries: int
    rows: list[MeasureRunAsOf]

    @property
    def ranking(self) -> list[str]:
        return [row.run for row in self.rows]


def measure_as_of(*, collection: Collection, mark: Mark, measure: Measure) -> MeasureAsOf:
    """Every run's `all` value of a measure under the qrels at the mark, as trec_eval
    computes it on those qrels and today's runs (with ``-c`` when the mark's rule counts an
    unanswered query, what trec_eval -c gives it; without, over the queries a run answered):
    the engine's reference (``metrics.measures``), the mark's gain for nDCG. Cached as
    ``leaderboard_as_of`` is."""
    runs, runs_key = _runs_key(collection)
    name = format_measure(measure)
    key = (
        f"as-of-measure:{collection.id}:{mark.key}:{mark.gain}:{mark.missing_queries}:"
        f"{hashlib.sha256(name.encode()).hexdigest()[:16]}:{runs_key}"
    )
    found = cache.get(key)
    if found is None:
        found = _measure_board(collection, mark, measure, runs)
        cache.set(key, found, timeout=3600)
    return found


def _measure_board(
    collection: Collection, mark: Mark, measure: Measure, runs: list[tuple[int, str]]
) -> MeasureAsOf:
    by_query, pairs = _qrels_by_query(collection, mark)
    run_ids = [run_id for run_id, _ in runs]
    zero = mark.missing_queries == "zero"
    depth = measures.depth_read(measure)
    values: dict[int, dict[str, float]] = {run_id: {} for run_id in run_ids}
    qrels: dict[str, list[int]] = {}
    for query_id, (qid, grades) in by_query.items():
        qrels[qid] = list(grades.values())
        rankings = selectors.query_rankings(query_id=query_id, depth=depth, run_ids=run_ids)
        for run_id in run_ids:
            ranking = rankings.get(run_id)
            if ranking is None:
                if zero:  # trec_eval -c: an empty ranking
                    values[run_id][qid] = measures.measure_value(measure, [], qrels[qid])
                continue
            values[run_id][qid] = measures.measure_value(
                measure, [grades.get(document_id) for document_id in ranking], qrels[qid], mark.gain
            )
    means: dict[str, tuple[float, int]] = {}
    for run_id, run_name in runs:
        counted = values[run_id]
        mean = (
            measures.summary(measure, counted, list(counted), qrels if zero else None)
            if counted
            else 0.0
        )
        means[run_name] = (mean, len(counted))
    order = sorted(means, key=lambda run_name: (-means[run_name][0], run_name))
    rows = [
        MeasureRunAsOf(run=run_name, rank=rank, mean=means[run_name][0], queries=means[run_name][1])
        for rank, run_name in enumerate(order, start=1)
    ]
    return MeasureAsOf(
        label=mark.label,
        name=format_measure(measure),
        trec_eval=trec_name(measure),
        pairs=pairs,
        queries=len(by_query),
        rows=rows,
    )


def _runs_key(collection: Collection) -> tuple[list[tuple[int, str]], int]:
    """The runs by name (id, name) and a digest of their last changes, for a cache key."""
    runs = list(
        Run.objects.filter(collection=collection)
        .order_by("name")
        .values_list("id", "name", "updated")
    )
    stamp = ",".join(f"{run_id}:{updated.timestamp()}" for run_id, _, updated in runs)
    return [(run_id, name) for run_id, name, _ in runs], hash(stamp)


def _qrels_by_query(
    collection: Collection, mark: Mark
) -> tuple[dict[int, tuple[str, dict[int, int]]], int]:
    """query id -> (qid, document id -> grade) of the qrels at the mark, and their pairs."""
    by_query: dict[int, tuple[str, dict[int, int]]] = {}
    pairs = 0
    for query_id, qid, document_id, _, grade in qrels_as_of(collection=collection, mark=mark):
        by_query.setdefault(query_id, (qid, {}))[1][document_id] = grade
        pairs += 1
    return by_query, pairs


def _leaderboard(
    collection: Collection, mark: Mark, k: int, runs: list[tuple[int, str]]
) -> LeaderboardAsOf:
    by_query, pairs = _qrels_by_query(collection, mark)
    run_ids = [run_id for run_id, _ in runs]
    ndcg_by_run: dict[int, dict[str, float]] = {run_id: {} for run_id in run_ids}
    judged: dict[int, dict[str, float]] = {run_id: {} for run_id in run_ids}
    for query_id, (qid, grades) in sorted(by_query.items(), key=lambda item: item[1][0]):
        idcgs = ndcg.idcgs_for(grades.values(), [k], mark.gain)
        rankings = selectors.query_rankings(query_id=query_id, depth=k, run_ids=run_ids)
        for run_id in run_ids:
            ranking = rankings.get(run_id)
            if ranking is None:
                if mark.missing_queries == "zero":
                    ndcg_by_run[run_id][qid], judged[run_id][qid] = 0.0, 0.0
                continue
            values = ndcg.query_scores(ranking, grades, [k], mark.gain, idcgs)[k]
            ndcg_by_run[run_id][qid], judged[run_id][qid] = values.ndcg, values.judged
    means = {name: ordered_mean(list(ndcg_by_run[run_id].values())) for run_id, name in runs}
    order = rank_correlation.ranking(means)
    ids = {name: run_id for run_id, name in runs}
    rows = [
        RunAsOf(
            run=name,
            rank=position,
            ndcg=means[name],
            judged=ordered_mean(list(judged[ids[name]].values())),
            queries=len(ndcg_by_run[ids[name]]),
            per_query=ndcg_by_run[ids[name]],
        )
        for position, name in enumerate(order, start=1)
    ]
    return LeaderboardAsOf(label=mark.label, k=k, pairs=pairs, queries=len(by_query), rows=rows)


@dataclass(frozen=True)
class PairChange:
    qid: str
    docno: str
    before: int | None  # None: not judged in the first version
    after: int | None  # None: not judged in the second


@dataclass(frozen=True)
class RunChange:
    run: str
    before: float
    after: float
    rank_before: int
    rank_after: int

    @property
    def change(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class VersionsDiff:
    first: str
    second: str
    k: int
    added: list[PairChange]
    changed: list[PairChange]
    removed: list[PairChange]
    runs: list[RunChange]  # by the second version's rank
    tau: float | None  # Kendall's tau-b between the two rankings' scores
    tau_ap: float | None  # the second ranking against the first as truth
    measure: str = ""  # what the runs are scored by: nDCG@k, or a measure's name


def _scores_as_of(
    collection: Collection, mark: Mark, k: int, measure: Measure | None
) -> tuple[dict[str, tuple[float, int]], list[str]]:
    """run name -> (score, rank) under the qrels at the mark, and the ranking: nDCG@k, or
    the `all` value of `measure`."""
    if measure is None:
        board = leaderboard_as_of(collection=collection, mark=mark, k=k)
        return {row.run: (row.ndcg, row.rank) for row in board.rows}, board.ranking
    by_measure = measure_as_of(collection=collection, mark=mark, measure=measure)
    return {row.run: (row.mean, row.rank) for row in by_measure.rows}, by_measure.ranking


def versions_diff(
    *,
    collection: Collection,
    first: Mark,
    second: Mark,
    k: int,
    limit: int = 1000,
    measure: Measure | None = None,
) -> VersionsDiff:
    """What changed between two marks: pairs (up to `limit` listed of each kind), each run's
    score (nDCG@k, or the `all` value of `measure`) and rank, and how alike the two
    rankings are."""
    before = {
        (qid, docno): g for _, qid, _, docno, g in qrels_as_of(collection=collection, mark=first)
    }
    after = {
        (qid, docno): g for _, qid, _, docno, g in qrels_as_of(collection=collection, mark=second)
    }
    added = [PairChange(*pair, None, after[pair]) for pair in sorted(after.keys() - before.keys())]
    removed = [
        PairChange(*pair, before[pair], None) for pair in sorted(before.keys() - after.keys())
    ]
    changed = [
        PairChange(*pair, before[pair], after[pair])
        for pair in sorted(before.keys() & after.keys())
        if before[pair] != after[pair]
    ]
    scores_a, ranking_a = _scores_as_of(collection, first, k, measure)
    scores_b, ranking_b = _scores_as_of(collection, second, k, measure)
    runs = [
        RunChange(run, scores_a[run][0], scores_b[run][0], scores_a[run][1], scores_b[run][1])
        for run in ranking_b
    ]
    names = sorted(scores_a)
    tau = rank_correlation.kendall_tau_b(
        [scores_a[n][0] for n in names], [scores_b[n][0] for n in names]
    )
    return VersionsDiff(
        first=first.label,
        second=second.label,
        k=k,
        added=added[:limit],
        changed=changed[:limit],
        removed=removed[:limit],
        runs=runs,
        tau=tau,
        tau_ap=rank_correlation.tau_ap(ranking_a, ranking_b),
        measure=f"nDCG@{k}" if measure is None else format_measure(measure),
    )
