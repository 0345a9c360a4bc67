"""The admin of stored scores: read only, every cutoff of a packed row shown."""

from typing import Any

from django.contrib import admin

from annotations.admin._base import ReadOnlyAdmin
from annotations.formats import score_bytes
from annotations.models import (
    IdealScore,
    QueryScore,
    RunScore,
)
from annotations.selectors import stored_scores


def _per_cutoff(values: dict[int, Any], fields: tuple[str, ...]) -> str:
    """'k=5: ndcg 0.5, judged 1.0; k=10: ...' of packed values (the admin's text form)."""
    return "; ".join(
        f"k={k}: " + ", ".join(f"{name} {getattr(value, name)!r}" for name in fields)
        for k, value in values.items()
    )


@admin.register(QueryScore)
class QueryScoreAdmin(ReadOnlyAdmin):
    """One row per run and query, every cutoff packed (see `annotations.formats.score_bytes`)."""

    list_display = ["run", "query", "cutoffs", "first_ndcg"]
    list_filter = ["run__collection"]
    list_select_related = ["run", "query"]
    fields = ["run", "query", "cutoffs", "scores"]
    readonly_fields = ["scores"]

    @admin.display(description="nDCG at the first cutoff")
    def first_ndcg(self, obj: QueryScore) -> float:
        return float(score_bytes.floats(obj.ndcg)[0])

    @admin.display(description="scores per cutoff")
    def scores(self, obj: QueryScore) -> str:
        values = obj.per_cutoff()
        return _per_cutoff(values, ("ndcg", "dcg", "judged", "ndcg_condensed"))


@admin.register(RunScore)
class RunScoreAdmin(ReadOnlyAdmin):
    """One row per scored run; its means are computed from its per-query values, as every
    page computes them (`stored_scores.run_means_at`)."""

    list_display = ["run", "cutoffs", "first_ndcg", "updated"]
    list_filter = ["run__collection"]
    list_select_related = ["run", "run__collection"]
    fields = ["run", "cutoffs", "updated", "scores"]
    readonly_fields = ["scores"]

    @admin.display(description="mean nDCG at the first cutoff")
    def first_ndcg(self, obj: RunScore) -> float | None:
        means = _means(obj)
        return means[0].ndcg if means else None

    @admin.display(description="means per cutoff")
    def scores(self, obj: RunScore) -> str:
        values = {mean.k: mean for mean in _means(obj)}
        return _per_cutoff(values, ("queries", "ndcg", "ndcg_condensed", "judged"))


def _means(obj: RunScore) -> list[stored_scores.RunMean]:
    """The run's means at each of its collection's cutoffs (none if it is pending)."""
    collection = obj.run.collection
    return [
        mean
        for k in collection.sorted_cutoffs
        for mean in stored_scores.run_means_at(collection, k, runs=[obj.run])
    ]


@admin.register(IdealScore)
class IdealScoreAdmin(ReadOnlyAdmin):
    list_display = ["query", "k", "idcg"]
    list_select_related = ["query"]
