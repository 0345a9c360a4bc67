"""One query recomputed after a judgement: read, score, write what moved, fold the means."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from annotations import exact, scoring, selectors
from annotations.bulk import (
    bulk_delete,
    bulk_insert,
    bulk_update,
    execute,
    pipeline,
    reads,
)
from annotations.models import Collection, IdealScore, Query, QueryScore, Run, RunScore
from annotations.scores.computing import (
    QUERY_SCORE_COLUMNS,
    Triple,
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
                "SELECT run_id, k, ndcg, dcg, judged, ndcg_condensed "
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
                "SELECT s.run_id, s.k, s.queries, s.ndcg_sum, s.ndcg_condensed_sum, s.judged_sum "
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
            idcgs, new = score_rankings(collection, grades, rankings)
            stored_rows, ideal_rows, run_rows = next(results), next(results), next(results)
        stored = {
            (run_id, k): (ndcg, dcg, judged, condensed)
            for run_id, k, ndcg, dcg, judged, condensed in stored_rows
        }
        _store_query(
            collection, query_id, idcgs, new,
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
    idcgs: dict[int, float],
    new: dict[tuple[int, int], scoring.CutoffScores],
    *,
    stored: dict[tuple[int, int], tuple[float, float, float, float]],
    old_ideal: dict[int, float],
    run_rows: list[tuple[Any, ...]],
    version: int,
) -> None:
    """Write what changed for one query, fold the differences into the run means and mark
    `version` scored.

    `stored`, `old_ideal` and `run_rows` are the query's stored scores, its stored IDCGs and
    the collection's stored run means, read under the collection lock. Rows are updated in
    place (see `bulk_update`); only runs whose values changed are touched, unless the number
    of evaluated queries changed, which moves every mean.
    """
    # One pass over the new scores: rows to insert, rows to update (and which of their
    # columns moved), and the (run, k) whose run means move, with their values before and
    # after (nDCG, nDCG', judged@k).
    inserts: list[tuple[object, ...]] = []
    updates: list[tuple[object, ...]] = []
    parts = [False, False, False, False]  # ndcg, dcg, judged, ndcg_condensed
    moved: dict[tuple[int, int], tuple[Triple | None, Triple | None]] = {}
    for key, score in new.items():
        values = (score.ndcg, score.dcg, score.judged, score.ndcg_condensed)
        was = stored.get(key)
        if was == values:
            continue
        after = (score.ndcg, score.ndcg_condensed, score.judged)
        if was is None:
            inserts.append((key[0], query_id, key[1], *values))
            moved[key] = (None, after)
            continue
        updates.append((query_id, *key, *values))
        for i in range(4):
            if values[i] != was[i]:
                parts[i] = True
        before = (was[0], was[3], was[2])
        if before != after:
            moved[key] = (before, after)
    gone = [key for key in stored if key not in new]
    for key in gone:
        was = stored[key]
        moved[key] = ((was[0], was[3], was[2]), None)
    # Inserts and deletes first (rare: a query's first or last judgement, a run's first
    # result for it); COPY cannot run inside the pipeline below.
    bulk_insert(QueryScore, QUERY_SCORE_COLUMNS, inserts)
    bulk_delete(
        QueryScore, key=("query_id", "run_id", "k"), keys=[(query_id, *key) for key in gone]
    )
    bulk_delete(
        IdealScore, key=("query_id", "k"), keys=[(query_id, k) for k in old_ideal if k not in idcgs]
    )
    bulk_insert(
        IdealScore,
        ("query_id", "k", "idcg"),
        [(query_id, k, v) for k, v in idcgs.items() if k not in old_ideal],
    )
    count_delta = int(bool(idcgs)) - int(bool(old_ideal))
    zero_mode = collection.missing_queries == "zero"
    moved_runs = {run_id for run_id, _ in moved}
    every_mean = zero_mode and count_delta != 0
    # The updates go out without waiting: the server applies the per-query scores while
    # the run means are folded here.
    with pipeline():
        synchronous_commit_off()
        # Only the columns that change in some row (a change of the ideal DCG moves nDCG
        # and nDCG' of every run, but no DCG and no judged@k).
        picked = [3 + i for i in range(4) if parts[i]]
        bulk_update(
            QueryScore,
            key=("query_id", "run_id", "k"),
            columns=tuple(QUERY_SCORE_COLUMNS[j] for j in picked),
            rows=[(row[0], row[1], row[2], *(row[j] for j in picked)) for row in updates],
        )
        bulk_update(
            IdealScore,
            key=("query_id", "k"),
            columns=("idcg",),
            rows=[(query_id, k, v) for k, v in idcgs.items() if old_ideal.get(k, v) != v],
        )
        columns, rows = _fold_means(
            run_rows,
            moved,
            runs=None if every_mean else moved_runs,
            zero_mode=zero_mode,
            count_delta=count_delta,
        )
        bulk_update(
            RunScore,
            key=("run_id", "k"),
            columns=columns,
            rows=rows,
            constants={"updated": timezone.now()},
        )
        execute(
            f"UPDATE {Query._meta.db_table} SET scored_version = %s WHERE id = %s",
            [version, query_id],
        )


# The three run means (each with its exact sum) in RunScore, in the order of a Triple.
_MEANS = (("ndcg", "ndcg_sum"), ("ndcg_condensed", "ndcg_condensed_sum"), ("judged", "judged_sum"))


def _fold_means(
    run_rows: list[tuple[Any, ...]],
    moved: Mapping[tuple[int, int], tuple[Triple | None, Triple | None]],
    *,
    runs: set[int] | None,
    zero_mode: bool,
    count_delta: int,
) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
    """The run mean rows that change when one query's values move as in `moved` ((run, k)
    -> values before and after; None: absent), and the RunScore columns that change in any
    of them.

    `run_rows` are the stored rows (run, k, queries, the three exact sums) of the `runs`
    concerned (None: all). A sum whose value did not change, with an unchanged
    count, is kept as stored and its column left out: parsing and formatting exact sums is
    the costly part of this path, and a grade change rarely moves judged@k.
    """
    unmoved: tuple[Triple | None, Triple | None] = (None, None)
    columns_moved = [False, False, False]
    count_moved = False
    rows: list[list[Any]] = []
    # Only stored means are folded: a run without one is pending its own scoring, which
    # builds it.
    for run_id, k, queries, *stored in run_rows:
        if runs is not None and run_id not in runs:
            continue
        before, after = moved.get((run_id, k), unmoved)
        if zero_mode:
            count = queries + count_delta
        else:
            count = queries + (after is not None) - (before is not None)
        # run, k, count, three means (None: unchanged, not written), three sums
        row: list[Any] = [run_id, k, count, None, None, None, *stored]
        changed = count != queries
        touched = changed
        for i in range(3):
            old_value = 0.0 if before is None else before[i]
            new_value = 0.0 if after is None else after[i]
            if old_value == new_value and not changed:
                continue
            row[3 + i], row[6 + i] = exact.fold(stored[i], old_value, new_value, count)
            columns_moved[i] = touched = True
        if touched:
            count_moved = count_moved or changed
            rows.append(row)
    if count_moved:
        columns_moved = [True, True, True]  # every mean divides by the new count
    picked = [i for i in range(3) if columns_moved[i]]
    for row in rows:  # a column written for some rows needs its value in all of them
        for i in picked:
            if row[3 + i] is None:
                row[3 + i], row[6 + i] = exact.fold(row[6 + i], 0.0, 0.0, row[2])
    columns = (("queries",) if count_moved else ()) + tuple(
        name for i in picked for name in _MEANS[i]
    )
    indexes = ([2] if count_moved else []) + [j for i in picked for j in (3 + i, 6 + i)]
    return columns, [(row[0], row[1], *(row[j] for j in indexes)) for row in rows]
