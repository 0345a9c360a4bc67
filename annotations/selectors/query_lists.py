"""The queries page (every query's judged counts, pool status, mean score) and a document page."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from django.core.cache import cache
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet

from annotations.formats import score_bytes
from annotations.models import (
    Adjudication,
    Collection,
    Document,
    IdealScore,
    Judgement,
    PoolEntry,
    Query,
    Run,
)
from annotations.selectors.scores_state import scores_state
from annotations.selectors.stored_scores import stored_rows_at

# Rows of one page of queries, kept per process for as long as nothing they show moved: a
# page's judged counts read every judgement of its queries (a Robust04-sized page: 100
# queries, 120,000 judgements), which people reload while they judge.
CACHE_SECONDS = 3600


@dataclass(frozen=True)
class QueryRow:
    qid: str
    title: str
    judgements: int
    judged_documents: int
    pooled: int  # distinct documents of the query in any pool
    pooled_judged: int  # of those, how many somebody judged
    mean_ndcg: float | None  # over the runs, as the run means count them; None: not evaluated


def queries_listed(*, collection: Collection, search: str = "") -> QuerySet[Query]:
    """The collection's queries in qid order; `search` matches the qid or the title."""
    queries = Query.objects.filter(collection=collection).order_by("qid").only("qid", "title")
    if search:
        queries = queries.filter(Q(qid__icontains=search) | Q(title__icontains=search))
    return queries


def query_rows_read(*, collection: Collection, queries: Sequence[Query], k: int) -> list[QueryRow]:
    """`query_rows`, computed once per state of what they show: the scores stamp (every
    judgement, run and score) and the pools' entries."""
    pools = PoolEntry.objects.filter(pool__collection=collection).aggregate(
        n=Count("id"), last=Max("id")
    )
    stamp = scores_state(collection=collection).stamp
    ids = hashlib.sha256(",".join(str(query.id) for query in queries).encode()).hexdigest()[:16]
    key = f"query-rows:{collection.id}:{k}:{stamp}:{pools['n']}:{pools['last']}:{ids}"
    rows = cache.get(key)
    if not isinstance(rows, list):
        rows = query_rows(collection=collection, queries=queries, k=k)
        cache.set(key, rows, CACHE_SECONDS)
    # titles as they are now (a topics import may retitle a query without moving a score)
    return [replace(row, title=query.title) for row, query in zip(rows, queries, strict=True)]


def query_rows(*, collection: Collection, queries: Sequence[Query], k: int) -> list[QueryRow]:
    """One row per query of one page: a few grouped reads over those queries only."""
    ids = [query.id for query in queries]
    judged = {
        row["query_id"]: (row["n"], row["documents"])
        for row in Judgement.objects.filter(query_id__in=ids)
        .values("query_id")
        .annotate(n=Count("id"), documents=Count("document_id", distinct=True))
    }
    somebody_judged = Judgement.objects.filter(
        query_id=OuterRef("query_id"), document_id=OuterRef("document_id")
    )
    pooled = {
        row["query_id"]: (row["n"], row["judged"])
        for row in PoolEntry.objects.filter(query_id__in=ids)
        .annotate(has_judgement=Exists(somebody_judged))
        .values("query_id")
        .annotate(
            n=Count("document_id", distinct=True),
            judged=Count("document_id", distinct=True, filter=Q(has_judgement=True)),
        )
    }
    evaluated = set(
        IdealScore.objects.filter(query_id__in=ids, k=k).values_list("query_id", flat=True)
    )
    # The runs with stored means, as on the leaderboard: a run still to be scored neither
    # adds a value nor counts (under "zero" it would otherwise pull every mean down).
    scored = list(
        Run.objects.filter(
            collection=collection,
            run_scores__cutoffs=score_bytes.layout(collection.sorted_cutoffs),
        ).values_list("id", flat=True)
    )
    per_query: dict[int, list[float]] = defaultdict(list)
    rows_at = stored_rows_at(collection, k, run_ids=scored, query_ids=ids, measures=1)
    for _, query_id, values in rows_at:
        per_query[query_id].append(values[0])
    stored = {query_id: (math.fsum(values), len(values)) for query_id, values in per_query.items()}
    runs = len(scored)
    rows = []
    for query in queries:
        total, answered = stored.get(query.id, (0.0, 0))
        # zero mode: a run without results for the query counts 0, as in the run means
        count = runs if collection.missing_queries == "zero" else answered
        mean = (total or 0.0) / count if query.id in evaluated and count else None
        n, documents = judged.get(query.id, (0, 0))
        pool_n, pool_judged = pooled.get(query.id, (0, 0))
        rows.append(QueryRow(query.qid, query.title, n, documents, pool_n, pool_judged, mean))
    return rows


@dataclass(frozen=True)
class DocumentJudgement:
    qid: str
    assessor: str
    grade: int
    note: str
    updated: datetime


@dataclass(frozen=True)
class DocumentAdjudication:
    qid: str
    organiser: str
    grade: int
    note: str


def document_judgements(*, document: Document) -> list[DocumentJudgement]:
    """Who judged the document, for which query, with what grade and note."""
    return [
        DocumentJudgement(qid, assessor, grade, note, updated)
        for qid, assessor, grade, note, updated in Judgement.objects.filter(document=document)
        .order_by("query__qid", "assessor__username")
        .values_list("query__qid", "assessor__username", "grade", "note", "updated")
    ]


def document_adjudications(*, document: Document) -> list[DocumentAdjudication]:
    return [
        DocumentAdjudication(qid, organiser, grade, note)
        for qid, organiser, grade, note in Adjudication.objects.filter(document=document)
        .order_by("query__qid")
        .values_list("query__qid", "organiser__username", "grade", "note")
    ]
