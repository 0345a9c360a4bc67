"""One query recomputed after a judgement: read, score, write what moved, fold the means."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from annotations import score_packs, selectors
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
    MEAN_ROWS,
    QUERY_SCORE_COLUMNS,
    ExactMeans,
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
                "SELECT s.run_id, s.cutoffs, s.queries, "
                "s.ndcg_sums, s.ndcg_condensed_sums, s.judged_sums, "
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
    packed values), its stored IDCGs and the collection's stored run means, read under the
    collection lock. One packed row per run is written where its values changed; the run
    means move by the exact difference of this query's values, all runs at once.
    """
    ks = collection.sorted_cutoffs
    layout = score_packs.layout(ks)
    idcgs = new.idcgs
    row_of = new.row_of()
    inserts: list[tuple[object, ...]] = []
    # Updated rows grouped by the columns that moved: a change of the IDCG alone moves nDCG
    # and nDCG' of every run but no DCG and no judged@k, which are then not rewritten.
    updates: dict[tuple[int, ...], list[tuple[object, ...]]] = defaultdict(list)
    for i, run_id in enumerate(new.run_ids):
        columns = score_packs.pack_query(new.matrix[i])
        was = stored.get(run_id)
        if was is None:
            inserts.append((run_id, query_id, layout, *columns))
            continue
        if was[0] != layout:
            moved = tuple(range(len(columns)))
        else:
            moved = tuple(j for j, column in enumerate(columns) if column != was[1 + j])
        if moved:
            updates[moved].append((query_id, run_id, layout, *(columns[j] for j in moved)))
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
    count_delta = int(bool(idcgs)) - int(bool(old_ideal))
    rows, broken = _fold_means(collection, layout, new, stored, run_rows, count_delta=count_delta)
    # The updates go out without waiting: the server applies them back to back.
    with pipeline():
        synchronous_commit_off()
        for moved, changed in updates.items():
            bulk_update(
                QueryScore,
                key=("query_id", "run_id"),
                columns=("cutoffs", *(score_packs.QUERY_MEASURES[j] for j in moved)),
                rows=changed,
            )
        bulk_update(
            IdealScore,
            key=("query_id", "k"),
            columns=("idcg",),
            rows=[(query_id, k, v) for k, v in idcgs.items() if old_ideal.get(k, v) != v],
        )
        now = timezone.now()
        for moved, changed in rows.items():
            bulk_update(
                RunScore,
                key=("run_id",),
                columns=("queries", "overflow", *(score_packs.SUM_COLUMNS[m] for m in moved)),
                rows=changed,
                constants={"updated": now},
            )
        if broken:
            # Means whose per-query rows do not match them: rebuilt by their run's rescore.
            bulk_update(Run, key=("id",), columns=("scored_at",), rows=[(r, None) for r in broken])
        execute(
            f"UPDATE {Query._meta.db_table} SET scored_version = %s WHERE id = %s",
            [version, query_id],
        )


def _fold_means(
    collection: Collection,
    layout: str,
    new: QueryScores,
    stored: dict[int, tuple[Any, ...]],
    run_rows: list[tuple[Any, ...]],
    *,
    count_delta: int,
) -> tuple[dict[tuple[int, ...], list[tuple[Any, ...]]], list[int]]:
    """The RunScore rows (run, queries, overflow, the sums that moved) that change when one
    query's values move from `stored` to `new`, grouped by which of the three measures'
    sums moved, and the runs whose stored per-query row has another layout than their
    means (to be rescored).

    Only means in the current layout are folded: a run without one (never scored, or its
    collection's cutoffs changed) is pending its own scoring, which builds it. All runs are
    folded at once (exact_arrays); with `missing_queries == "zero"` a change in the number
    of evaluated queries moves every mean.
    """
    ks = len(collection.sorted_cutoffs)
    current = [row for row in run_rows if row[1] == layout]
    if not current:
        return {}, []
    run_ids = [row[0] for row in current]
    stored_sums = [tuple(map(bytes, row[3:6])) for row in current]
    means = ExactMeans.stored(
        [(row[2], sums, _json(row[6])) for row, sums in zip(current, stored_sums, strict=True)],
        ks,
    )
    old = np.zeros((len(run_ids), 3, ks))
    fresh = np.zeros((len(run_ids), 3, ks))
    before = np.zeros(len(run_ids), dtype=bool)
    after = np.zeros(len(run_ids), dtype=bool)
    row_of = new.row_of()
    taken = [(i, row_of[run_id]) for i, run_id in enumerate(run_ids) if run_id in row_of]
    at = [i for i, _ in taken]
    if at:
        fresh[at] = mean_values(new.matrix[[row for _, row in taken]])
        after[at] = True
    broken = [run_id for run_id in run_ids if run_id in stored and stored[run_id][0] != layout]
    skipped = set(broken)
    had = [i for i, run_id in enumerate(run_ids) if run_id in stored and run_id not in skipped]
    if had:
        # One buffer per measure for all runs: a single conversion instead of one per run.
        packed = [stored[run_ids[i]] for i in had]
        old[had] = np.stack(
            [
                score_packs.floats(b"".join(row[1 + j] for row in packed)).reshape(len(had), ks)
                for j in MEAN_ROWS
            ],
            axis=1,
        )
        before[had] = True
    if collection.missing_queries == "zero":
        counts = means.counts + count_delta
    else:
        counts = means.counts + after - before
    moved = (counts != means.counts) | (old != fresh).any(axis=(1, 2))
    if broken:
        moved &= ~np.isin(run_ids, broken)
    rows = np.flatnonzero(moved)
    means.counts = counts
    means.move(rows, old[rows], fresh[rows])
    overflow = means.overflow(rows)
    written: dict[tuple[int, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for i, r in enumerate(rows):
        sums = [score_packs.pack_sums(means.sums[r, m]) for m in range(3)]
        moved_sums = tuple(m for m in range(3) if sums[m] != stored_sums[r][m])
        written[moved_sums].append(
            (
                run_ids[r],
                int(means.counts[r]),
                json.dumps(overflow[i]),
                *(sums[m] for m in moved_sums),
            )
        )
    return written, broken


def _json(value: Any) -> dict[str, str]:
    """A JSON column as read by raw SQL: loaded on PostgreSQL (jsonb), text on SQLite;
    None for an empty one."""
    if value is None:
        return {}
    if isinstance(value, str | bytes):
        loaded: dict[str, str] = json.loads(value)
        return loaded
    return dict(value)
