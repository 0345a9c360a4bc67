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

# A stored per-query row: its layout, then its packed columns in QUERY_MEASURES order.
StoredRow = tuple[Any, ...]


@dataclass
class QueryWrites:
    """The writes of one query's recomputation (rows as `bulk_*` take them).

    `updates` groups the updated rows by the measures that moved (positions in
    QUERY_MEASURES): a change of the IDCG alone moves nDCG and nDCG' of every run but no
    DCG and no judged@k, which are then not rewritten. `touched` are the runs scored in the
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
    measures = len(score_bytes.QUERY_MEASURES)
    moved_columns = np.ones((len(new.run_ids), measures), dtype=bool)  # another layout: all
    both = [(i, old_row[run_id]) for i, run_id in enumerate(new.run_ids) if run_id in old_row]
    if both:
        into, source = map(list, zip(*both, strict=True))
        # Bits, not values: the packed bytes are what is compared.
        moved_columns[into] = (
            new.matrix[into].view(np.uint64) != old_matrix[source].view(np.uint64)
        ).any(axis=2)
    # Each row's set of moved columns as a small integer, decoded once per set.
    codes = (moved_columns @ (1 << np.arange(measures))).tolist()
    sets = {c: tuple(j for j in range(measures) if c >> j & 1) for c in set(codes)}
    updates: dict[tuple[int, ...], list[tuple[Any, ...]]] = defaultdict(list)
    moved_runs: list[int] = []
    for i, run_id in enumerate(new.run_ids):
        row = new.matrix[i]
        if run_id not in stored:
            writes.inserts.append((run_id, query_id, layout, *score_bytes.pack_query(row)))
            moved_runs.append(run_id)
            continue
        moved = sets[codes[i]]
        if moved:
            updates[moved].append(
                (query_id, run_id, layout, *(score_bytes.float_bytes(row[j]) for j in moved))
            )
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
