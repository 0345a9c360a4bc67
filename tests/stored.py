"""Stored scores unpacked per cutoff, for assertions: one row per (run, query, k) or (run, k)."""

from __future__ import annotations

from typing import Any

from annotations import score_packs
from annotations.models import QueryScore, RunScore


def query_rows(**filters: Any) -> list[tuple[str, str, score_packs.QueryValues]]:
    """(run name, qid, values at one k) of every stored per-query score matching `filters`
    (QueryScore lookups, e.g. run=..., query__qid=...), every cutoff unpacked."""
    rows = QueryScore.objects.filter(**filters).values_list(
        "run__name", "query__qid", "cutoffs", "ndcg", "values"
    )
    return [
        (run, qid, values)
        for run, qid, cutoffs, ndcg, packed in rows
        for values in score_packs.query_values(cutoffs, ndcg, packed).values()
    ]


def query_score(*, k: int, **filters: Any) -> score_packs.QueryValues:
    """The stored scores at k of the one (run, query) matching `filters`."""
    return QueryScore.objects.get(**filters).at(k)


def ndcg_by_key(**filters: Any) -> dict[tuple[str, str, int], float]:
    """(run name, qid, k) -> stored nDCG@k."""
    return {(run, qid, values.k): values.ndcg for run, qid, values in query_rows(**filters)}


def run_rows(**filters: Any) -> list[tuple[str, score_packs.RunMeans]]:
    """(run name, means at one k) of every stored run mean matching `filters`."""
    return [
        (row.run.name, means)
        for row in RunScore.objects.filter(**filters).select_related("run")
        for means in score_packs.run_means(
            row.cutoffs, row.queries, row.means, row.sums, row.overflow
        ).values()
    ]


def run_score(*, k: int, **filters: Any) -> score_packs.RunMeans:
    """The stored means at k of the one run matching `filters`."""
    return RunScore.objects.get(**filters).at(k)
