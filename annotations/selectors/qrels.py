"""The effective qrels and a run's rows as files write them, streamed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from django.db import connection

from annotations.formats import ranking_bytes, trec
from annotations.metrics.machine_grades import pair_grade
from annotations.models import (
    Adjudication,
    Collection,
    Document,
    Judgement,
    MachineJudge,
    Query,
    Ranking,
    Run,
)
from annotations.selectors.grades import machine_accounts

if TYPE_CHECKING:
    pass


def _grades_sql(collection: Collection) -> str:
    """The grade column of the export's COPY: the final grade where the database can tell
    it (an adjudication, or one grade that counts whatever the rule), else
    ``<U+0003>g1,g2,...`` with machine grades marked ``m`` for the rules to combine."""
    if collection.machine_grades == "assessor":
        return """CASE
            WHEN a.grade IS NOT NULL OR COUNT(*) = 1 THEN COALESCE(a.grade, MIN(j.grade))::text
            ELSE E'\\x03' || array_to_string(array_agg(j.grade), ',') END"""
    machine = (
        f"j.assessor_id IN (SELECT account_id FROM {MachineJudge._meta.db_table} "
        f"WHERE collection_id = {int(collection.id)})"
    )
    return f"""CASE
        WHEN a.grade IS NOT NULL THEN a.grade::text
        WHEN COUNT(*) = 1 AND NOT bool_or({machine}) THEN MIN(j.grade)::text
        ELSE E'\\x03' || string_agg(CASE WHEN {machine} THEN 'm' ELSE '' END || j.grade, ',')
        END"""


def _combined(collection: Collection, grades: bytes) -> int | None:
    """The effective grade of a pair from its ``g1,mg2,...`` grades (``m``: a machine's)."""
    people: list[int] = []
    machine: list[int] = []
    for grade in grades.split(b","):
        if grade.startswith(b"m"):
            machine.append(int(grade[1:]))
        else:
            people.append(int(grade))
    return pair_grade(
        people,
        machine,
        None,
        aggregation=collection.aggregation,
        rule=collection.machine_grades,
    )


def qrels_lines(*, collection: Collection, chunk_bytes: int = 1 << 16) -> Iterator[bytes]:
    """The effective qrels as TREC text in pieces of about `chunk_bytes`, ordered by qid then
    docno: the bytes of ``trec.qrels_text(qrels_rows(...))``, streamed for downloads.

    On PostgreSQL the database writes the lines itself (``COPY ... TO STDOUT``, so memory
    stays flat at any size): a pair judged once, or adjudicated, as its final line; a pair
    with several unadjudicated grades as ``qid 0 docno <U+0003>g1,g2,...``, which the
    collection's rule turns into one grade here. CSV mode with a delimiter and a quote that
    no stored id can hold (ids have no control characters) copies the text as it is. Ids
    are not checked again: every stored id passed the id rule when it came in.
    """
    if connection.vendor != "postgresql":
        for piece in trec.qrels_text(qrels_rows(collection=collection)):
            yield piece.encode()
        return
    stale = " AND NOT j.stale" if collection.stale_judgements == "exclude" else ""
    sql = f"""
        COPY (
            SELECT q.qid || ' 0 ' || d.docno || ' ' || {_grades_sql(collection)}
            FROM {Judgement._meta.db_table} j
            JOIN {Query._meta.db_table} q ON q.id = j.query_id
            JOIN {Document._meta.db_table} d ON d.id = j.document_id
            LEFT JOIN {Adjudication._meta.db_table} a
                   ON a.query_id = j.query_id AND a.document_id = j.document_id
            WHERE q.collection_id = {int(collection.id)}{stale}
            GROUP BY q.qid, d.docno, a.grade
            ORDER BY q.qid, d.docno
        ) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01')
    """
    connection.ensure_connection()
    with connection.connection.cursor() as cursor, cursor.copy(sql) as copy:
        pending: list[bytes] = []
        size = 0
        for data in copy:
            row = bytes(data)
            if b"\x03" in row:
                head, _, grades = row.rstrip(b"\n").partition(b"\x03")
                combined = _combined(collection, grades)
                if combined is None:
                    continue  # only machine grades, which this collection does not count
                row = head + str(combined).encode() + b"\n"
            pending.append(row)
            size += len(row)
            if size >= chunk_bytes:
                yield b"".join(pending)
                pending, size = [], 0
        if pending:
            yield b"".join(pending)


def qrels_rows(*, collection: Collection) -> Iterator[tuple[str, str, int]]:
    """(qid, docno, effective grade) for every judged pair, ordered by qid then docno."""
    adjudicated = {
        (query_id, document_id): grade
        for query_id, document_id, grade in Adjudication.objects.filter(
            query__collection=collection
        ).values_list("query_id", "document_id", "grade")
    }
    judgements = Judgement.objects.filter(query__collection=collection)
    if collection.stale_judgements == "exclude":
        judgements = judgements.filter(stale=False)
    rows = (
        judgements.order_by("query__qid", "document__docno", "assessor_id")
        .values_list(
            "query_id", "document_id", "query__qid", "document__docno", "grade", "assessor_id"
        )
        .iterator(chunk_size=20000)
    )
    machines = machine_accounts(collection)
    pair: tuple[int, int] | None = None
    ids: tuple[str, str] = ("", "")
    people: list[int] = []
    machine: list[int] = []

    def final() -> Iterator[tuple[str, str, int]]:
        assert pair is not None
        grade = pair_grade(
            people,
            machine,
            adjudicated.get(pair),
            aggregation=collection.aggregation,
            rule=collection.machine_grades,
        )
        if grade is not None:
            yield *ids, grade

    for query_id, document_id, qid, docno, grade, assessor_id in rows:
        if (query_id, document_id) != pair:
            if pair is not None:
                yield from final()
            pair, ids, people, machine = (query_id, document_id), (qid, docno), [], []
        (machine if assessor_id in machines else people).append(grade)
    if pair is not None:
        yield from final()


def run_rows(*, run: Run) -> Iterator[tuple[str, str, int, float, str]]:
    """(qid, docno, rank, score, tag) of a run, by qid, each query in effective order.

    A run submitted without scores is written with score = -position, so every tool reads
    it back in the stored order.
    """
    rankings = (
        Ranking.objects.filter(run=run)
        .order_by("query__qid")
        .values_list("query__qid", "documents", "scores", "ranks")
        .iterator(chunk_size=200)
    )
    for qid, documents, scores, ranks in rankings:
        ids = ranking_bytes.unpack_ids(documents)
        docnos = dict(Document.objects.filter(id__in=ids).values_list("id", "docno"))
        values = ranking_bytes.unpack_scores(scores) if scores else None
        for position, (document_id, rank) in enumerate(
            zip(ids, ranking_bytes.unpack_ranks(ranks), strict=True), start=1
        ):
            score = float(-position) if values is None else values[position - 1]
            yield qid, docnos[document_id], rank, score, run.name
