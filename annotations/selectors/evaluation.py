"""Stored scores shaped for the `evaluate` command and other exports (never recomputed)."""

from __future__ import annotations

from dataclasses import dataclass

from annotations.models import Collection, IdealScore, Query, QueryScore, Run, RunScore


@dataclass(frozen=True)
class StoredQueryScore:
    run: str
    qid: str
    k: int
    ndcg: float
    dcg: float
    judged: float
    ndcg_condensed: float


@dataclass(frozen=True)
class StoredRunScore:
    run: str
    k: int
    queries: int
    ndcg: float
    ndcg_condensed: float
    judged: float


def stored_query_scores(
    *, collection: Collection, runs: list[Run], ks: list[int]
) -> list[StoredQueryScore]:
    """Per-query stored scores of some runs at some cutoffs, by run name, qid, k."""
    rows = (
        QueryScore.objects.filter(run__in=runs, k__in=ks)
        .order_by("run__name", "query__qid", "k")
        .values_list("run__name", "query__qid", "k", "ndcg", "dcg", "judged", "ndcg_condensed")
    )
    return [StoredQueryScore(*row) for row in rows]


def stored_run_scores(*, runs: list[Run], ks: list[int]) -> list[StoredRunScore]:
    rows = (
        RunScore.objects.filter(run__in=runs, k__in=ks)
        .order_by("run__name", "k")
        .values_list("run__name", "k", "queries", "ndcg", "ndcg_condensed", "judged")
    )
    return [StoredRunScore(*row) for row in rows]


def evaluated_qids(*, collection: Collection) -> list[str]:
    """qids of the queries with at least one judgement (those scored), in qid order."""
    return list(
        Query.objects.filter(collection=collection, ideal_scores__isnull=False)
        .distinct()
        .order_by("qid")
        .values_list("qid", flat=True)
    )


def stored_ideal_scores(*, collection: Collection, ks: list[int]) -> dict[str, dict[int, float]]:
    ideal: dict[str, dict[int, float]] = {}
    for qid, k, value in IdealScore.objects.filter(
        query__collection=collection, k__in=ks
    ).values_list("query__qid", "k", "idcg"):
        ideal.setdefault(qid, {})[k] = value
    return ideal
