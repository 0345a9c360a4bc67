"""The leaderboard's costly part, cached: each query's top-grade bounds at k.

A query's bounds (every run's nDCG@k with its unjudged documents taken as top grade) depend
on its own judgements, the collection's gain, aggregation, rule for machine grades and top
grade, and the runs. They
are kept per (query, k) in `QueryBound` under a key of all of that, so after one judgement
only that query's bounds are recomputed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import Max

from annotations.models import Collection, Query, QueryBound, Run
from annotations.selectors.leaderboards import BoundsByQuery, top_grade_bounds_by_query
from annotations.selectors.stored_scores import evaluated_queries


def _bounds_context(collection: Collection, run_ids: Sequence[int]) -> str:
    """Everything but the query's own judgements that a query's bounds depend on."""
    top = collection.grades.aggregate(top=Max("value"))["top"]
    runs = list(
        Run.objects.filter(id__in=list(run_ids)).order_by("id").values_list("id", "updated")
    )
    return repr((collection.gain, collection.aggregation, collection.machine_grades, top, runs))


def _key(context: str, version: int) -> str:
    return hashlib.sha256(f"{context}|{version}".encode()).hexdigest()[:32]


def bounds_cached(*, collection: Collection, k: int, run_ids: Sequence[int]) -> BoundsByQuery:
    """query id -> run id -> top-grade nDCG@k for every evaluated query, recomputing only the
    queries whose cached bounds no longer match their inputs (and storing those)."""
    evaluated = [query_id for query_id, _, _ in evaluated_queries(collection, k)]
    versions = dict(Query.objects.filter(id__in=evaluated).values_list("id", "judgements_version"))
    context = _bounds_context(collection, run_ids)
    wanted = {query_id: _key(context, versions[query_id]) for query_id in evaluated}
    cached = {
        query_id: (key, values)
        for query_id, key, values in QueryBound.objects.filter(
            query_id__in=evaluated, k=k
        ).values_list("query_id", "key", "values")
    }
    bounds: BoundsByQuery = {}
    missing: list[int] = []
    for query_id, key in wanted.items():
        hit = cached.get(query_id)
        if hit is not None and hit[0] == key:
            bounds[query_id] = {int(run_id): value for run_id, value in hit[1].items()}
        else:
            missing.append(query_id)
    if missing:
        fresh = top_grade_bounds_by_query(
            collection=collection, k=k, run_ids=run_ids, query_ids=set(missing)
        )
        _store_bounds(k, ((q, wanted[q], fresh.get(q, {})) for q in missing))
        for query_id in missing:
            bounds[query_id] = dict(fresh.get(query_id, {}))
    return bounds


def _store_bounds(k: int, rows: Iterable[tuple[int, str, dict[int, float]]]) -> None:
    objects: list[Any] = [
        QueryBound(query_id=query_id, k=k, key=key, values={str(r): v for r, v in values.items()})
        for query_id, key, values in rows
    ]
    QueryBound.objects.bulk_create(
        objects,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["query", "k"],
        update_fields=["key", "values"],
    )
