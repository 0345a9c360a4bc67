"""Stale judgements sent back for judging: a pool of the pairs whose document changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.core.validators import slug_re
from django.db import transaction

from annotations.models import Collection, Judgement, Pool
from annotations.selectors import query_rankings
from annotations.services.pools import UNRANKED_POSITION, pool_entries_add

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def stale_pairs(*, collection: Collection) -> set[tuple[int, int]]:
    """(query id, document id) of every pair with a stale judgement."""
    return set(
        Judgement.objects.filter(query__collection=collection, stale=True).values_list(
            "query_id", "document_id"
        )
    )


def pool_of_stale_build(
    *, collection: Collection, name: str = "rejudge", created_by: User | None = None
) -> tuple[Pool, int]:
    """Put every pair with a stale judgement into the pool `name` (created if need be, with
    depth 1: it holds chosen pairs, not a depth pool); returns the pool and the pairs added.

    The pool is then assigned as any other (the pool page, or `assign`); a new grade from the
    original assessor clears the stale mark, one from somebody else is a new judgement.
    """
    if len(name) > 100 or not slug_re.fullmatch(name):
        raise ValidationError(
            {"name": "A pool name is letters, digits, - and _ (at most 100 characters)."}
        )
    pairs = stale_pairs(collection=collection)
    if not pairs:
        raise ValidationError({"stale": "No judgement of this collection is stale."})
    best: dict[tuple[int, int], int] = dict.fromkeys(pairs, UNRANKED_POSITION)
    for query_id in {query_id for query_id, _ in pairs}:
        for documents in query_rankings(query_id=query_id, depth=None).values():
            for position, document_id in enumerate(documents, start=1):
                key = (query_id, document_id)
                if key in best and position < best[key]:
                    best[key] = position
    with transaction.atomic():
        pool = Pool.objects.select_for_update().filter(collection=collection, name=name).first()
        if pool is None:
            pool = Pool(collection=collection, name=name, depth=1, created_by=created_by)
            pool.full_clean()
            pool.save()
        added = pool_entries_add(pool, best)
        limit = pool.queries.all()
        if limit.exists():
            pool.queries.add(*{query_id for query_id, _ in pairs})
        if added:
            pool.save(update_fields=["updated"])
    return pool, added
