"""Effective grades: what counts for scoring when several assessors or an adjudication judged."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Any

from django.db import connection

from annotations.metrics import ndcg
from annotations.metrics.machine_grades import counted_grades
from annotations.models import Adjudication, Collection, Judgement, MachineJudge


def machine_accounts(collection: Collection) -> set[int]:
    """The accounts of the collection's machine judges (whose judgements are machine grades)."""
    judges = MachineJudge.objects.filter(collection=collection)
    return set(judges.values_list("account_id", flat=True))


def _with_machine(
    people: dict[int, list[int]], machine: dict[int, list[int]], machine_rule: str
) -> dict[int, list[int]]:
    """The grades that count per document under the rule for machine grades."""
    merged = dict(people)
    for doc, grades in machine.items():
        counted = counted_grades(people.get(doc, ()), grades, machine_rule)
        if counted:
            merged[doc] = counted
    return merged


def _aggregate(
    grades_by_doc: dict[int, list[int]],
    adjudicated: dict[int, int],
    rule: str,
    machine_by_doc: dict[int, list[int]] | None = None,
    machine_rule: str = "assessor",
) -> dict[int, int]:
    if machine_by_doc:
        grades_by_doc = _with_machine(grades_by_doc, machine_by_doc, machine_rule)
    # Every rule gives a lone grade back unchanged: most pairs have one assessor.
    effective = {
        doc: grades[0] if len(grades) == 1 else ndcg.effective_grade(grades, rule)
        for doc, grades in grades_by_doc.items()
    }
    effective.update(adjudicated)
    return effective


def effective_grades_statement(*, query_id: int) -> tuple[str, list[Any]]:
    """The read behind `effective_grades` (rows: document id, grade, adjudication flag,
    stale flag, machine flag)."""
    machines = f"SELECT account_id FROM {MachineJudge._meta.db_table}"
    return (
        f"SELECT document_id, grade, 0, stale, assessor_id IN ({machines}) "
        f"FROM {Judgement._meta.db_table} WHERE query_id = %s "
        "UNION ALL SELECT document_id, grade, 1, FALSE, FALSE "
        f"FROM {Adjudication._meta.db_table} WHERE query_id = %s",
        [query_id, query_id],
    )


def effective_grades_from_rows(
    rows: Iterable[tuple[int, int, int, Any, Any]],
    rule: str,
    *,
    include_stale: bool = True,
    machine_rule: str = "assessor",
) -> dict[int, int]:
    """Document id -> effective grade from `effective_grades_statement`'s rows; stale
    judgements left out unless `include_stale` (an adjudication always counts), machine
    grades counted by `machine_rule` (`annotations.metrics.machine_grades`)."""
    rows = rows if isinstance(rows, list) else list(rows)
    plain = _plain_grades(rows, rule, include_stale=include_stale)
    if plain is not None:
        return plain
    grades_by_doc: dict[int, list[int]] = {}
    machine_by_doc: dict[int, list[int]] = {}
    adjudicated: dict[int, int] = {}
    for document_id, grade, adjudication, stale, machine in rows:
        if adjudication:
            adjudicated[document_id] = grade
            continue
        if stale and not include_stale:
            continue
        held = machine_by_doc if machine else grades_by_doc
        if document_id in held:
            held[document_id].append(grade)
        else:
            held[document_id] = [grade]
    return _aggregate(grades_by_doc, adjudicated, rule, machine_by_doc, machine_rule)


def _plain_grades(
    rows: list[tuple[int, int, int, Any, Any]], rule: str, *, include_stale: bool
) -> dict[int, int] | None:
    """The common case, read without a Python loop over every row: people's grades only (no
    adjudication, no machine grade, nothing stale left out). Most documents have one grade,
    which every rule gives back unchanged; only the documents graded more than once are
    combined by the rule. The same grades in the same order as the general path's (a
    document first seen first). None when the rows are not that case."""
    if any(map(_ADJUDICATION, rows)) or any(map(_MACHINE, rows)):
        return None
    if not include_stale and any(map(_STALE, rows)):
        return None
    documents = list(map(_DOCUMENT, rows))
    grades = list(map(_GRADE, rows))
    effective = dict(zip(documents, grades, strict=True))
    if len(effective) == len(rows):
        return effective
    several: dict[int, list[int]] = {
        document: [] for document, count in Counter(documents).items() if count > 1
    }
    for document, grade in zip(documents, grades, strict=True):
        if document in several:
            several[document].append(grade)
    for document, graded in several.items():
        effective[document] = ndcg.effective_grade(graded, rule)
    return effective


_DOCUMENT, _GRADE, _ADJUDICATION, _STALE, _MACHINE = (itemgetter(i) for i in range(5))


def effective_grades(
    *, query_id: int, rule: str, include_stale: bool = True, machine_rule: str = "assessor"
) -> dict[int, int]:
    """Document id -> effective grade for every judged document of one query.

    Several assessors' grades are combined by the collection's rule, machine judges' grades
    counted by its rule for them; an organiser's adjudication overrides both. Raw SQL, one
    statement: this runs on every judgement, for every judged document of the query.
    """
    sql, params = effective_grades_statement(query_id=query_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return effective_grades_from_rows(
            cursor.fetchall(), rule, include_stale=include_stale, machine_rule=machine_rule
        )


def collection_effective_grades(*, query_id: int, collection: Collection) -> dict[int, int]:
    """`effective_grades` of one query under its collection's rules."""
    return effective_grades(
        query_id=query_id,
        rule=collection.aggregation,
        include_stale=collection.stale_judgements == "count",
        machine_rule=collection.machine_grades,
    )


def effective_grades_by_query(
    *,
    collection: Collection,
    query_ids: Iterable[int] | None = None,
    machine_rule: str | None = None,
) -> Iterator[tuple[int, dict[int, int]]]:
    """(query id, effective grades) for every judged query of a collection (or of those of
    `query_ids`), in query id order, machine grades counted by the collection's rule (or by
    `machine_rule`); a query no grade counts for is left out.

    Streams judgements ordered by query so only one query's grades are held at a time.
    Adjudications override judged pairs only (a pair is adjudicated because it was judged).
    """
    machine_rule = machine_rule or collection.machine_grades
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
    machine_by_doc: dict[int, list[int]] = defaultdict(list)
    rows = (
        judgements.order_by("query_id")
        # the judge of a machine's account, in the same read (None: a person)
        .values_list("query_id", "document_id", "grade", "assessor__machine_judge__id")
        .iterator(chunk_size=20000)
    )
    rule = collection.aggregation

    def aggregated() -> Iterator[tuple[int, dict[int, int]]]:
        assert current is not None
        grades = _aggregate(
            grades_by_doc, adjudicated.get(current, {}), rule, machine_by_doc, machine_rule
        )
        if grades:
            yield current, grades

    for query_id, document_id, grade, judge_id in rows:
        if query_id != current:
            if current is not None:
                yield from aggregated()
            current, grades_by_doc, machine_by_doc = query_id, defaultdict(list), defaultdict(list)
        held = machine_by_doc if judge_id is not None else grades_by_doc
        held[document_id].append(grade)
    if current is not None:
        yield from aggregated()
