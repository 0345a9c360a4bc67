"""PURE: one query's measures for every run at once (numpy), bit-identical to the reference."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotations.metrics.measures import INFAP_EPSILON, Measure, measure_value
from annotations.metrics.ndcg import gain_function, idcg
from annotations.metrics.ndcg_arrays import _UNGRADED, _discount_table, _GradeTable
from annotations.metrics.qrels_ranks import QrelsRanks, equivalent_rankings

__all__ = ["FAST", "measure_matrix", "ranks_measure_matrix"]

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
    sequences = [rankings[run] for run in runs]
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(runs))

    def found(table: _GradeTable, depth: int) -> _Found:
        read = np.minimum(lengths, depth)
        codes = table.read(sequences, np.arange(len(runs)), np.zeros_like(read), read)
        hit = np.flatnonzero(codes != table.ungraded)
        ends = np.cumsum(read)
        rows = np.searchsorted(ends, hit, side="right")
        return rows, hit - (ends - read)[rows], codes[hit]

    return runs, _values(lengths, found, lambda: sequences, grades, measures, scheme)


def ranks_measure_matrix(
    ranks: QrelsRanks,
    grades: Mapping[int, int],
    measures: Sequence[Measure],
    scheme: str = "linear",
) -> NDArray[np.float64]:
    """`measure_matrix` of the rankings `ranks` reduces (a row per run, in its order), bit
    for bit, from the ranks of their qrels documents alone; `ranks.documents` must hold
    every document of `grades`."""

    def found(table: _GradeTable, depth: int) -> _Found:
        graded = table(ranks.documents)
        codes = graded[ranks.indices]
        if depth < ranks.lengths.max(initial=0) or (graded == table.ungraded).any():
            keep = np.flatnonzero((ranks.positions < depth) & (codes != table.ungraded))
            return ranks.rows[keep], ranks.positions[keep], codes[keep]
        return ranks.rows, ranks.positions, codes

    return _values(
        ranks.lengths, found, lambda: equivalent_rankings(ranks), grades, measures, scheme
    )


# The results of every run's top that are in the qrels: their runs, their 0-based positions
# (grouped by run, in rank order) and their grade codes.
_Found = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.integer[Any]]]


def _values(
    lengths: NDArray[np.int64],
    found: Callable[[_GradeTable, int], _Found],
    sequences: Callable[[], Sequence[Sequence[int] | NDArray[np.int64]]],
    grades: Mapping[int, int],
    measures: Sequence[Measure],
    scheme: str,
) -> NDArray[np.float64]:
    """The values of every run (rankings of `lengths`): the FAST families from `found` in
    the top as deep as they read, the others run by run from the rankings."""
    runs = lengths.size
    values = np.zeros((runs, len(measures)), dtype=np.float64)
    longest = int(lengths.max(initial=0))
    qrels = list(grades.values())
    fast = [index for index, measure in enumerate(measures) if measure.name in FAST]
    slow = [index for index, measure in enumerate(measures) if measure.name not in FAST]

    if fast and runs:
        judged = np.fromiter(qrels, dtype=np.int64, count=len(qrels))
        relevant_of = {
            level: int(np.count_nonzero((judged >= 0) & (judged >= level)))
            for level in {measures[i].rel for i in fast}
        }
        depth = max(
            1,
            min(
                longest,
                max(
                    _depth_needed(measures[i], relevant_of[measures[i].rel], longest) for i in fast
                ),
            ),
        )
        # Every negative grade as one code apart from an absent document's (see _POOLED).
        table = _GradeTable(
            {doc: grade if grade >= 0 else _POOLED for doc, grade in grades.items()}
            if judged.size and judged.min() < 0
            else grades,
            gain_function(scheme),
        )
        rows, places, codes = found(table, depth)
        # Codes as indices of the machine's width: numpy looks them up several times faster.
        columns = _Columns(
            table, (rows, places, codes.astype(np.intp)), lengths, depth, judged, scheme
        )
        for index in fast:
            values[:, index] = columns.of(measures[index], relevant_of[measures[index].rel])

    if slow:
        rankings = sequences()
        for index in slow:
            measure = measures[index]
            for row, sequence in enumerate(rankings):
                ranking_grades = [grades.get(int(doc)) for doc in sequence]
                values[row, index] = measure_value(measure, ranking_grades, qrels, scheme)
    return values


class _Positions:
    """The ranks of the results of one kind (relevant at a level, gaining) in every run's
    top: their places among the results in the qrels (`at`), their rows and columns in rank
    order, a run's before the next run's, and their grade codes. The measures add their
    terms only there, so they work on these few positions rather than on whole rankings."""

    def __init__(
        self,
        at: NDArray[np.int64],
        rows: NDArray[np.int64],
        columns: NDArray[np.int64],
        codes: NDArray[np.integer[Any]],
        runs: int,
    ) -> None:
        self.runs = runs
        self.at, self.rows, self.columns, self.codes = at, rows, columns, codes
        self.counts = np.bincount(self.rows, minlength=self.runs)
        self.starts = np.cumsum(self.counts) - self.counts
        # 0-based place of each position among its run's: how many of them are above it.
        self.order = np.arange(self.rows.size) - self.starts[self.rows]

    def within(self, cut: int) -> NDArray[np.int64]:
        """Per run, how many of the positions are in its top `cut`."""
        return np.bincount(self.rows[self.columns < cut], minlength=self.runs)

    def running(self, terms: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each run's terms (one per position) added one by one in rank order, every
        running total: np.cumsum adds left to right, as the reference's ``total +=``, and
        the 0.0 that pads a run with fewer positions leaves its last total unchanged."""
        matrix = np.zeros((self.runs, max(int(self.counts.max(initial=0)), 1)))
        matrix[self.rows, self.order] = terms
        return np.cumsum(matrix, axis=1)

    def total(self, running: NDArray[np.float64], count: NDArray[np.int64]) -> NDArray[np.float64]:
        """Each run's sum of its first `count` terms from `running`; 0.0 for none."""
        picked = running[np.arange(self.runs), np.maximum(count - 1, 0)]
        return np.where(count > 0, picked, 0.0)


