"""Effective grades: what counts for scoring when several assessors or an adjudication judged."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from django.db import connection

from annotations.metrics import ndcg
from annotations.models import (
    Adjudication,
    Collection,
    Judgement,
)

if TYPE_CHECKING:
    pass


def _aggregate(
    grades_by_doc: dict[int, list[int]], adjudicated: dict[int, int], rule: str
) -> dict[int, int]:
    # Every rule gives a lone grade back unchanged: most pairs have one assessor.
    effective = {
        doc: grades[0] if len(grades) == 1 else ndcg.effective_grade(grades, rule)
        for doc, grades in grades_by_doc.items()
    }
    effective.update(adjudicated)
    return effective


def effective_grades_statement(*, query_id: int) -> tuple[str, list[Any]]:
    """The read behind `effective_grades` (rows: document id, grade, adjudication flag,
    stale flag)."""
    return (
        f"SELECT document_id, grade, 0, stale FROM {Judgement._meta.db_table} "
        "WHERE query_id = %s "
        f"UNION ALL SELECT document_id, grade, 1, FALSE FROM {Adjudication._meta.db_table} "
        "WHERE query_id = %s",
        [query_id, query_id],
    )


def effective_grades_from_rows(
    rows: Iterable[tuple[int, int, int, Any]], rule: str, *, include_stale: bool = True
) -> dict[int, int]:
    """Document id -> effective grade from `effective_grades_statement`'s rows; stale
    judgements left out unless `include_stale` (an adjudication always counts)."""
    grades_by_doc: dict[int, list[int]] = {}
    adjudicated: dict[int, int] = {}
    for document_id, grade, adjudication, stale in rows:
        if adjudication:
            adjudicated[document_id] = grade
        elif stale and not include_stale:
            continue
        elif document_id in grades_by_doc:
            grades_by_doc[document_id].append(grade)
        else:
            grades_by_doc[document_id] = [grade]
    return _aggregate(grades_by_doc, adjudicated, rule)


def effective_grades(*, query_id: int, rule: str, include_stale: bool = True) -> dict[int, int]:
    """Document id -> effective grade for every judged document of one query.

    Several assessors' grades are combined by the collection's rule; an organiser's
    adjudication overrides them. Raw SQL, one statement: this runs on every judgement, for
    every judged document of the query.
    """
    sql, params = effective_grades_statement(query_id=query_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return effective_grades_from_rows(cursor.fetchall(), rule, include_stale=include_stale)


def effective_grades_by_query(
    *, collection: Collection, query_ids: Iterable[int] | None = None
) -> Iterator[tuple[int, dict[int, int]]]:
    """(query id, effective grades) for every judged query of a collection (or of those of
    `query_ids`), in query id order.

    Streams judgements ordered by query so only one query's grades are held at a time.
    Adjudications override judged pairs only (a pair is adjudicated because it was judged).
    """
    adjudications = Adjudication.objects.filter(query__collection=collection)
    judgements = Judgement.objects.filter(query__collection=collection)
    if collection.stale_judgements == "exclude":
        judgements = judgements.filter(stale=False)
    if query_ids is not None:
        wanted = list(query_ids)
        adjudications = adjudications.filter(query_id__in=wanted)
        judgements = judgements.filter(query_id__in=wanted)
    adjudicated: dict[int, dict[int, int]] = defaultdict(dict)
    for query_id, document_id, grade in adjudications.values_list(
        "query_id", "document_id", "grade"
    ):
        adjudicated[query_id][document_id] = grade
    current: int | None = None
    grades_by_doc: dict[int, list[int]] = defaultdict(list)
    rows = (
        judgements.order_by("query_id")
        .values_list("query_id", "document_id", "grade")
        .iterator(chunk_size=20000)
    )
    rule = collection.aggregation
    for query_id, document_id, grade in rows:
        if query_id != current:
            if current is not None:
                yield current, _aggregate(grades_by_doc, adjudicated.get(current, {}), rule)
            current, grades_by_doc = query_id, defaultdict(list)
        grades_by_doc[document_id].append(grade)
    if current is not None:
        yield current, _aggregate(grades_by_doc, adjudicated.get(current, {}), rule)
