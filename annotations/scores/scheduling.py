"""Recomputations scheduled after commit: queued on Celery, once per collection's stale queries."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import DatabaseError, transaction
from django.db.models import F

from annotations import events, publishing
from annotations.bulk import cursor
from annotations.models import Query
from annotations.models.webhooks import SCORES_UPDATED
from annotations.scores.queries import scores_recompute_query

logger = logging.getLogger(__name__)

_pending = threading.local()


def _pending_sets() -> tuple[set[int], set[int], set[int], dict[int, int]]:
    if not hasattr(_pending, "queries"):
        _pending.queries, _pending.runs, _pending.collections = set(), set(), set()
        _pending.owners = {}
    return _pending.queries, _pending.runs, _pending.collections, _pending.owners


def scores_schedule(
    *,
    query_ids: Iterable[int] = (),
    run_ids: Iterable[int] = (),
    collection_ids: Iterable[int] = (),
    query_collections: Mapping[int, int] | None = None,
) -> None:
    """Recompute these after the current transaction commits, once each however often asked.

    The caller has already marked them stale in its transaction, so a lost recomputation is
    healed by the sweep; duplicates are harmless because a recomputation reads current state.
    `query_collections`: the collection of each query where the caller knows it (saves a
    read after commit).
    """
    queries, runs, collections, owners = _pending_sets()
    queries.update(query_ids)
    runs.update(run_ids)
    collections.update(collection_ids)
    owners.update(query_collections or {})
    transaction.on_commit(_dispatch)


def _dispatch() -> None:
    queries, runs, collections, owners = _pending_sets()
    batch = (set(queries), set(runs), set(collections))
    known = dict(owners)
    queries.clear()
    runs.clear()
    collections.clear()
    owners.clear()
    if not any(batch):
        return
    for collection_id in sorted(batch[2]):
        _publish(publishing.RESCORE_COLLECTION, collection_id)
    for run_id in sorted(batch[1]):
        _publish(publishing.RECOMPUTE_RUN, run_id)
    owning = {known[query_id] for query_id in batch[0] if query_id in known}
    owning.update(_collections_of({q for q in batch[0] if q not in known}))
    for collection_id in sorted(owning):
        _publish(
            publishing.RECOMPUTE_STALE_QUERIES,
            collection_id,
            coalesce=stale_queries_key(collection_id),
        )


def stale_queries_key(collection_id: int) -> str:
    return f"recompute-stale-queries:{collection_id}"


def _collections_of(query_ids: set[int]) -> list[int]:
    """The collections of these queries (after commit: a failed read leaves them pending
    for the sweep instead of failing the request that changed them)."""
    if not query_ids:
        return []
    ids = sorted(query_ids)
    marks = ", ".join(["%s"] * len(ids))
    try:
        with cursor() as found:
            found.execute(
                f"SELECT DISTINCT collection_id FROM {Query._meta.db_table} WHERE id IN ({marks})",
                ids,
            )
            return [collection_id for (collection_id,) in found.fetchall()]
    except DatabaseError as error:
        logger.warning("could not queue the recomputation of %d queries: %r", len(ids), error)
        return []


# A queued recomputation of a query covers every change made before it starts, so while one
# is queued (the mark below, cleared by the task when it starts) no second one is published.
COALESCE_SECONDS = 60


def _publish(task: Any, object_id: int, *, coalesce: str | None = None) -> None:
    """Queue a recomputation, best effort: after commit, a publish failure must not fail the
    request. What is not queued stays marked pending, and the sweep (or the next change)
    heals it once the broker is back."""
    if not settings.NDCG_COORDINATION_SHARED:
        coalesce = None  # a per-process mark would never be cleared by the worker
    try:
        if coalesce is not None and not caches["coordination"].add(
            coalesce, 1, timeout=COALESCE_SECONDS
        ):
            return
        task.apply_async((object_id,), retry=False)
    except Exception as error:
        logger.warning(
            "could not queue %s(%s), its scores stay pending: %r", task.name, object_id, error
        )
        if coalesce is not None:
            coalesce_release(coalesce)


def coalesce_release(key: str) -> None:
    """Clear a queued mark (the task calls this as it starts)."""
    try:
        caches["coordination"].delete(key)
    except Exception:  # the mark expires by itself
        logger.warning("could not clear %s", key)


def scores_recompute_stale_queries(*, collection_id: int) -> int:
    """Recompute every query of the collection marked stale, each in its own transaction
    (what a worker does for a collection's judgements: under a stream of them one task
    takes all that came while the last one ran); how many were recomputed. One that fails
    stays pending for the sweep, and the others go on."""
    stale = (
        Query.objects.filter(
            collection_id=collection_id, judgements_version__gt=F("scored_version")
        )
        .order_by("id")
        .values_list("id", flat=True)
    )
    done = 0
    for query_id in list(stale):
        try:
            done += _recompute_query_and_tell(query_id, collection_id=collection_id)
        except Exception:
            logger.exception("score recomputation of query %s failed; it stays pending", query_id)
    return done


def _recompute_query_and_tell(query_id: int, *, collection_id: int | None = None) -> bool:
    changed = scores_recompute_query(query_id=query_id)
    if changed:
        owners = (
            [collection_id]
            if collection_id is not None
            else Query.objects.filter(id=query_id).values_list("collection_id", flat=True)
        )
        for owner in owners:
            scores_updated_emit(query_id=query_id, collection_id=owner)
    return changed


def scores_updated_emit(*, query_id: int, collection_id: int) -> None:
    """Tell the collection's webhooks that a query's stored scores changed: one pending
    delivery per query however many recomputations a burst brings."""

    def data() -> dict[str, object]:
        found = Query.objects.filter(id=query_id).values_list("qid", "collection__slug").first()
        qid, slug = found if found is not None else (None, None)
        return {"collection": slug, "qid": qid}

    events.emit(
        collection_id=collection_id,
        event_type=SCORES_UPDATED,
        data=data,
        coalesce_key=f"scores:{query_id}",
    )
