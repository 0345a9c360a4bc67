"""Stored values of a collection's other measures (AP, P@10, ...): per query and run means."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from django.core.cache import cache

from annotations.bulk import fetch_binary
from annotations.formats import score_bytes
from annotations.metrics import measures as reference
from annotations.metrics.measure_names import (
    MeasureNameError,
    format_measure,
    parse_measure,
    trec_name,
)
from annotations.metrics.measures import Measure
from annotations.models import Collection, IdealScore, QueryScore, Run, RunScore
from annotations.selectors import leaderboards
from annotations.selectors.grades import effective_grades_by_query
from annotations.selectors.leaderboards import RunRef
from annotations.selectors.scores_state import scores_state


class UnknownMeasure(ValueError):
    """A measure the collection does not keep; the message names it and lists the kept ones."""


def kept_measure(collection: Collection, name: str) -> Measure:
    """The measure `name` (ir_measures' syntax, any spelling) if the collection keeps it."""
    kept = collection.kept_measures
    listed = ", ".join(map(format_measure, kept)) or "none (nDCG@k only)"
    try:
        measure = parse_measure(name)
    except MeasureNameError as error:
        raise UnknownMeasure(f"{error}. This collection keeps: {listed}.") from None
    if measure not in kept:
        raise UnknownMeasure(
            f"measure {name!r} is not kept by this collection; it keeps: {listed} "
            "(organisers add measures in the collection's settings)."
        )
    return measure


@dataclass(frozen=True)
class MeasureMean:
    """A run's `all` value of one measure, from its stored per-query values."""

    run: Run
    value: float
    queries: int


def evaluated_qids(collection: Collection) -> dict[int, str]:
    """query id -> qid of the evaluated queries (those with at least one judgement)."""
    k = collection.sorted_cutoffs[0]
    return dict(
        IdealScore.objects.filter(query__collection=collection, k=k).values_list(
            "query_id", "query__qid"
        )
    )


def stored_measure(
    collection: Collection, measure: Measure, run_ids: Sequence[int] | None = None
) -> dict[int, dict[int, float]]:
    """run id -> query id -> the stored value of `measure`, for the runs whose every row
    holds the collection's current measure set (RunScore.measures); others are pending."""
    layout = collection.measures_layout
    names = [format_measure(kept) for kept in collection.kept_measures]
    position = names.index(format_measure(measure))
    scored = RunScore.objects.filter(run__collection=collection, measures=layout)
    if run_ids is not None:
        scored = scored.filter(run_id__in=list(run_ids))
    complete = list(scored.values_list("run_id", flat=True))
    values: dict[int, dict[int, float]] = defaultdict(dict)
    if not complete:
        return values
    marks = ", ".join(["%s"] * len(complete))
    # Only the 8 bytes of the measure leave the database (as `stored_rows_at` does for nDCG).
    sql = (
        f"SELECT run_id, query_id, substr(measure_values, {8 * position + 1}, 8) "
        f"FROM {QueryScore._meta.db_table} WHERE measures = %s AND run_id IN ({marks})"
    )
    rows = fetch_binary(sql, [layout, *complete])
    packed = score_bytes.floats(b"".join(bytes(row[2]) for row in rows)).tolist()
    for run_id in complete:
        values[run_id] = {}
    for (run_id, query_id, _), value in zip(rows, packed, strict=True):
        values[run_id][query_id] = value
    return values


def run_measure_values(
    collection: Collection, measure: Measure, run: Run
) -> tuple[list[tuple[str, float, bool]] | None, MeasureMean | None]:
    """A run's (qid, value, answered) per evaluated query in trec_eval's order (zero-filled
    per the collection's rule) and its mean; (None, None) while its values are pending."""
    found = runs_measure_rows(collection, measure, [run]).get(run.id)
    return found if found is not None else (None, None)


def runs_measure_rows(
    collection: Collection, measure: Measure, runs: Sequence[Run]
) -> dict[int, tuple[list[tuple[str, float, bool]], MeasureMean]]:
    """run id -> what `run_measure_values` gives, in one read for several runs; runs whose
    values are pending are absent."""
    stored = stored_measure(collection, measure, [run.id for run in runs])
    qids = evaluated_qids(collection)
    zero = collection.missing_queries == "zero"
    ordered = sorted(qids.items(), key=lambda item: item[1])  # trec_order
    missing = _Unanswered(collection, measure, qids)
    out: dict[int, tuple[list[tuple[str, float, bool]], MeasureMean]] = {}
    for run in runs:
        if run.id not in stored:
            continue
        values = stored[run.id]
        rows = [
            (
                qid,
                values[query_id] if query_id in values else missing.value(query_id),
                query_id in values,
            )
            for query_id, qid in ordered
            if zero or query_id in values
        ]
        out[run.id] = (rows, _mean(collection, measure, run, values, qids, missing))
    return out


def measure_means(collection: Collection, measure: Measure) -> tuple[list[MeasureMean], list[Run]]:
    """Every run's `all` value of `measure`, best first (then by name), and the runs whose
    values are pending (not yet all in the collection's measure set)."""
    runs = list(Run.objects.filter(collection=collection).select_related("owner"))
    stored = stored_measure(collection, measure)
    qids = evaluated_qids(collection)
    missing = _Unanswered(collection, measure, qids)
    means = [
        _mean(collection, measure, run, stored[run.id], qids, missing)
        for run in runs
        if run.id in stored
    ]
    means.sort(key=lambda mean: (-mean.value, mean.run.name))
    pending = sorted((run for run in runs if run.id not in stored), key=lambda run: run.name)
    return means, pending


class _Unanswered:
    """The values trec_eval -c gives a judged query a run did not answer: the reference's
    value of an empty ranking (0 but for NumRel, the query's relevant count, and RBP's
    residual, 1), and the qrels the `all` line of NumRel counts. The grades are read only
    for NumRel, the one family whose empty-ranking value depends on them."""

    def __init__(self, collection: Collection, measure: Measure, qids: dict[int, str]) -> None:
        self.measure = measure
        self.grades: dict[int, list[int]] | None = None
        if measure.name == "NumRel":
            self.grades = {
                query_id: list(grades.values())
                for query_id, grades in effective_grades_by_query(
                    collection=collection, query_ids=list(qids)
                )
            }
        self.constant = reference.measure_value(measure, [], [])

    def value(self, query_id: int) -> float:
        if self.grades is None:
            return self.constant
        return reference.measure_value(self.measure, [], self.grades.get(query_id, []))

    def qrels(self, qids: dict[int, str]) -> dict[str, list[int]] | None:
        """qid -> grades, for the `all` line of NumRel (None for every other measure)."""
        if self.grades is None:
            return None
        return {qid: self.grades.get(query_id, []) for query_id, qid in qids.items()}


def _mean(
    collection: Collection,
    measure: Measure,
    run: Run,
    values: dict[int, float],
    qids: dict[int, str],
    missing: _Unanswered,
) -> MeasureMean:
    """trec_eval's `all` value (`measures.summary`: the values added in its query order,
    over their count; the counts summed): every evaluated query with -c (zero mode, an
    unanswered one counting what trec_eval -c gives it), only the answered ones otherwise."""
    zero = collection.missing_queries == "zero"
    counted = [query_id for query_id in qids if zero or query_id in values]
    if not counted:
        return MeasureMean(run, 0.0, 0)
    by_qid = {
        qids[query_id]: values[query_id] if query_id in values else missing.value(query_id)
        for query_id in counted
    }
    value = reference.summary(measure, by_qid, list(by_qid), missing.qrels(qids) if zero else None)
    return MeasureMean(run, value, len(counted))


@dataclass(frozen=True)
class MeasureMatrix:
    """What the all-pairs significance of a kept measure tests: the runs whose values are
    all in the current measure set, best first (then by name), with their `all` values, and
    their per-query values over ``query_ids`` (qid order: every evaluated query when an
    unanswered one counts, with what trec_eval -c gives it; else those every run answered,
    as the nDCG@k leaderboard's matrix)."""

    runs: list[tuple[int, str, float]]  # (run id, name, `all` value)
    query_ids: list[int]
    values: npt.NDArray[np.float64]  # len(runs) x len(query_ids)


def measure_matrix(collection: Collection, measure: Measure) -> MeasureMatrix:
    """The ranked runs and per-query matrix of one kept measure, from the stored values."""
    runs = list(Run.objects.filter(collection=collection).order_by("name", "id").only("id", "name"))
    stored = stored_measure(collection, measure)
    qids = evaluated_qids(collection)
    zero = collection.missing_queries == "zero"
    missing = _Unanswered(collection, measure, qids)
    means = [
        _mean(collection, measure, run, stored[run.id], qids, missing)
        for run in runs
        if run.id in stored
    ]
    means.sort(key=lambda mean: (-mean.value, mean.run.name))
    in_order = sorted(qids, key=qids.__getitem__)  # trec_eval's order
    columns = [
        query_id
        for query_id in in_order
        if zero or all(query_id in stored[mean.run.id] for mean in means)
    ]
    unanswered = {query_id: missing.value(query_id) for query_id in columns} if zero else {}
    values = np.zeros((len(means), len(columns)), dtype=np.float64)
    for row, mean in enumerate(means):
        found = stored[mean.run.id]
        values[row] = [
            found[query_id] if query_id in found else unanswered[query_id] for query_id in columns
        ]
    return MeasureMatrix(
        runs=[(mean.run.id, mean.run.name, mean.value) for mean in means],
        query_ids=columns,
        values=values,
    )


# --- leaderboards of a kept measure -------------------------------------------------------


@dataclass(frozen=True)
class MeasureRow:
    """A run's place on the leaderboard of one kept measure: its `all` value and the
    bootstrap CI of the mean of the per-query values that value is over (None for the
    measures trec_eval sums rather than averages, and over no query)."""

    rank: int
    run: RunRef
    mean: float
    ci_low: float | None
    ci_high: float | None
    queries: int


@dataclass(frozen=True)
class MeasureBoard:
    """Every run ranked by one kept measure, computed from the stored values at `stamp`."""

    name: str
    trec_eval: str
    rows: list[MeasureRow]
    pending: list[RunRef]
    stamp: str
    summed: bool  # a count summed over queries (NumRet, ...): no interval

    def mean_of(self, run_id: int) -> float | None:
        return next((row.mean for row in self.rows if row.run.id == run_id), None)


# Per process: the last CIs of each (collection, measure) with the values they came from,
# so that a new stamp resamples only the runs whose values moved (a judgement moves one
# query of the runs that retrieved its document); the rest keep theirs, the same bits.
_KNOWN_SECONDS = 3600
# A board is a function of the stored values, so of the scores stamp (and the measure set).
_BOARD_SECONDS = 600


def measure_board(collection: Collection, measure: Measure) -> MeasureBoard:
    """The leaderboard of a kept measure, best first (then by name): each run's `all` value
    (``_mean``) and the percentile bootstrap CI of the mean over the queries it counts, with
    the nDCG@k leaderboard's resamples, confidence and seed (``leaderboards._intervals``,
    equal bit for bit to ``significance.bootstrap_ci`` per run).

    Computed when read, from the stored per-query values, once per process and scores stamp
    (a cache entry, nothing in the database); CIs computed at an earlier stamp are kept for
    the runs whose values did not move (``benchmarks/bench_measure_board.py`` times it at 110
    runs x 249 queries)."""
    stamp = scores_state(collection=collection).stamp
    name = format_measure(measure)
    layout = hashlib.sha256(f"{collection.measures_layout}|{name}".encode()).hexdigest()[:16]
    key = f"measure-board:{collection.id}:{layout}:{stamp}"
    board = cache.get(key)
    if isinstance(board, MeasureBoard):
        return board
    board = _measure_board(collection, measure, stamp)
    cache.set(key, board, _BOARD_SECONDS)
    return board


def _measure_board(collection: Collection, measure: Measure, stamp: str) -> MeasureBoard:
    name = format_measure(measure)
    runs = list(
        Run.objects.filter(collection=collection).order_by("name", "id").select_related("owner")
    )
    stored = stored_measure(collection, measure)
    qids = evaluated_qids(collection)
    zero = collection.missing_queries == "zero"
    in_order = sorted(qids, key=qids.__getitem__)  # trec_eval's order
    missing = _Unanswered(collection, measure, qids)
    means = [
        _mean(collection, measure, run, stored[run.id], qids, missing)
        for run in runs
        if run.id in stored
    ]
    means.sort(key=lambda mean: (-mean.value, mean.run.name))
    summed = measure.name in reference.SUMMED
    intervals: dict[int, tuple[float, float]] = {}
    if not summed:
        vectors: dict[int, leaderboards.RunVector] = {}
        for mean in means:
            values = stored[mean.run.id]
            counted = [query_id for query_id in in_order if zero or query_id in values]
            vectors[mean.run.id] = (
                counted,
                np.asarray(
                    [
                        values[query_id] if query_id in values else missing.value(query_id)
                        for query_id in counted
                    ],
                    dtype=np.float64,
                ),
            )
        with_values = [mean.run.id for mean in means if mean.queries]
        known_key = (
            f"measure-intervals:{collection.id}:{hashlib.sha256(name.encode()).hexdigest()[:16]}"
        )
        known = cache.get(known_key)
        intervals = leaderboards.intervals_kept(
            with_values, vectors, known if isinstance(known, leaderboards.KnownIntervals) else None
        )
        cache.set(known_key, _known(vectors, intervals), _KNOWN_SECONDS)
    rows = [
        MeasureRow(
            rank=rank,
            run=RunRef.of(mean.run),
            mean=mean.value,
            ci_low=intervals[mean.run.id][0] if mean.run.id in intervals else None,
            ci_high=intervals[mean.run.id][1] if mean.run.id in intervals else None,
            queries=mean.queries,
        )
        for rank, mean in enumerate(means, start=1)
    ]
    pending = [RunRef.of(run) for run in runs if run.id not in stored]
    return MeasureBoard(format_measure(measure), trec_name(measure), rows, pending, stamp, summed)


def _known(
    vectors: dict[int, leaderboards.RunVector], intervals: dict[int, tuple[float, float]]
) -> leaderboards.KnownIntervals | None:
    """The CIs just computed with their values, in the form the next computation keeps from:
    only the runs over the most common query list (one per ``KnownIntervals``)."""
    lists = [tuple(vectors[run_id][0]) for run_id in intervals]
    if not lists:
        return None
    common = max(set(lists), key=lists.count)
    kept = [run_id for run_id in intervals if tuple(vectors[run_id][0]) == common]
    return leaderboards.KnownIntervals(
        common,
        {
            run_id: np.ascontiguousarray(vectors[run_id][1], dtype="<f8").tobytes()
            for run_id in kept
        },
        {run_id: intervals[run_id] for run_id in kept},
    )


def kept_means(collection: Collection) -> list[MeasureBoard]:
    """The board of every kept measure, in the collection's order (for columns side by side)."""
    return [measure_board(collection, measure) for measure in collection.kept_measures]


@dataclass(frozen=True)
class RunMeasureTable:
    """A run's values of every kept measure: per evaluated query (qid order; None where it
    does not count) and the `all` values; ``pending`` while any is not in the current set."""

    names: list[str]
    per_query: dict[str, list[float | None]]  # qid -> a value per name
    means: list[float | None]
    pending: bool


def run_measure_table(collection: Collection, run: Run) -> RunMeasureTable:
    """Every kept measure of one run, per query and as its mean (``run_measure_values``)."""
    names: list[str] = []
    per_query: dict[str, list[float | None]] = defaultdict(list)
    means: list[float | None] = []
    pending = False
    measures = collection.kept_measures
    for position, measure in enumerate(measures):
        names.append(format_measure(measure))
        rows, mean = run_measure_values(collection, measure, run)
        pending = pending or rows is None
        means.append(mean.value if mean is not None else None)
        for qid, value, _ in rows or []:
            values = per_query[qid]
            values.extend([None] * (position - len(values)))
            values.append(value)
    for values in per_query.values():
        values.extend([None] * (len(measures) - len(values)))
    return RunMeasureTable(names, dict(per_query), means, pending)


def query_measure_values(
    collection: Collection, query_id: int
) -> tuple[list[str], dict[int, list[float | None]]]:
    """The kept measures' names and run id -> each one's stored value on one query (None:
    pending); a run that did not answer the query is absent."""
    names = [format_measure(measure) for measure in collection.kept_measures]
    if not names:
        return names, {}
    layout = collection.measures_layout
    rows = fetch_binary(
        f"SELECT run_id, measure_values FROM {QueryScore._meta.db_table} "
        "WHERE query_id = %s AND measures = %s",
        [query_id, layout],
    )
    out: dict[int, list[float | None]] = {}
    for run_id, packed in rows:
        out[run_id] = list(score_bytes.floats(bytes(packed)).tolist())
    return names, out
