"""The leaderboard's costly part, cached: each query's top-grade bounds at k.

A query's bounds (every run's nDCG@k with its unjudged documents taken as top grade) depend
on its own judgements, the collection's gain, aggregation, rule for machine grades and top
grade, and the runs. They
are kept per (query, k) in `QueryBound` under a key of all of that, so after one judgement
only that query's bounds are recomputed, and each process holds the bounds it last used
under the same keys, so only that query's are read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import Max

from annotations.models import Collection, Query, QueryBound
from annotations.selectors.process_held import ProcessHeld
from annotations.selectors.stored_scores import evaluated_queries
from annotations.selectors.top_grade_bounds import (
    BoundArrays,
    bound_arrays,
    top_grade_bounds_by_query,
)

HELD_ENTRIES = 16  # (collection, k) pairs whose bounds a process holds
HELD_BYTES = 128_000_000  # of their arrays, all entries together

# Per (collection id, k): query id -> (key, (run ids, values) or None for no bound).
HeldBounds = dict[int, tuple[str, Any]]


def _nbytes(held: HeldBounds) -> int:
    return sum(
        int(arrays[0].nbytes + arrays[1].nbytes)
        for _, arrays in held.values()
        if arrays is not None
    )


_held: ProcessHeld[HeldBounds] = ProcessHeld(
    entries=lambda: HELD_ENTRIES, nbytes=lambda: HELD_BYTES, size=_nbytes
)


def _bounds_context(collection: Collection, runs: Sequence[tuple[int, Any]]) -> str:
    """Everything but the query's own judgements that a query's bounds depend on (the runs
    as (id, updated)), digested."""
    top = collection.grades.aggregate(top=Max("value"))["top"]
    context = repr(
        (collection.gain, collection.aggregation, collection.machine_grades, top, list(runs))
    )
    return hashlib.sha256(context.encode()).hexdigest()


def _key(context: str, version: int) -> str:
    return hashlib.sha256(f"{context}|{version}".encode()).hexdigest()[:32]


def bounds_cached(
    *, collection: Collection, k: int, runs: Sequence[tuple[int, Any]]
) -> BoundArrays:
    """query id -> (run ids, top-grade nDCG@k) for every evaluated query, recomputing only the
    queries whose cached bounds no longer match their inputs (and storing those); `runs` are
    the scored runs as (id, updated).

    The bounds last used are also held in the process under the same keys, so a query whose
    key did not move is not even read again: after a judgement, one query is."""
    evaluated = [query_id for query_id, _, _ in evaluated_queries(collection, k)]
    versions = dict(Query.objects.filter(id__in=evaluated).values_list("id", "judgements_version"))
    context = _bounds_context(collection, sorted(runs))
    run_ids = [run_id for run_id, _ in runs]
    wanted = {query_id: _key(context, versions[query_id]) for query_id in evaluated}
    held = _held.peek((collection.id, k)) or {}  # shared: replaced whole, never changed
    bounds: BoundArrays = {}
    fresh_held: HeldBounds = {}
    unread: list[int] = []
    for query_id, key in wanted.items():
        hit = held.get(query_id)
        if hit is not None and hit[0] == key:
            fresh_held[query_id] = hit
            if hit[1] is not None:
                bounds[query_id] = hit[1]
        else:
            unread.append(query_id)
    cached = (
        {
            query_id: (key, values)
            for query_id, key, values in QueryBound.objects.filter(
                query_id__in=unread, k=k
            ).values_list("query_id", "key", "values")
        }
        if unread
        else {}
    )
    missing: list[int] = []
    for query_id in unread:
        hit = cached.get(query_id)
        if hit is not None and hit[0] == wanted[query_id]:
            arrays = bound_arrays({query_id: {int(r): v for r, v in hit[1].items()}})
            fresh_held[query_id] = (wanted[query_id], arrays.get(query_id))
            bounds.update(arrays)
        else:
            missing.append(query_id)
    if missing:
        fresh = top_grade_bounds_by_query(
            collection=collection, k=k, run_ids=run_ids, query_ids=set(missing)
        )
        _store_bounds(k, ((q, wanted[q], fresh.get(q, {})) for q in missing))
        arrays = bound_arrays(fresh)
        for query_id in missing:
            fresh_held[query_id] = (wanted[query_id], arrays.get(query_id))
        bounds.update(arrays)
    _held.keep((collection.id, k), fresh_held)
    return bounds


def bounds_forget(*, collection_id: int | None = None) -> None:
    """Drop the bounds held (of one collection, or all): the next call reads them again."""
    _held.forget(collection_id=collection_id)


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
