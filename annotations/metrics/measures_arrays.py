"""PURE: one query's measures for every run at once (numpy), bit-identical to the reference."""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotations.metrics.measures import INFAP_EPSILON, Measure, measure_value, num_rel
from annotations.metrics.ndcg import gain_function, idcg
from annotations.metrics.ndcg_arrays import _UNGRADED, _discount_table, _GradeTable

__all__ = ["FAST", "measure_matrix"]

# Families computed here on whole matrices; any other measure is computed run by run with
# the reference (measures.measure_value), so every measure has one entry point.
FAST: frozenset[str] = frozenset(
    {
        "AP",
        "P",
        "R",
        "RR",
        "Rprec",
        "Success",
        "NumRel",
        "NumRet",
        "NumRelRet",
        "SetP",
        "SetR",
        "Bpref",
        "infAP",
        "nDCG",
    }
)
# Families whose value may depend on the whole ranking (no cutoff to stop at).
_WHOLE: frozenset[str] = frozenset({"NumRelRet", "SetP", "SetR", "Bpref", "infAP"})
# The code of a grade in the qrels below 0 (in the pool, not judged): apart from _UNGRADED,
# which a document absent from the qrels gets, as infAP tells the two apart.
_POOLED = _UNGRADED - 1


def _depth_needed(measure: Measure, relevant: int, longest: int) -> int:
    if measure.name in _WHOLE or (measure.name in {"AP", "RR", "nDCG"} and measure.cutoff is None):
        return longest
    if measure.name == "Rprec":
        return relevant
    return measure.cutoff or 0


def _divide(numerators: NDArray[np.int64], divisor: int) -> NDArray[np.float64]:
    """numerators / divisor as Python's int / int gives them (both exact in a double, one
    correctly rounded division), 0.0 everywhere when the divisor is 0."""
    if divisor == 0:
        return np.zeros(numerators.shape, dtype=np.float64)
    return numerators / np.float64(divisor)


def measure_matrix(
    rankings: Mapping[int, Sequence[int] | NDArray[np.int64]],
    grades: Mapping[int, int],
    measures: Sequence[Measure],
    scheme: str = "linear",
) -> tuple[list[int], NDArray[np.float64]]:
    """(run ids in the order of the rows, values of shape (runs, len(measures))).

    Every value equals ``measures.measure_value(measure, [grades.get(d) for d in
    rankings[run]], list(grades.values()), scheme)`` bit for bit. Rankings hold document ids
    in effective order, ids and grades ints within int64 (as ``ndcg_arrays.score_matrix``).
    """
    runs = list(rankings)
    values = np.zeros((len(runs), len(measures)), dtype=np.float64)
    sequences = [rankings[run] for run in runs]
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(runs))
    longest = int(lengths.max(initial=0))
    qrels = list(grades.values())
    fast = [index for index, measure in enumerate(measures) if measure.name in FAST]
    slow = [index for index, measure in enumerate(measures) if measure.name not in FAST]

    if fast and runs:
        depth = max(
            1,
            min(
                longest,
                max(
                    _depth_needed(measures[i], num_rel(qrels, measures[i].rel), longest)
                    for i in fast
                ),
            ),
        )
        # Every negative grade as one code apart from an absent document's (see _POOLED).
        table = _GradeTable(
            {doc: grade if grade >= 0 else _POOLED for doc, grade in grades.items()}
            if any(grade < 0 for grade in qrels)
            else grades,
            gain_function(scheme),
        )
        read = np.minimum(lengths, depth)
        codes = table.read(sequences, np.arange(len(runs)), np.zeros_like(read), read)
        top = np.full((len(runs), depth), table.ungraded)
        top[np.arange(depth) < read[:, None]] = codes  # short rankings padded: never relevant
        ranks = np.arange(1, depth + 1, dtype=np.int64)
        by_level: dict[int, tuple[NDArray[np.bool_], NDArray[np.int64]]] = {}
        for index in fast:
            measure = measures[index]
            level = measure.rel
            if level not in by_level:
                relevant_code = (table.grades >= 0) & (table.grades >= level)
                relevant_at = relevant_code[top]
                by_level[level] = relevant_at, np.cumsum(relevant_at, axis=1, dtype=np.int64)
            relevant_at, found = by_level[level]
            relevant = num_rel(qrels, level)
            if measure.name in _GRADED:
                values[:, index] = _graded_column(measure, table, top, lengths, qrels, scheme)
            else:
                values[:, index] = _fast_column(
                    measure, relevant_at, found, ranks, lengths, relevant
                )

    for index in slow:
        measure = measures[index]
        for row, sequence in enumerate(sequences):
            ranking_grades = [grades.get(int(doc)) for doc in sequence]
            values[row, index] = measure_value(measure, ranking_grades, qrels, scheme)
    return runs, values


# Families that read the grades themselves, not only which results are relevant.
_GRADED: frozenset[str] = frozenset({"Bpref", "infAP", "nDCG"})


