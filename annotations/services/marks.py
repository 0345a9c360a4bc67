"""Marking queries and judgements stale: the query's scores are pending until recomputed."""

from __future__ import annotations

from collections.abc import Iterable

from annotations.bulk import cursor
from annotations.ids import LOOKUP_CHUNK
from annotations.models import Collection, Judgement, JudgementHistory, Query
from annotations.scores import scores_schedule


def queries_mark_stale(query_ids: Iterable[int]) -> None:
    """Mark queries stale in the writing transaction and rescore them after it commits."""
    ids = sorted(set(query_ids))
    table = Query._meta.db_table
    owners: dict[int, int] = {}
    with cursor() as found:
        for start in range(0, len(ids), LOOKUP_CHUNK):
            chunk = ids[start : start + LOOKUP_CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            found.execute(
                f"UPDATE {table} SET judgements_version = judgements_version + 1 "
                f"WHERE id IN ({marks}) RETURNING id, collection_id",
                chunk,
            )
            owners.update(found.fetchall())
    scores_schedule(query_ids=ids, query_collections=owners)


def judgements_mark_stale(*, collection: Collection, document_ids: Iterable[int]) -> int:
    """Mark every judgement of these documents stale (their text changed under them), each
    with a history row, and rescore their queries (where the collection leaves stale
    judgements out, the scores change). Returns how many were marked."""
    marked = list(
        Judgement.objects.select_for_update()
        .filter(document_id__in=list(document_ids), stale=False)
        .values_list("id", "query_id", "document_id", "assessor_id", "grade", "note")
    )
    if not marked:
        return 0
    JudgementHistory.objects.bulk_create(
        JudgementHistory(
            query_id=query_id,
            document_id=document_id,
            assessor_id=assessor_id,
            old_grade=grade,
            new_grade=grade,
            note=note,
            source="stale",
        )
        for _, query_id, document_id, assessor_id, grade, note in marked
    )
    Judgement.objects.filter(id__in=[row[0] for row in marked]).update(stale=True)
    # Their queries change version either way: pages showing them refresh, and where stale
    # judgements are left out the scores change.
    queries_mark_stale({row[1] for row in marked})
    return len(marked)
