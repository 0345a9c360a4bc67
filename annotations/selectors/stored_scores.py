"""Stored per-query scores as vectors over a collection's evaluated queries, and a run's page."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection

from annotations.exact import mean_of
from annotations.models import Collection, IdealScore, QueryScore, Run, RunScore
from annotations.selectors.scores_state import scores_state


@dataclass(frozen=True)
class QueryValue:
    """One run's stored scores for one evaluated query; `answered` is False for a zero-fill."""

    query_id: int
    qid: str
    title: str
    ndcg: float
    dcg: float
    judged: float
    ndcg_condensed: float
    answered: bool


@dataclass(frozen=True)
class RunScores:
    run: Run
    k: int
    ndcg: float | None
    judged: float | None
    ndcg_condensed: float | None
    queries: int
    per_query: list[QueryValue]
    pending: bool


def evaluated_queries(collection: Collection, k: int) -> list[tuple[int, str, str]]:
    """(query id, qid, title) of the queries with at least one judgement, in qid order."""
    return list(
        IdealScore.objects.filter(query__collection=collection, k=k)
        .order_by("query__qid")
        .values_list("query_id", "query__qid", "query__title")
    )


def stored_values(
    run_ids: Sequence[int], k: int
) -> dict[int, dict[int, tuple[float, float, float, float]]]:
    """run id -> query id -> (ndcg, dcg, judged, ndcg_condensed) stored at k."""
    values: dict[int, dict[int, tuple[float, float, float, float]]] = defaultdict(dict)
    rows = QueryScore.objects.filter(run_id__in=list(run_ids), k=k).values_list(
        "run_id", "query_id", "ndcg", "dcg", "judged", "ndcg_condensed"
    )
    for run_id, query_id, ndcg, dcg, judged, condensed in rows:
        values[run_id][query_id] = (ndcg, dcg, judged, condensed)
    return values


def query_vector(
    collection: Collection, evaluated: Sequence[int], stored: dict[int, float]
) -> dict[int, float]:
    """query id -> nDCG@k over the queries that count for the run's mean.

    With ``missing_queries == "zero"`` every evaluated query counts, 0.0 where the run gave
    no result (trec_eval -c); with ``"skip"`` only the queries the run answered.
    """
    if collection.missing_queries == "zero":
        return {query_id: stored.get(query_id, 0.0) for query_id in evaluated}
    return {query_id: stored[query_id] for query_id in evaluated if query_id in stored}


def paired_values(
    first: dict[int, float], second: dict[int, float]
) -> tuple[list[float], list[float]]:
    """Two runs' values on the queries both count (all evaluated ones in zero mode)."""
    shared = [query_id for query_id in first if query_id in second]
    return [first[q] for q in shared], [second[q] for q in shared]


def is_judged(grade: int | None) -> bool:
    return grade is not None and grade >= 0


def exact_mean(values: Sequence[float]) -> float:
    # Exact sum, correctly rounded mean: equal inputs give the stored RunScore mean's bits.
    return mean_of(values)


def stored_ndcg(run_ids: Sequence[int], k: int) -> dict[int, dict[int, float]]:
    """run id -> query id -> nDCG@k stored at k (one raw read: the leaderboard's hot input)."""
    values: dict[int, dict[int, float]] = defaultdict(dict)
    ids = list(run_ids)
    if not ids:
        return values
    table = QueryScore._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT run_id, query_id, ndcg FROM {table} "
            f"WHERE k = %s AND run_id IN ({', '.join(['%s'] * len(ids))})",
            [k, *ids],
        )
        for run_id, query_id, ndcg in cursor.fetchall():
            values[run_id][query_id] = ndcg
    return values


def run_scores(*, run: Run, k: int) -> RunScores:
    """A run's stored per-query scores at k (zero-filled per the collection's rule) and means."""
    collection = run.collection
    evaluated = evaluated_queries(collection, k)
    stored = stored_values([run.id], k)[run.id]
    per_query: list[QueryValue] = []
    for query_id, qid, title in evaluated:
        values = stored.get(query_id)
        if values is not None:
            per_query.append(QueryValue(query_id, qid, title, *values, answered=True))
        elif collection.missing_queries == "zero":
            per_query.append(QueryValue(query_id, qid, title, 0.0, 0.0, 0.0, 0.0, answered=False))
    mean = RunScore.objects.filter(run=run, k=k).first()
    state = scores_state(collection=collection)
    return RunScores(
        run=run,
        k=k,
        ndcg=mean.ndcg if mean else None,
        judged=mean.judged if mean else None,
        ndcg_condensed=mean.ndcg_condensed if mean else None,
        queries=mean.queries if mean else 0,
        per_query=per_query,
        pending=run.scored_at is None or state.pending_queries > 0,
    )
