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
    """One row per run, the means at every cutoff packed (see `annotations.formats.score_bytes`)."""

    list_display = ["run", "cutoffs", "queries", "first_ndcg", "updated"]
    list_filter = ["run__collection"]
    list_select_related = ["run"]
    fields = ["run", "cutoffs", "queries", "updated", "scores"]
    readonly_fields = ["scores"]

    @admin.display(description="mean nDCG at the first cutoff")
    def first_ndcg(self, obj: RunScore) -> float:
        return next(iter(obj.per_cutoff().values())).ndcg

    @admin.display(description="means per cutoff")
    def scores(self, obj: RunScore) -> str:
        values = obj.per_cutoff()
        return _per_cutoff(values, ("ndcg", "ndcg_condensed", "judged", "ndcg_sum"))


@admin.register(IdealScore)
class IdealScoreAdmin(ReadOnlyAdmin):
    list_display = ["query", "k", "idcg"]
    list_select_related = ["query"]
