"""The runs page's list: each run with its owner, how many queries and results it holds."""

from __future__ import annotations

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Coalesce

from annotations.models import Collection, Run


def runs_listed(*, collection: Collection) -> QuerySet[Run]:
    """Runs by name, annotated with `query_count` and `result_count` (from the rankings)."""
    return (
        Run.objects.filter(collection=collection)
        .select_related("owner")
        .annotate(query_count=Count("rankings"), result_count=Coalesce(Sum("rankings__size"), 0))
        .order_by("name")
    )
