"""The run means one query's recomputation moves: the plan, a read of only the sums it
moves, the exact fold, and the RunScore rows to write.

A judgement moves one query's values, for some runs (those that retrieved the document,
or all of them when the query's IDCG moved) and from some cutoff on (the rank of the
document, or the ideal position that changed). The plan finds them from the query's stored
and new values alone, so only those runs' sums are read, only of the measures that moved
and only from the first cutoff that moved (`sums_statement`); the rows written splice the
folded tail onto the stored head (`bulk_update`'s `splice`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection

from annotations.formats import score_bytes
from annotations.formats.score_bytes import FloatArray, IntArray
from annotations.models import RunScore
from annotations.scores.computing import ExactMeans

# One written group of RunScore rows: whether the run's sums were read (then its overflow
# texts are written too; if not, only its query count moved), and the measures whose sums
# moved.
GroupKey = tuple[bool, tuple[int, ...]]


@dataclass
class RunRow:
    """A stored RunScore row without its sums: run, layout, query count, overflow texts."""

    run_id: int
    cutoffs: str
    queries: int
    overflow: dict[str, str]


@dataclass
class FoldPlan:
    """What one query's change moves in the run means of the runs in the current layout.

    `old` and `fresh` are the query's (runs, 3, K) values before and after (0.0 where the
    run has none), `counts` the new query counts. `summed` indexes the runs whose values
    moved: their sums of `measures` are read from cutoff position `start` on.
    """

    runs: list[RunRow]
    counts: IntArray
    old: FloatArray
    fresh: FloatArray
    summed: IntArray
    measures: tuple[int, ...]
    start: int
    cutoffs: int

    def count_only(self) -> IntArray:
        """Runs whose query count moved but none of whose values did."""
        stored = np.array([run.queries for run in self.runs], dtype=np.int64)
        moved = self.counts != stored
        moved[self.summed] = False
        return np.flatnonzero(moved)


def plan(
    runs: Sequence[RunRow],
    layout: str,
    old: tuple[Sequence[int], FloatArray],
    new: tuple[Sequence[int], FloatArray],
    *,
    zero_missing: bool,
    count_delta: int,
) -> FoldPlan:
    """The fold of one query's values into the runs' means in `layout`.

    `old` and `new` are the query's (runs, 3, K) mean values before and after, with the
    runs they belong to; a run absent from one has no values there. With `zero_missing`
    (missing queries count as zero) every mean counts the query once it has judgements, so
    the counts move by `count_delta`; otherwise a run counts the queries it has values for.
    """
    ks = len(score_bytes.cutoffs_of(layout))
    current = [run for run in runs if run.cutoffs == layout]
    size = len(current)
    before = _values_of(current, *old, ks)
    after = _values_of(current, *new, ks)
    had = _has(current, old[0])
    has = _has(current, new[0])
    stored = np.array([run.queries for run in current], dtype=np.int64)
    counts = stored + count_delta if zero_missing else stored + has - had
    # Bits, not values: -0.0 and 0.0 are equal numbers but not equal packed sums.
    moved = before.view(np.uint64) != after.view(np.uint64)
    summed = np.flatnonzero(moved.any(axis=(1, 2))) if size else np.zeros(0, dtype=np.int64)
    measures = tuple(int(m) for m in np.flatnonzero(moved.any(axis=(0, 2))))
    positions = np.flatnonzero(moved.any(axis=(0, 1)))
    start = int(positions[0]) if positions.size else ks
    return FoldPlan(current, counts, before, after, summed, measures, start, ks)


def _values_of(
    runs: Sequence[RunRow], ids: Sequence[int], values: FloatArray, ks: int
) -> FloatArray:
    """The (len(runs), 3, K) rows of `values` (one per id in `ids`), 0.0 for runs without."""
    at = {run_id: i for i, run_id in enumerate(ids)}
    rows = [(i, at[run.run_id]) for i, run in enumerate(runs) if run.run_id in at]
    result = np.zeros((len(runs), 3, ks))
    if rows:
        into, source = zip(*rows, strict=True)
        result[list(into)] = values[list(source)]
    return result


def _has(runs: Sequence[RunRow], ids: Sequence[int]) -> IntArray:
    present = set(ids)
    return np.array([run.run_id in present for run in runs], dtype=np.int64)


def sums_statement(fold: FoldPlan) -> tuple[str, list[Any]]:
    """The read of the moved runs' sums of the moved measures, from the first moved cutoff
    (rows: run id, then one tail per measure in `fold.measures` order)."""
    offset = fold.start * score_bytes.SUM_BYTES + 1  # SQL substr counts from 1
    tails = ", ".join(f"substr({score_bytes.SUM_COLUMNS[m]}, %s)" for m in fold.measures)
    run_ids = [fold.runs[i].run_id for i in fold.summed]
    table = RunScore._meta.db_table
    if connection.vendor == "postgresql":
        return (
            f"SELECT run_id, {tails} FROM {table} WHERE run_id = ANY(%s)",
            [*[offset] * len(fold.measures), run_ids],
        )
    marks = ", ".join(["%s"] * len(run_ids))
    return (
        f"SELECT run_id, {tails} FROM {table} WHERE run_id IN ({marks})",
        [*[offset] * len(fold.measures), *run_ids],
    )


def fold_rows(
    fold: FoldPlan, sums_rows: Sequence[Sequence[Any]]
) -> dict[GroupKey, list[tuple[Any, ...]]]:
    """The RunScore rows to write, grouped (see GroupKey): (run, queries) for a count that
    moved alone; (run, queries, overflow, *the tails of the sums that moved) otherwise."""
    written: dict[GroupKey, list[tuple[Any, ...]]] = defaultdict(list)
    for i in fold.count_only():
        written[(False, ())].append((fold.runs[i].run_id, int(fold.counts[i])))
    if not fold.summed.size:
        return written
    start, width = fold.start, fold.cutoffs - fold.start
    read = fold.measures  # only these are folded: the others did not move
    tails = {row[0]: [bytes(value) for value in row[1:]] for row in sums_rows}
    rows = [fold.runs[i] for i in fold.summed]
    stored_tails = [tails[run.run_id] for run in rows]
    means = ExactMeans.stored(
        [
            (run.queries, columns, _tail_overflow(run.overflow, read, start))
            for run, columns in zip(rows, stored_tails, strict=True)
        ],
        width,
        len(read),
    )
    everything = np.arange(len(rows))
    chosen = fold.old[fold.summed], fold.fresh[fold.summed]
    means.move(everything, *(values[:, read, start:] for values in chosen))
    means.spill(everything)
    texts = means.overflow(everything)
    # One packing for all runs, cut into each run's tails.
    packed = score_bytes.pack_sums(means.sums)
    size = score_bytes.SUM_BYTES * width
    for j, (i, run) in enumerate(zip(fold.summed, rows, strict=True)):
        at = len(read) * j
        tail = [packed[(at + m) * size : (at + m + 1) * size] for m in range(len(read))]
        moved = tuple(m for m in range(len(read)) if tail[m] != stored_tails[j][m])
        overflow = (
            json.dumps(_merged_overflow(run.overflow, texts[j], read, start))
            if run.overflow or texts[j]
            else "{}"  # nearly always
        )
        written[(True, tuple(read[m] for m in moved))].append(
            (run.run_id, int(fold.counts[i]), overflow, *(tail[m] for m in moved))
        )
    return written


def _tail_overflow(
    overflow: Mapping[str, str], measures: Sequence[int], start: int
) -> dict[str, str]:
    """The overflow texts of the read tails, keyed by their place among `measures` and
    their position within the tail."""
    tail = {}
    for key, text in overflow.items():
        measure, index = score_bytes.overflow_place(key)
        if measure in measures and index >= start:
            tail[score_bytes.overflow_key(measures.index(measure), index - start)] = text
    return tail


def _merged_overflow(
    stored: Mapping[str, str], tail: Mapping[str, str], measures: Sequence[int], start: int
) -> dict[str, str]:
    """The stored texts outside the read tails, and the folded tails' texts in place."""
    merged = {}
    for key, text in stored.items():
        measure, index = score_bytes.overflow_place(key)
        if measure not in measures or index < start:
            merged[key] = text
    for key, text in tail.items():
        place, index = score_bytes.overflow_place(key)
        merged[score_bytes.overflow_key(measures[place], index + start)] = text
    return merged
