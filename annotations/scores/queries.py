"""One query recomputed after a judgement: read, score, write what moved, fold the means."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from annotations import selectors
from annotations.bulk import (
    bulk_delete,
    bulk_insert,
    bulk_update,
    execute,
    fetch_binary,
    pipeline,
    reads,
)
from annotations.formats import score_bytes
from annotations.formats.score_bytes import FloatArray
from annotations.models import Collection, IdealScore, Query, QueryScore, Run, RunScore
from annotations.scores import folding
from annotations.scores.computing import (
    QUERY_SCORE_COLUMNS,
    QueryScores,
    mean_values,
    score_rankings,
    synchronous_commit_off,
)


def scores_recompute_query(*, query_id: int, force: bool = False) -> bool:
    """Recompute one query for every run and update the run means; False if nothing to do.

    Reads the query's judgement version before its grades, stores the scores and marks that
    version scored; a judgement committed meanwhile leaves the query stale for its own
    recomputation. Without `force`, a query that is not stale is left alone (coalescing).
    """
    with transaction.atomic():
        lock = " FOR UPDATE OF c" if connection.vendor == "postgresql" else ""
        query_table = Query._meta.db_table
        statements = [
            # The query's collection, locked (see `_lock_collection`): the statements after
            # it run once the lock is held, so they see the work of a recomputation that
            # held it before.
            (
                "SELECT c.id, c.gain, c.missing_queries, c.aggregation, c.cutoffs, "
                "c.stale_judgements "
                f"FROM {Collection._meta.db_table} c JOIN {query_table} q "
                f"ON q.collection_id = c.id WHERE q.id = %s{lock}",
                [query_id],
                True,
            ),
            (
                f"SELECT judgements_version, scored_version FROM {query_table} WHERE id = %s",
                [query_id],
                True,
            ),
            (*selectors.effective_grades_statement(query_id=query_id), True),
            (*selectors.ranking_heads_statement(query_id=query_id), True),
            (
                "SELECT run_id, cutoffs, ndcg, dcg, judged, ndcg_condensed "
                f"FROM {QueryScore._meta.db_table} WHERE query_id = %s",
                [query_id],
                True,
            ),
            (
                f"SELECT k, idcg FROM {IdealScore._meta.db_table} WHERE query_id = %s",
                [query_id],
                True,
            ),
            (
                # An empty overflow (nearly always) arrives as NULL: nothing to parse.
                # The sums themselves are read once what moved is known (`folding`).
                "SELECT s.run_id, s.cutoffs, s.queries, "
                "CASE WHEN s.overflow = '{}' THEN NULL ELSE s.overflow END "
                f"FROM {RunScore._meta.db_table} s JOIN {Run._meta.db_table} r "
                f"ON r.id = s.run_id JOIN {query_table} q ON q.collection_id = r.collection_id "
                "WHERE q.id = %s",
                [query_id],
                True,
            ),
        ]
        # All of it leaves in one round trip, results in binary (no numbers as text to
        # parse back).
        with reads(statements) as results:
            found = next(results)
            if not found:
                return False  # deleted meanwhile
            collection = _collection_from_row(found[0])
            version, scored = next(results)[0]
            if version == scored and not force:
                return False
            grades = selectors.effective_grades_from_rows(
                next(results),
                collection.aggregation,
                include_stale=collection.stale_judgements == "count",
            )
            ranking_rows = next(results)
            depth = max(collection.sorted_cutoffs)
            rankings = (
                selectors.scoring_rankings_from_rows(
                    ranking_rows, query_id=query_id, depth=depth, grades=grades
                )
                if grades
                else {}
            )
            new = score_rankings(collection, grades, rankings)
            stored_rows, ideal_rows, run_rows = next(results), next(results), next(results)
        stored = {
            run_id: (cutoffs, *map(bytes, columns)) for run_id, cutoffs, *columns in stored_rows
        }
        _store_query(
            collection, query_id, new,
            stored=stored, old_ideal=dict(ideal_rows), run_rows=run_rows, version=version,
        )  # fmt: skip
    return True


def _collection_from_row(row: tuple[Any, ...]) -> Collection:
    """The scoring settings of a collection read by raw SQL (an instance not to be saved)."""
    collection_id, gain, missing_queries, aggregation, cutoffs, stale_judgements = row
    if isinstance(cutoffs, str | bytes):  # JSON as text (SQLite, or jsonb loaded as text)
        cutoffs = json.loads(cutoffs)
    return Collection(
        id=collection_id,
        gain=gain,
        missing_queries=missing_queries,
        aggregation=aggregation,
        cutoffs=cutoffs,
        stale_judgements=stale_judgements,
    )


def _store_query(
    collection: Collection,
    query_id: int,
    new: QueryScores,
    *,
    stored: dict[int, tuple[Any, ...]],
    old_ideal: dict[int, float],
    run_rows: list[tuple[Any, ...]],
    version: int,
) -> None:
    """Write what changed for one query, fold the differences into the run means and mark
    `version` scored.

    `stored`, `old_ideal` and `run_rows` are the query's stored scores (run -> layout and
    packed values), its stored IDCGs and the collection's RunScore rows without their sums,
    read under the collection lock. One packed row per run is written where its values
    changed, with only the measures that moved; the run means move by the exact difference
    of this query's values (`folding`), all runs at once.
    """
    layout = score_bytes.layout(collection.sorted_cutoffs)
    idcgs = new.idcgs
    row_of = new.row_of()
    old_ids, old_matrix = _stored_matrix(stored, layout)
    old_row = {run_id: i for i, run_id in enumerate(old_ids)}
    inserts: list[tuple[object, ...]] = []
    # Updated rows grouped by the columns that moved: a change of the IDCG alone moves nDCG
    # and nDCG' of every run but no DCG and no judged@k, which are then not rewritten.
    updates: dict[tuple[int, ...], list[tuple[object, ...]]] = defaultdict(list)
    both = [(i, old_row[run_id]) for i, run_id in enumerate(new.run_ids) if run_id in old_row]
    measures = len(score_bytes.QUERY_MEASURES)
    moved_columns = np.ones((len(new.run_ids), measures), dtype=bool)  # another layout: all
    if both:
        into, source = map(list, zip(*both, strict=True))
        # Bits, not values: the packed bytes are what is compared.
        moved_columns[into] = (
            new.matrix[into].view(np.uint64) != old_matrix[source].view(np.uint64)
        ).any(axis=2)
    # Each row's set of moved columns as a small integer, decoded once per set.
    codes = (moved_columns @ (1 << np.arange(measures))).tolist()
    sets = {c: tuple(j for j in range(measures) if c >> j & 1) for c in set(codes)}
    for i, run_id in enumerate(new.run_ids):
        if run_id not in stored:
            inserts.append((run_id, query_id, layout, *score_bytes.pack_query(new.matrix[i])))
            continue
        moved = sets[codes[i]]
        if moved:
            row = new.matrix[i]
            updates[moved].append(
                (query_id, run_id, layout, *(score_bytes.float_bytes(row[j]) for j in moved))
            )
    gone = [run_id for run_id in stored if run_id not in row_of]
    # Inserts and deletes first (rare: a query's first or last judgement, a run's first
    # result for it); COPY cannot run inside the pipeline below.
    bulk_insert(QueryScore, QUERY_SCORE_COLUMNS, inserts)
    bulk_delete(QueryScore, key=("query_id", "run_id"), keys=[(query_id, r) for r in gone])
    bulk_delete(
        IdealScore, key=("query_id", "k"), keys=[(query_id, k) for k in old_ideal if k not in idcgs]
    )
    bulk_insert(
        IdealScore,
        ("query_id", "k", "idcg"),
        [(query_id, k, v) for k, v in idcgs.items() if k not in old_ideal],
    )
    # The run means: only the runs, measures and cutoffs that moved have their sums read.
    runs = [folding.RunRow(row[0], row[1], row[2], _json(row[3])) for row in run_rows]
    # A run whose stored per-query row has another layout than its means cannot fold: its
    # means are rebuilt by its rescore.
    broken = [
        run.run_id
        for run in runs
        if run.cutoffs == layout and run.run_id in stored and run.run_id not in old_row
    ]
    skipped = set(broken)
    fold = folding.plan(
        [run for run in runs if run.run_id not in skipped],
        layout,
        (old_ids, mean_values(old_matrix)),
        (new.run_ids, mean_values(new.matrix)),
        zero_missing=collection.missing_queries == "zero",
        count_delta=int(bool(idcgs)) - int(bool(old_ideal)),
    )
    sums = fetch_binary(*folding.sums_statement(fold)) if fold.summed.size else []
    rows = folding.fold_rows(fold, sums)
    # The updates go out without waiting: the server applies them back to back.
    with pipeline():
        synchronous_commit_off()
        for moved, changed in updates.items():
            bulk_update(
                QueryScore,
                key=("query_id", "run_id"),
                columns=("cutoffs", *(score_bytes.QUERY_MEASURES[j] for j in moved)),
                rows=changed,
            )
        bulk_update(
            IdealScore,
            key=("query_id", "k"),
            columns=("idcg",),
            rows=[(query_id, k, v) for k, v in idcgs.items() if old_ideal.get(k, v) != v],
        )
        now = timezone.now()
        offset = fold.start * score_bytes.SUM_BYTES
        for (summed, moved), changed in rows.items():
            columns = tuple(score_bytes.SUM_COLUMNS[m] for m in moved)
            bulk_update(
                RunScore,
                key=("run_id",),
                columns=("queries", *(("overflow",) if summed else ()), *columns),
                rows=changed,
                constants={"updated": now},
                splice=dict.fromkeys(columns, offset),
            )
        if broken:
            bulk_update(Run, key=("id",), columns=("scored_at",), rows=[(r, None) for r in broken])
        execute(
            f"UPDATE {Query._meta.db_table} SET scored_version = %s WHERE id = %s",
            [version, query_id],
        )


def _stored_matrix(stored: dict[int, tuple[Any, ...]], layout: str) -> tuple[list[int], FloatArray]:
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


def _json(value: Any) -> dict[str, str]:
    """A JSON column as read by raw SQL: loaded on PostgreSQL (jsonb), text on SQLite;
    None for an empty one."""
    if value is None:
        return {}
    if isinstance(value, str | bytes):
        loaded: dict[str, str] = json.loads(value)
        return loaded
    return dict(value)
