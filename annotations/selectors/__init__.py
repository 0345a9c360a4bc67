"""Reads shaped for scoring, exports and pages (more read modules sit beside this one)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from django.db import connection, models
from django.db.models import F, QuerySet
from django.db.models.functions import Substr

from annotations.bulk import fetch_binary
from annotations.formats import ranking_bytes, trec
from annotations.metrics import ndcg
from annotations.models import (
    HEAD_IDS,
    Adjudication,
    Collection,
    Document,
    Judgement,
    Query,
    Ranking,
    Run,
)

if TYPE_CHECKING:
    from annotations.selectors.stored_scores import RunMean


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


def query_rankings(
    *,
    query_id: int,
    depth: int | None = None,
    run_ids: Iterable[int] | None = None,
) -> dict[int, list[int]]:
    """Run id -> document ids in effective order for one query (the top `depth` if given)."""
    sql = f"SELECT run_id, documents FROM {Ranking._meta.db_table} WHERE query_id = %s"
    params: list[object] = [query_id]
    if run_ids is not None:
        wanted = list(run_ids)
        if not wanted:
            return {}
        sql += f" AND run_id IN ({', '.join(['%s'] * len(wanted))})"
        params.extend(wanted)
    # The hottest read of the platform (every judgement): raw SQL, bytea fetched in binary.
    return {
        run_id: ranking_bytes.unpack_ids(documents, depth)
        for run_id, documents in fetch_binary(sql, params)
    }


# Scoring first reads this many times max(k) documents of each ranking; the condensed list
# (unjudged documents removed) rarely needs more, and rankings that do are read whole.
SCORING_PREFIX_FACTOR = 4
_TABLE_SPAN = 1 << 22


def scoring_rankings_statement(
    *, query_id: int, depth: int, run_ids: Iterable[int] | None = None
) -> tuple[str, list[Any]] | None:
    """The read behind `scoring_rankings` (None: no run asked for); fetch it in binary."""
    prefix = depth * SCORING_PREFIX_FACTOR
    substring = "substring" if connection.vendor == "postgresql" else "substr"
    table = Ranking._meta.db_table
    # The copy of the top kept inside the row when it is deep enough, else the prefix of
    # the whole (out-of-line) ranking.
    column = "head" if prefix <= HEAD_IDS else "documents"
    sql = f"SELECT run_id, size, {substring}({column}, 1, %s) FROM {table} WHERE query_id = %s"
    params: list[Any] = [prefix * 8, query_id]
    if run_ids is not None:
        wanted = list(run_ids)
        if not wanted:
            return None
        sql += f" AND run_id IN ({', '.join(['%s'] * len(wanted))})"
        params.extend(wanted)
    return sql, params


def ranking_heads_statement(*, query_id: int) -> tuple[str, list[Any]]:
    """The copies of the top (see `Ranking.head`) of one query's rankings of every run, as
    rows for `scoring_rankings_from_rows`; fetch them in binary."""
    return (
        f"SELECT run_id, size, head FROM {Ranking._meta.db_table} WHERE query_id = %s",
        [query_id],
    )


def scoring_rankings_from_rows(
    rows: Iterable[tuple[int, int, bytes]], *, query_id: int, depth: int, grades: Mapping[int, int]
) -> dict[int, npt.NDArray[np.int64]]:
    """Rankings (arrays of document ids) from rows of (run, size, prefix of the packed ids);
    only the first `depth` times SCORING_PREFIX_FACTOR ids are used, and the few rankings
    whose prefix holds too few judged documents are read whole."""
    graded = np.fromiter(grades.keys(), dtype=np.int64, count=len(grades))
    values = np.fromiter(grades.values(), dtype=np.int64, count=len(grades))
    judged = graded[values >= 0]  # ndcg.is_judged
    rankings: dict[int, npt.NDArray[np.int64]] = {}
    prefix = depth * SCORING_PREFIX_FACTOR
    sizes: list[int] = []
    for run_id, size, documents in rows:
        rankings[run_id] = ranking_bytes.unpack_id_array(documents, prefix)
        sizes.append(size)
    if not rankings:
        return rankings
    # Judged documents in each prefix, all runs at once.
    arrays = list(rankings.values())
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    # A lookup table over the judged ids' span is ten times faster than sorting, and small
    # for the ids of one query's judgements; very spread ids are sorted instead.
    span = int(judged.max() - judged.min()) if judged.size else 0
    found = np.isin(np.concatenate(arrays), judged, kind="table" if span < _TABLE_SPAN else "sort")
    hits = np.concatenate(([0], np.cumsum(found)))
    ends = np.cumsum(lengths)
    seen = hits[ends] - hits[ends - lengths]
    short = [
        run_id
        for run_id, size, length, count in zip(rankings, sizes, lengths, seen, strict=True)
        if size > length and count < depth
    ]
    if short:
        for run_id, ids in query_rankings(query_id=query_id, run_ids=short).items():
            rankings[run_id] = np.array(ids, dtype=np.int64)
    return rankings


def scoring_rankings(
    *,
    query_id: int,
    depth: int,
    grades: Mapping[int, int],
    run_ids: Iterable[int] | None = None,
) -> dict[int, npt.NDArray[np.int64]]:
    """Run id -> as much of each ranking as scoring at cutoffs up to `depth` needs.

    nDCG@k and judged@k need the top `depth` documents; the condensed list needs the first
    `depth` judged ones. A prefix of every ranking is read (SQL substring: with uncompressed
    storage only those bytes are fetched), then the few rankings whose prefix holds fewer
    than `depth` judged documents are read whole.
    """
    statement = scoring_rankings_statement(query_id=query_id, depth=depth, run_ids=run_ids)
    if statement is None:
        return {}
    return scoring_rankings_from_rows(
        fetch_binary(*statement), query_id=query_id, depth=depth, grades=grades
    )


def top_documents(
    *,
    run_ids: Iterable[int] | None = None,
    query_ids: Iterable[int] | None = None,
    collection: Collection | None = None,
    depth: int | None = None,
) -> Iterator[tuple[int, int, list[int]]]:
    """(run id, query id, document ids in effective order, cut at `depth`) per ranking.

    The reads of pooling, bounds and side-by-side pages; streamed in (run, query) order.
    """
    rows = Ranking.objects.all()
    if collection is not None:
        rows = rows.filter(run__collection=collection)
    if run_ids is not None:
        rows = rows.filter(run_id__in=list(run_ids))
    if query_ids is not None:
        rows = rows.filter(query_id__in=list(query_ids))
    if depth is not None:
        # Only the top `depth` ids leave the database (8 bytes each), not whole rankings.
        rows = rows.annotate(
            top=Substr("documents", 1, depth * 8, output_field=models.BinaryField())
        )
    column = "documents" if depth is None else "top"
    for run_id, query_id, documents in (
        rows.order_by("run_id", "query_id")
        .values_list("run_id", "query_id", column)
        .iterator(chunk_size=500)
    ):
        yield run_id, query_id, ranking_bytes.unpack_ids(documents, depth)


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
            SELECT q.qid || ' 0 ' || d.docno || ' ' || CASE
                WHEN a.grade IS NOT NULL OR COUNT(*) = 1 THEN COALESCE(a.grade, MIN(j.grade))::text
                ELSE E'\\x03' || array_to_string(array_agg(j.grade), ',') END
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
    rule = collection.aggregation
    connection.ensure_connection()
    with connection.connection.cursor() as cursor, cursor.copy(sql) as copy:
        pending: list[bytes] = []
        size = 0
        for data in copy:
            row = bytes(data)
            if b"\x03" in row:
                head, _, grades = row.rstrip(b"\n").partition(b"\x03")
                combined = ndcg.effective_grade([int(g) for g in grades.split(b",")], rule)
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
        .values_list("query_id", "document_id", "query__qid", "document__docno", "grade")
        .iterator(chunk_size=20000)
    )
    pair: tuple[int, int] | None = None
    ids: tuple[str, str] = ("", "")
    grades: list[int] = []
    for query_id, document_id, qid, docno, grade in rows:
        if (query_id, document_id) != pair:
            if pair is not None:
                yield (
                    *ids,
                    adjudicated.get(pair, ndcg.effective_grade(grades, collection.aggregation)),
                )
            pair, ids, grades = (query_id, document_id), (qid, docno), []
        grades.append(grade)
    if pair is not None:
        yield *ids, adjudicated.get(pair, ndcg.effective_grade(grades, collection.aggregation))


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


def runs_of(*, collection: Collection) -> QuerySet[Run]:
    return Run.objects.filter(collection=collection).order_by("name")


def collections_visible(*, user: Any) -> QuerySet[Collection]:
    """Collections a user may open: all for staff, else those they are a member of."""
    if getattr(user, "is_staff", False):
        return Collection.objects.all()
    return Collection.objects.filter(memberships__user=user).distinct()


def cutoff_from(collection: Collection, raw: str | None) -> int:
    """The requested cutoff if the collection has it, else its middle default (10 for 5,10,20)."""
    cutoffs = collection.sorted_cutoffs
    if raw is not None and raw.isdigit() and int(raw) in cutoffs:
        return int(raw)
    return 10 if 10 in cutoffs else cutoffs[len(cutoffs) // 2]


def leaderboard_rows(*, collection: Collection, k: int) -> list[RunMean]:
    """Stored run means at k, best first (runs never scored are absent)."""
    from annotations.selectors.stored_scores import run_means_at

    return run_means_at(collection, k)


def pending_count(*, collection: Collection) -> int:
    """Queries and runs whose stored scores do not yet reflect the latest change."""
    return (
        Query.objects.filter(
            collection=collection, judgements_version__gt=F("scored_version")
        ).count()
        + Run.objects.filter(collection=collection, scored_at__isnull=True).count()
    )


def collection_counts(*, collection: Collection) -> dict[str, int]:
    return {
        "queries": Query.objects.filter(collection=collection).count(),
        "documents": collection.documents.count(),
        "runs": Run.objects.filter(collection=collection).count(),
        "judgements": Judgement.objects.filter(query__collection=collection).count(),
    }
