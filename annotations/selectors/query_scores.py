"""A query's page: every run's stored score for it, its judged documents, rankings side by side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Q

from annotations.models import Document, IdealScore, Query, Ranking, Run
from annotations.selectors import collection_effective_grades, query_rankings
from annotations.selectors.stored_scores import is_judged, stored_rows_at


@dataclass(frozen=True)
class RunOnQuery:
    run: Run
    ndcg: float | None
    judged: float | None
    answered: bool


@dataclass(frozen=True)
class JudgedDocument:
    docno: str
    title: str
    grade: int
    judgements: int
    stale: int = 0  # judgements given before the document's text last changed


@dataclass(frozen=True)
class RankedDocument:
    position: int
    docno: str
    title: str
    grade: int | None  # None: unjudged (no grade, or a negative "pooled, not judged" one)


@dataclass(frozen=True)
class QueryOverview:
    query: Query
    k: int
    idcg: float | None
    runs: list[RunOnQuery]
    pending: bool


def query_overview(*, query: Query, k: int) -> QueryOverview:
    """Every run's stored nDCG@k for the query (and its IDCG@k)."""
    collection = query.collection
    stored = {
        run_id: (values[0], values[2])
        for run_id, _, values in stored_rows_at(collection, k, query_ids=[query.id], measures=3)
    }
    answered = set(Ranking.objects.filter(query=query).values_list("run_id", flat=True))
    runs: list[RunOnQuery] = []
    for run in Run.objects.filter(collection=collection).order_by("name"):
        values = stored.get(run.id)
        runs.append(
            RunOnQuery(
                run=run,
                ndcg=values[0] if values else None,
                judged=values[1] if values else None,
                answered=run.id in answered,
            )
        )
    runs.sort(key=lambda r: (r.ndcg is None, -(r.ndcg or 0.0), r.run.name))
    idcg = IdealScore.objects.filter(query=query, k=k).values_list("idcg", flat=True).first()
    return QueryOverview(query=query, k=k, idcg=idcg, runs=runs, pending=query.scores_pending)


@dataclass(frozen=True)
class QueryRunOrder:
    """What the query page shows of every run outside its cached table, in plain values (a
    process caches it per scores stamp: model instances would cost more to unpickle than
    to read again): run names best first, those that answered the query, IDCG@k, pending."""

    names: tuple[str, ...]
    answered: tuple[str, ...]
    idcg: float | None
    pending: bool


def query_run_order(overview: QueryOverview) -> QueryRunOrder:
    return QueryRunOrder(
        names=tuple(row.run.name for row in overview.runs),
        answered=tuple(row.run.name for row in overview.runs if row.answered),
        idcg=overview.idcg,
        pending=overview.pending,
    )


def query_judged(*, query: Query) -> list[JudgedDocument]:
    """The query's judged documents with effective grades and judgement counts (organisers
    see them on the query page), best grade first."""
    grades = collection_effective_grades(query_id=query.id, collection=query.collection)
    counts = {
        document_id: (n, stale)
        for document_id, n, stale in query.judgements.values("document_id")
        .annotate(n=Count("id"), stale_n=Count("id", filter=Q(stale=True)))
        .values_list("document_id", "n", "stale_n")
    }
    documents = {
        d.id: d for d in Document.objects.filter(id__in=list(grades)).only("docno", "title")
    }
    judged = sorted(
        (
            JudgedDocument(
                docno=documents[doc].docno,
                title=documents[doc].title,
                grade=grade,
                judgements=counts.get(doc, (0, 0))[0],
                stale=counts.get(doc, (0, 0))[1],
            )
            for doc, grade in grades.items()
        ),
        key=lambda d: (-d.grade, d.docno),
    )
    return judged


def query_rankings_side_by_side(
    *, query: Query, runs: Sequence[Run], k: int
) -> dict[int, list[RankedDocument]]:
    """run id -> the run's top k for the query with each document's effective grade."""
    grades = collection_effective_grades(query_id=query.id, collection=query.collection)
    tops = query_rankings(query_id=query.id, run_ids=[run.id for run in runs], depth=k)
    documents = {
        d.id: d
        for d in Document.objects.filter(
            id__in={doc for docs in tops.values() for doc in docs}
        ).only("docno", "title")
    }
    rankings: dict[int, list[RankedDocument]] = {run.id: [] for run in runs}
    for run_id, docs in tops.items():
        for position, document_id in enumerate(docs, start=1):
            grade = grades.get(document_id)
            document = documents[document_id]
            rankings[run_id].append(
                RankedDocument(
                    position, document.docno, document.title, grade if is_judged(grade) else None
                )
            )
    return rankings


def query_unjudged_top(*, query: Query, k: int) -> list[int]:
    """Document ids in any run's top k for the query that have no judgement yet."""
    grades = collection_effective_grades(query_id=query.id, collection=query.collection)
    retrieved = {
        doc for docs in query_rankings(query_id=query.id, depth=k).values() for doc in docs
    }
    return sorted(doc for doc in retrieved if not is_judged(grades.get(doc)))
