"""One query recomputed after a judgement: read, score, write what moved."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from annotations import selectors
from annotations.bulk import (
    bulk_delete,
    bulk_insert,
    bulk_update,
    execute,
    pipeline,
    reads,
)
from annotations.formats import score_bytes
from annotations.models import Collection, IdealScore, Query, QueryScore, Run, RunScore
from annotations.scores import query_plan
from annotations.scores.computing import (
    QUERY_SCORE_COLUMNS,
    QueryScores,
    measures_depth,
    score_rankings,
    score_ranks,
    synchronous_commit_off,
)
from annotations.scores.kept_ranks import (
    KeptRanks,
    RankingRow,
    keeps_ranks,
    kept_ranks,
    kept_ranks_write,
    qrels_documents,
    stale_runs,
)


def scores_recompute_query(*, query_id: int, force: bool = False) -> bool:
    """Recompute one query for every run; False if nothing to do.

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
                "c.stale_judgements, c.machine_grades, c.measures "
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
            *stored_statements(query_id),
            (
                "SELECT s.run_id, s.cutoffs "
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
                machine_rule=collection.machine_grades,
            )
            ranking_rows = next(results)
            kept = None
            if grades and keeps_ranks(collection.kept_measures):
                # Measures that read deeper than the heads (AP, R-prec...) read the kept
                # ranks of the qrels documents; only rankings whose kept ranks are not
                # current (a document entered the qrels, a run was imported) are read whole.
                kept = _kept_ranks(ranking_rows, grades)
                new = score_ranks(collection, grades, kept.run_ids, kept.ranks)
            else:
                rankings = (
                    selectors.scoring_rankings_from_rows(
                        # A ranking whose ranks are kept (from a former measure set) comes
                        # without its head: read whole, as one whose head is too short.
                        ((run, size, head or b"") for run, size, head, *_ in ranking_rows),
                        query_id=query_id,
                        depth=max(collection.sorted_cutoffs),
                        grades=grades,
                        needed=measures_depth(collection.kept_measures),
                    )
                    if grades
                    else {}
                )
                new = score_rankings(collection, grades, rankings)
            stored_rows, ideal_rows, run_rows = next(results), next(results), next(results)
        _store_query(
            collection,
            query_id,
            new,
            stored=stored_from_rows(stored_rows),
            old_ideal=dict(ideal_rows),
            run_layouts=dict(run_rows),
            version=version,
            kept=kept,
        )
    return True


def stored_statements(query_id: int) -> list[tuple[str, list[Any], bool]]:
    """The reads of one query's stored scores (as `reads` takes them): its per-query rows,
    then its IDCGs; `stored_from_rows` and `dict` make them what `_store_query` compares."""
    return [
        (
            "SELECT run_id, cutoffs, ndcg, dcg, judged, ndcg_condensed, measures, measure_values "
            f"FROM {QueryScore._meta.db_table} WHERE query_id = %s",
            [query_id],
            True,
        ),
        (f"SELECT k, idcg FROM {IdealScore._meta.db_table} WHERE query_id = %s", [query_id], True),
    ]


