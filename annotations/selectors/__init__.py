"""Reads shaped for scoring, exports and pages; the modules beside this one hold the rest, and
the grades, rankings and qrels reads are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import F, QuerySet

from annotations.models import Collection, Judgement, Query, Run
from annotations.selectors.grades import (
    collection_effective_grades,
    effective_grades,
    effective_grades_by_query,
    effective_grades_from_rows,
    effective_grades_statement,
)
from annotations.selectors.qrels import qrels_lines, qrels_rows, run_rows
from annotations.selectors.rankings import (
    query_rankings,
    ranking_heads_statement,
    rankings_by_id,
    scoring_rankings,
    scoring_rankings_from_rows,
    scoring_rankings_statement,
    top_documents,
    whole_rankings,
)

if TYPE_CHECKING:
    from annotations.selectors.stored_scores import RunMean


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
    """How many queries, documents, runs and judgements the collection holds, counted once per
    state: the scores stamp moves with every query, run and judgement; documents are never
    deleted one by one, so the newest one's id moves with their count. (Counting the
    judgements of a Robust04-sized collection reads 300,000 rows, on a page people reload.)"""
    from django.core.cache import cache

    from annotations.models import Document
    from annotations.selectors.scores_state import scores_state

    newest = (
        Document.objects.filter(collection=collection).order_by("-id").values_list("id").first()
    )
    stamp = scores_state(collection=collection).stamp
    key = f"collection-counts:{collection.id}:{stamp}:{newest[0] if newest else 0}"
    counts = cache.get(key)
    if not isinstance(counts, dict):
        counts = {
            "queries": Query.objects.filter(collection=collection).count(),
            "documents": collection.documents.count(),
            "runs": Run.objects.filter(collection=collection).count(),
            "judgements": Judgement.objects.filter(query__collection=collection).count(),
        }
        cache.set(key, counts, 3600)
    return counts


__all__ = [
    "collection_counts",
    "collection_effective_grades",
    "collections_visible",
    "cutoff_from",
    "effective_grades",
    "effective_grades_by_query",
    "effective_grades_from_rows",
    "effective_grades_statement",
    "leaderboard_rows",
    "pending_count",
    "qrels_lines",
    "qrels_rows",
    "query_rankings",
    "ranking_heads_statement",
    "rankings_by_id",
    "run_rows",
    "runs_of",
    "scoring_rankings",
    "scoring_rankings_from_rows",
    "scoring_rankings_statement",
    "top_documents",
    "whole_rankings",
]