def _graded_column(
    measure: Measure,
    table: _GradeTable,
    top: NDArray[np.unsignedinteger[Any]],
    lengths: NDArray[np.int64],
    qrels: Sequence[int],
    scheme: str,
) -> NDArray[np.float64]:
    """Bpref, infAP and nDCG for every run from the grade codes of the top results (rows
    padded with _UNGRADED's code): the reference's terms in its order of operations, added
    left to right by np.cumsum (a +0.0 between terms leaves a running sum unchanged)."""
    runs, depth = top.shape
    name, level = measure.name, measure.rel
    grade = table.grades[top]
    if name == "nDCG":
        k = depth if measure.cutoff is None else min(measure.cutoff, depth)
        positive = sum(1 for g in qrels if g > 0)
        ideal = idcg(qrels, measure.cutoff or max(positive, 1), scheme) if positive else 0.0
        if ideal <= 0.0:
            return np.zeros(runs)
        terms = table.gains[top[:, :k]] / _discount_table(k)[:k]
        gained = np.cumsum(terms, axis=1)[:, -1] if k else np.zeros(runs)
        return gained / np.float64(ideal)
    relevant_at = (grade >= 0) & (grade >= level)
    nonrelevant_at = (grade >= 0) & (grade < level)
    relevant = num_rel(qrels, level)
    # Judged non-relevant documents above each rank (the rank's own is not counted).
    nonrel_above = np.cumsum(nonrelevant_at, axis=1, dtype=np.int64) - nonrelevant_at
    if name == "Bpref":
        nonrelevant = sum(1 for g in qrels if 0 <= g < level)
        floor = min(nonrelevant, relevant)
        penalty = np.minimum(nonrel_above, relevant) / np.float64(max(floor, 1))
        terms = np.where(relevant_at, np.where(nonrel_above > 0, 1.0 - penalty, 1.0), 0.0)
        total = np.cumsum(terms, axis=1)[:, -1] if depth else np.zeros(runs)
        return total / np.float64(relevant) if relevant else total
    # infAP: j the 0-based position; relevant, non-relevant and pooled-unjudged above it.
    rel_above = np.cumsum(relevant_at, axis=1, dtype=np.int64) - relevant_at
    pooled_at = grade == _POOLED
    pooled_above = np.cumsum(pooled_at, axis=1, dtype=np.int64) - pooled_at
    fj = np.arange(depth, dtype=np.float64)
    safe = np.where(fj > 0.0, fj, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
            (rel_above + nonrel_above + pooled_above) / safe
        ) * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON))
    term[:, :1] = 1.0
    terms = np.where(relevant_at, term, 0.0)
    total = np.cumsum(terms, axis=1)[:, -1] if depth else np.zeros(runs)
    return total / np.float64(relevant) if relevant else total


def _fast_column(
    measure: Measure,
    relevant_at: NDArray[np.bool_],
    found: NDArray[np.int64],
    ranks: NDArray[np.int64],
    lengths: NDArray[np.int64],
    relevant: int,
) -> NDArray[np.float64]:
    """One measure for every run from the relevance matrix and its running counts."""
    depth = found.shape[1]
    name, k = measure.name, measure.cutoff

    def found_at(cut: int) -> NDArray[np.int64]:
        return found[:, min(cut, depth) - 1]

    if name == "P":
        assert k is not None
        return found_at(k) / np.float64(k)
    if name == "R":
        assert k is not None
        return _divide(found_at(k), relevant)
    if name == "Success":
        assert k is not None
        return np.where(found_at(k) > 0, 1.0, 0.0)
    if name == "NumRel":
        return np.full(found.shape[0], float(relevant))
    if name == "NumRet":
        return lengths.astype(np.float64)
    if name == "NumRelRet":
        return found[:, -1].astype(np.float64)
    if name == "SetP":
        retrieved = np.maximum(lengths, 1)
        return np.where(lengths > 0, found[:, -1] / retrieved, 0.0)
    if name == "SetR":
        return _divide(found[:, -1], relevant)
    if name == "Rprec":
        return np.where(lengths > 0, _divide(found_at(max(relevant, 1)), relevant), 0.0)
    if name == "RR":
        window = relevant_at if k is None else relevant_at[:, : min(k, depth)]
        first = np.argmax(window, axis=1)
        return np.where(window.any(axis=1), 1.0 / (first + 1.0), 0.0)
    if name == "AP":
        # precision at each relevant rank, 0.0 elsewhere: +0.0 leaves the running sum of
        # the reference's `total +=` unchanged, and np.cumsum adds left to right.
        terms = np.where(relevant_at, found / ranks, 0.0)
        sums = np.cumsum(terms, axis=1)
        total = sums[:, -1] if k is None else sums[:, min(k, depth) - 1]
        return total / np.float64(relevant) if relevant else np.zeros(found.shape[0])
    raise ValueError(f"no fast path for {name}")
