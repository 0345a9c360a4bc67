"""Stored values of a collection's other measures (AP, P@10, ...): per query and run means."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from annotations.bulk import fetch_binary
from annotations.formats import score_bytes
from annotations.metrics import measures as reference
from annotations.metrics.measure_names import MeasureNameError, format_measure, parse_measure
from annotations.metrics.measures import Measure
from annotations.models import Collection, IdealScore, QueryScore, Run, RunScore
from annotations.selectors.grades import effective_grades_by_query


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
    names = score_bytes.measure_names_of(layout)
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
    stored = stored_measure(collection, measure, [run.id])
    if run.id not in stored:
        return None, None
    qids = evaluated_qids(collection)
    values = stored[run.id]
    zero = collection.missing_queries == "zero"
    missing = _Unanswered(collection, measure, qids)
    rows = [
        (
            qid,
            values[query_id] if query_id in values else missing.value(query_id),
            query_id in values,
        )
        for query_id, qid in sorted(qids.items(), key=lambda item: item[1])  # trec_order
        if zero or query_id in values
    ]
    return rows, _mean(collection, measure, run, values, qids, missing)


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
