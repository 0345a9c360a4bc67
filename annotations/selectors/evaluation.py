"""Stored scores shaped for the `evaluate` command and other exports (never recomputed)."""

from __future__ import annotations

from dataclasses import dataclass

from annotations.formats import score_bytes
from annotations.models import Collection, IdealScore, Query, QueryScore, Run
from annotations.selectors.stored_scores import run_means_at


@dataclass(frozen=True)
class StoredQueryScore:
    run: str
    qid: str
    k: int
    ndcg: float
    dcg: float
    judged: float
    ndcg_condensed: float
    answered: bool = True  # False: a judged query the run did not answer, counted as 0


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
    """Per-query stored scores of some runs at some cutoffs, by run name, qid (trec_eval's
    order), k: every query a run's mean counts. Where judged queries a run did not answer
    count 0 (``missing_queries == "zero"``, trec_eval -c) they are listed too, as zeros with
    ``answered=False``, so that a run's rows average to its mean."""
    wanted = [k for k in sorted(set(ks)) if k in collection.sorted_cutoffs]
    rows = (
        QueryScore.objects.filter(run__in=runs)
        .values_list("run__name", "query__qid", "cutoffs", *score_bytes.QUERY_MEASURES)
        .iterator(chunk_size=2000)
    )
    found: dict[tuple[str, str, int], StoredQueryScore] = {}
    for run, qid, cutoffs, *columns in rows:
        for k, values in score_bytes.query_values(cutoffs, *columns).items():
            if k in wanted:
                found[(run, qid, k)] = StoredQueryScore(run, qid, *values)
    if collection.missing_queries == "zero":
        for run in runs:
            for qid in evaluated_qids(collection=collection):
                for k in wanted:
                    key = (run.name, qid, k)
                    if key not in found:
                        found[key] = StoredQueryScore(
                            run.name, qid, k, 0.0, 0.0, 0.0, 0.0, answered=False
                        )
    return [found[key] for key in sorted(found)]


def stored_run_scores(*, runs: list[Run], ks: list[int]) -> list[StoredRunScore]:
    """The runs' means at each k, by run name then k: trec_eval's `all` values, bit for bit
    (``stored_scores.run_means_at``). Runs not scored yet are absent."""
    if not runs:
        return []
    collection = runs[0].collection
    means = [
        StoredRunScore(m.run.name, k, m.queries, m.ndcg, m.ndcg_condensed, m.judged)
        for k in sorted(set(ks) & set(collection.sorted_cutoffs))
        for m in run_means_at(collection, k, runs=runs)
    ]
    return sorted(means, key=lambda m: (m.run, m.k))


def evaluated_qids(*, collection: Collection) -> list[str]:
    """qids of the queries with at least one judgement (those scored), in trec_eval's qid
    order (sorted here, not by the database's collation)."""
    return sorted(
        Query.objects.filter(collection=collection, ideal_scores__isnull=False)
        .distinct()
        .values_list("qid", flat=True)
    )


def stored_ideal_scores(*, collection: Collection, ks: list[int]) -> dict[str, dict[int, float]]:
    ideal: dict[str, dict[int, float]] = {}
    for qid, k, value in IdealScore.objects.filter(
        query__collection=collection, k__in=ks
    ).values_list("query__qid", "k", "idcg"):
        ideal.setdefault(qid, {})[k] = value
    return ideal
