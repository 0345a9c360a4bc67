"""Stored scores shaped for the `evaluate` command and other exports (never recomputed)."""

from __future__ import annotations

from dataclasses import dataclass

from annotations import score_packs
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
    wanted = set(ks)
    rows = (
        QueryScore.objects.filter(run__in=runs)
        .order_by("run__name", "query__qid")
        .values_list("run__name", "query__qid", "cutoffs", *score_packs.QUERY_MEASURES)
        .iterator(chunk_size=2000)
    )
    return [
        StoredQueryScore(run, qid, *values)
        for run, qid, cutoffs, *columns in rows
        for k, values in score_packs.query_values(cutoffs, *columns).items()
        if k in wanted
    ]


def stored_run_scores(*, runs: list[Run], ks: list[int]) -> list[StoredRunScore]:
    wanted = set(ks)
    rows = RunScore.objects.filter(run__in=runs).select_related("run").order_by("run__name")
    return [
        StoredRunScore(row.run.name, k, m.queries, m.ndcg, m.ndcg_condensed, m.judged)
        for row in rows
        for k, m in row.per_cutoff().items()
        if k in wanted
    ]


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
