"""PURE: what one query's recomputation writes, from its stored and new scores alone.

`plan_query` compares the query's new scores with the stored ones and gives every write:
the packed per-query rows to insert, to update (only the measures that moved, bits
compared) and to delete, the IDCGs likewise, the runs whose scores moved (their
RunScore's `updated`) and the runs to mark unscored. `annotations.scores.queries` reads
the inputs and sends the writes; nothing here touches the database.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotations.formats import score_bytes
from annotations.formats.score_bytes import FloatArray
from annotations.scores.computing import QueryScores

# A stored per-query row: its layout, then its packed columns in QUERY_MEASURES order,
# then (when read) its measures layout and their packed values.
StoredRow = tuple[Any, ...]
# The position, in a set of moved columns, of the other measures' two columns.
MEASURES_MOVED = len(score_bytes.QUERY_MEASURES)


@dataclass
class QueryWrites:
    """The writes of one query's recomputation (rows as `bulk_*` take them).

    `updates` groups the updated rows by the measures that moved (positions in
    QUERY_MEASURES, and MEASURES_MOVED for the other measures' layout and values): a change
    of the IDCG alone moves nDCG and nDCG' of every run but no DCG and no judged@k, which
    are then not rewritten. `touched` are the runs scored in the
    current layout whose values of this query moved; `unscored` the runs whose stored row
    of this query has another layout than their RunScore says (their rescore rebuilds them).
    """

    inserts: list[tuple[Any, ...]] = field(default_factory=list)
    updates: dict[tuple[int, ...], list[tuple[Any, ...]]] = field(default_factory=dict)
    deletes: list[int] = field(default_factory=list)
    ideal_inserts: list[tuple[int, float]] = field(default_factory=list)
    ideal_updates: list[tuple[int, float]] = field(default_factory=list)
    ideal_deletes: list[int] = field(default_factory=list)
    touched: list[int] = field(default_factory=list)
    unscored: list[int] = field(default_factory=list)


def plan_query(
    layout: str,
    query_id: int,
    new: QueryScores,
    *,
    stored: Mapping[int, StoredRow],
    old_ideal: Mapping[int, float],
    run_layouts: Mapping[int, str],
) -> QueryWrites:
    """The writes that make one query's stored scores equal `new`.

    `stored` is the query's stored rows (run -> layout and packed columns), `old_ideal` its
    stored IDCGs (k -> value) and `run_layouts` the layout of each run's RunScore row.
    """
    writes = QueryWrites()
    old_ids, old_matrix = stored_matrix(stored, layout)
    old_row = {run_id: i for i, run_id in enumerate(old_ids)}
    measures = len(score_bytes.QUERY_MEASURES) + 1
    moved_columns = np.ones((len(new.run_ids), measures), dtype=bool)  # another layout: all
    both = [(i, old_row[run_id]) for i, run_id in enumerate(new.run_ids) if run_id in old_row]
    if both:
        into, source = map(list, zip(*both, strict=True))
        # Bits, not values: the packed bytes are what is compared.
        moved_columns[into, :MEASURES_MOVED] = (
            new.matrix[into].view(np.uint64) != old_matrix[source].view(np.uint64)
        ).any(axis=2)
    packed_measures = [score_bytes.float_bytes(new.measure_row(i)) for i in range(len(new.run_ids))]
    for i, run_id in enumerate(new.run_ids):
        if run_id in old_row:
            was_layout, was_values = stored_measures(stored[run_id])
            moved_columns[i, MEASURES_MOVED] = (
                was_layout != new.measures_layout or was_values != packed_measures[i]
            )
    # Each row's set of moved columns as a small integer, decoded once per set.
    codes = (moved_columns @ (1 << np.arange(measures))).tolist()
    sets = {c: tuple(j for j in range(measures) if c >> j & 1) for c in set(codes)}
    updates: dict[tuple[int, ...], list[tuple[Any, ...]]] = defaultdict(list)
    moved_runs: list[int] = []
    for i, run_id in enumerate(new.run_ids):
        row = new.matrix[i]
        if run_id not in stored:
            writes.inserts.append(
                (
                    run_id,
                    query_id,
                    layout,
                    *score_bytes.pack_query(row),
                    new.measures_layout,
                    packed_measures[i],
                )
            )
            moved_runs.append(run_id)
            continue
        moved = sets[codes[i]]
        if moved:
            values: list[Any] = []
            for j in moved:
                if j == MEASURES_MOVED:
                    values.extend((new.measures_layout, packed_measures[i]))
                else:
                    values.append(score_bytes.float_bytes(row[j]))
            updates[moved].append((query_id, run_id, layout, *values))
            moved_runs.append(run_id)
    writes.updates = dict(updates)
    present = set(new.run_ids)
    writes.deletes = [run_id for run_id in stored if run_id not in present]
    moved_runs.extend(writes.deletes)
    idcgs = new.idcgs
    writes.ideal_deletes = [k for k in old_ideal if k not in idcgs]
    writes.ideal_inserts = [(k, v) for k, v in idcgs.items() if k not in old_ideal]
    writes.ideal_updates = [(k, v) for k, v in idcgs.items() if old_ideal.get(k, v) != v]
    # A run scored in the current layout whose stored row of this query is in another
    # layout: its values cannot be trusted, its rescore rebuilds them.
    writes.unscored = [
        run_id
        for run_id, run_layout in run_layouts.items()
        if run_layout == layout and run_id in stored and run_id not in old_row
    ]
    unscored = set(writes.unscored)
    writes.touched = [
        run_id
        for run_id in moved_runs
        if run_layouts.get(run_id) == layout and run_id not in unscored
    ]
    return writes


def stored_measures(row: StoredRow) -> tuple[str, bytes]:
    """The measures layout and packed values of a stored row ("" and b"" when not read)."""
    if len(row) <= 1 + MEASURES_MOVED:
        return "", b""
    return row[1 + MEASURES_MOVED], bytes(row[2 + MEASURES_MOVED])


def moved_columns_of(moved: tuple[int, ...]) -> tuple[str, ...]:
    """The QueryScore columns a set of moved positions rewrites."""
    columns: list[str] = []
    for j in moved:
        if j == MEASURES_MOVED:
            columns.extend(("measures", "measure_values"))
        else:
            columns.append(score_bytes.QUERY_MEASURES[j])
    return tuple(columns)


def stored_matrix(stored: Mapping[int, StoredRow], layout: str) -> tuple[list[int], FloatArray]:
    """The runs whose stored row is in `layout` and their (runs, 4, K) values (one
    conversion per measure for all of them)."""
    runs = [run_id for run_id, row in stored.items() if row[0] == layout]
    ks = len(score_bytes.cutoffs_of(layout))
    if not runs:
        return runs, np.zeros((0, len(score_bytes.QUERY_MEASURES), ks))
    matrix = np.stack(
        [
            score_bytes.floats(b"".join(stored[run_id][1 + j] for run_id in runs)).reshape(
                len(runs), ks
            )
            for j in range(len(score_bytes.QUERY_MEASURES))
        ],
        axis=1,
    )
    return runs, matrix