def stored_from_rows(rows: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    """Run -> (layout, packed columns, measures layout, packed values) of stored rows."""
    return {
        run_id: (cutoffs, *map(bytes, columns), measures, bytes(measure_values))
        for run_id, cutoffs, *columns, measures, measure_values in rows
    }


def _kept_ranks(rows: Sequence[RankingRow], grades: Mapping[int, int]) -> KeptRanks:
    """The query's rankings reduced to their qrels ranks: the kept ones where current, the
    others found in the whole rankings (a ranking deleted meanwhile is left out)."""
    documents = qrels_documents(grades)
    stale = set(stale_runs(rows, documents))
    ranking_of = {row[0]: row[3] for row in rows if row[0] in stale}
    read = selectors.rankings_by_id(list(ranking_of.values()))
    whole = {run: read[ranking] for run, ranking in ranking_of.items() if ranking in read}
    present = [row for row in rows if row[0] not in stale or row[0] in whole]
    return kept_ranks(present, documents, whole)


def _collection_from_row(row: tuple[Any, ...]) -> Collection:
    """The scoring settings of a collection read by raw SQL (an instance not to be saved)."""
    (
        collection_id,
        gain,
        missing_queries,
        aggregation,
        cutoffs,
        stale_judgements,
        machine,
        measures,
    ) = row
    if isinstance(cutoffs, str | bytes):  # JSON as text (SQLite, or jsonb loaded as text)
        cutoffs = json.loads(cutoffs)
    if isinstance(measures, str | bytes):
        measures = json.loads(measures)
    return Collection(
        id=collection_id,
        gain=gain,
        missing_queries=missing_queries,
        aggregation=aggregation,
        cutoffs=cutoffs,
        stale_judgements=stale_judgements,
        machine_grades=machine,
        measures=measures,
    )


def _store_query(
    collection: Collection,
    query_id: int,
    new: QueryScores,
    *,
    stored: dict[int, tuple[Any, ...]],
    old_ideal: dict[int, float],
    run_layouts: dict[int, str],
    version: int,
    kept: KeptRanks | None,
) -> None:
    """Write what changed for one query (`query_plan.plan_query`) and mark `version` scored.

    `stored`, `old_ideal` and `run_layouts` are the query's stored scores (run -> layout and
    packed values), its stored IDCGs and the layout of every RunScore row of the
    collection, read under the collection lock. The run means are not written: readers
    compute them from the per-query values; a run whose values moved has its RunScore's
    `updated` set (the time pages show as "last recomputed"). `kept`: the kept qrels ranks
    that changed.
    """
    writes = query_plan.plan_query(
        score_bytes.layout(collection.sorted_cutoffs),
        query_id,
        new,
        stored=stored,
        old_ideal=old_ideal,
        run_layouts=run_layouts,
    )
    # Inserts and deletes first (rare: a query's first or last judgement, a run's first
    # result for it); COPY cannot run inside the pipeline below.
    bulk_insert(QueryScore, QUERY_SCORE_COLUMNS, writes.inserts)
    bulk_delete(
        QueryScore, key=("query_id", "run_id"), keys=[(query_id, r) for r in writes.deletes]
    )
    bulk_delete(
        IdealScore, key=("query_id", "k"), keys=[(query_id, k) for k in writes.ideal_deletes]
    )
    bulk_insert(
        IdealScore, ("query_id", "k", "idcg"), [(query_id, *row) for row in writes.ideal_inserts]
    )
    if kept is not None:
        kept_ranks_write([(query_id, kept)], updates=False)
    # The updates go out without waiting: the server applies them back to back.
    with pipeline():
        synchronous_commit_off()
        for moved, changed in writes.updates.items():
            bulk_update(
                QueryScore,
                key=("query_id", "run_id"),
                columns=("cutoffs", *query_plan.moved_columns_of(moved)),
                rows=changed,
            )
        bulk_update(
            IdealScore,
            key=("query_id", "k"),
            columns=("idcg",),
            rows=[(query_id, *row) for row in writes.ideal_updates],
        )
        if kept is not None:
            kept_ranks_write([(query_id, kept)], inserts=False)
        if writes.touched:
            execute(*_touch_statement(writes.touched, timezone.now()))
        if writes.unscored:
            bulk_update(
                Run, key=("id",), columns=("scored_at",), rows=[(r, None) for r in writes.unscored]
            )
        execute(
            f"UPDATE {Query._meta.db_table} SET scored_version = %s WHERE id = %s",
            [version, query_id],
        )


def _touch_statement(run_ids: list[int], now: datetime) -> tuple[str, list[Any]]:
    """The update of the RunScore rows of `run_ids` to `updated = now`."""
    table = RunScore._meta.db_table
    if connection.vendor == "postgresql":
        return f"UPDATE {table} SET updated = %s WHERE run_id = ANY(%s)", [now, run_ids]
    marks = ", ".join(["%s"] * len(run_ids))
    return f"UPDATE {table} SET updated = %s WHERE run_id IN ({marks})", [now, *run_ids]