class _Columns:
    """One query's measures for every run, from the results of the runs' tops that are in
    the qrels (`_Found`); what several measures share is computed once."""

    def __init__(
        self,
        table: _GradeTable,
        found: _Found,
        lengths: NDArray[np.int64],
        depth: int,
        judged: NDArray[np.int64],
        scheme: str,
    ) -> None:
        self.table, self.lengths, self.depth, self.judged = table, lengths, depth, judged
        self.rows, self.columns, self.codes = found
        self.scheme = scheme
        self.runs = lengths.size
        self._shared: dict[tuple[Any, ...], Any] = {}

    def _once(self, key: tuple[Any, ...], make: Any) -> Any:
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    def _code(self, kind: str, level: int = 0) -> NDArray[np.bool_]:
        """Which grade codes are of `kind`: "relevant" (at relevance `level`) or "gaining"."""
        grades = self.table.grades
        if kind == "relevant":
            return (grades >= 0) & (grades >= level)  # type: ignore[no-any-return]
        return self.table.gaining

    def _where(self, kind: str, level: int = 0) -> _Positions:
        code = self._code(kind, level)
        # Kinds whose codes coincide (grades >= 1 and the gaining ones, usually) share them.
        return self._once(  # type: ignore[no-any-return]
            ("codes", *code.tolist()), lambda: self._positions(code[self.codes])
        )

    def _positions(self, kind: NDArray[np.bool_]) -> _Positions:
        at = np.flatnonzero(kind)
        return _Positions(at, self.rows[at], self.columns[at], self.codes[at], self.runs)

    def _pooled_above(self, found: _Positions) -> NDArray[np.int64]:
        """For each of `found`'s positions, how many pooled but unjudged results are above it
        in its run: those before it among the run's results in the qrels."""
        if not np.any(self.table.grades == _POOLED):
            return np.zeros(found.at.size, dtype=np.int64)
        marked = (self.table.grades == _POOLED)[self.codes]
        before = self._once(("pooled before",), lambda: _exclusive_counts(marked))
        counts: NDArray[np.int64] = before[found.at] - before[self._first()[found.rows]]
        return counts

    def _nonrelevant_above(self, found: _Positions, level: int) -> NDArray[np.int64]:
        """For each position of `found` (the relevant results at `level`), how many judged
        non-relevant results are above it in its run: each result in the qrels is relevant,
        judged non-relevant or pooled, so they are those above it that are neither."""
        above: NDArray[np.int64] = found.at - self._first()[found.rows]
        return above - found.order - self._pooled_above(found)

    def _first(self) -> NDArray[np.int64]:
        """Each run's first place among the results in the qrels."""
        return self._once(  # type: ignore[no-any-return]
            ("first",), lambda: np.searchsorted(self.rows, np.arange(self.runs))
        )

    def of(self, measure: Measure, relevant: int) -> NDArray[np.float64]:
        name, k, level = measure.name, measure.cutoff, measure.rel
        if name == "NumRel":
            return np.full(self.runs, float(relevant))
        if name == "NumRet":
            return self.lengths.astype(np.float64)
        if name == "nDCG":
            return self._ndcg(k)
        found = self._where("relevant", level)
        if name == "P":
            assert k is not None
            return found.within(k) / np.float64(k)
        if name == "R":
            assert k is not None
            return _divide(found.within(k), relevant)
        if name == "Success":
            assert k is not None
            return np.where(found.within(k) > 0, 1.0, 0.0)
        if name == "NumRelRet":
            return found.counts.astype(np.float64)
        if name == "SetP":
            retrieved = np.maximum(self.lengths, 1)
            return np.where(self.lengths > 0, found.counts / retrieved, 0.0)
        if name == "SetR":
            return _divide(found.counts, relevant)
        if name == "Rprec":
            at_r = found.within(max(relevant, 1))
            return np.where(self.lengths > 0, _divide(at_r, relevant), 0.0)
        if name == "RR":
            if found.columns.size == 0:
                return np.zeros(self.runs)
            answered = found.counts > 0
            # A run's first relevant rank (a run without one reads another's, then masked).
            first = found.columns[np.minimum(found.starts, found.columns.size - 1)]
            if k is not None:
                answered &= first < k
            return np.where(answered, 1.0 / (first + 1.0), 0.0)
        if name == "AP":
            # precision at each relevant rank: found / rank, as the reference's int / int.
            running = self._once(
                ("AP", level), lambda: found.running((found.order + 1) / (found.columns + 1))
            )
            total = found.total(running, found.counts if k is None else found.within(k))
            return total / np.float64(relevant) if relevant else np.zeros(self.runs)
        if name == "Bpref":
            return self._bpref(level, relevant)
        if name == "infAP":
            return self._infap(level, relevant)
        raise ValueError(f"no fast path for {name}")

    def _ndcg(self, k: int | None) -> NDArray[np.float64]:
        """trec_eval's ndcg (no cutoff: the whole ranking over the whole ideal list) or
        ndcg_cut_k: gain / log2(rank + 1) at each gaining rank, added in rank order."""
        positive = int(np.count_nonzero(self.judged > 0))
        if not positive:
            return np.zeros(self.runs)
        ideal = idcg(self.judged.tolist(), k or positive, self.scheme)
        if ideal <= 0.0:
            return np.zeros(self.runs)
        gaining = self._where("gaining")
        running = self._once(
            ("DCG", 0),
            lambda: gaining.running(
                self.table.gains[gaining.codes] / _discount_table(self.depth)[gaining.columns]
            ),
        )
        count = gaining.counts if k is None else gaining.within(k)
        return gaining.total(running, count) / np.float64(ideal)

    def _bpref(self, level: int, relevant: int) -> NDArray[np.float64]:
        """At each relevant rank 1 - min(n, R) / min(N, R), n the judged non-relevant above
        it (1 when there is none), added in rank order, over R."""
        found = self._where("relevant", level)
        nonrel_above = self._nonrelevant_above(found, level)
        nonrelevant = int(np.count_nonzero((self.judged >= 0) & (self.judged < level)))
        floor = min(nonrelevant, relevant)
        penalty = np.minimum(nonrel_above, relevant) / np.float64(max(floor, 1))
        terms = np.where(nonrel_above > 0, 1.0 - penalty, 1.0)
        total = found.total(found.running(terms), found.counts)
        return total / np.float64(relevant) if relevant else total

    def _infap(self, level: int, relevant: int) -> NDArray[np.float64]:
        """trec_eval's infAP term at each relevant 0-based position j, in its order of
        operations (see measures.inferred_average_precision), added in rank order, over R."""
        found = self._where("relevant", level)
        rel_above = found.order
        nonrel_above = self._nonrelevant_above(found, level)
        pooled_above = self._pooled_above(found)
        fj = found.columns.astype(np.float64)
        safe = np.where(fj > 0.0, fj, 1.0)
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
            (rel_above + nonrel_above + pooled_above) / safe
        ) * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON))
        terms = np.where(found.columns == 0, 1.0, term)
        total = found.total(found.running(terms), found.counts)
        return total / np.float64(relevant) if relevant else total


def _exclusive_counts(marked: NDArray[np.bool_]) -> NDArray[np.int64]:
    """For each place, how many of the places before it are marked."""
    counts = np.zeros(marked.size + 1, dtype=np.int64)
    np.cumsum(marked, out=counts[1:])
    return counts[:-1]
