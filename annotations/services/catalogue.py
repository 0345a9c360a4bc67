"""Use cases behind the REST API: queries and documents from JSON, memberships, publishing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.formats import trec
from annotations.models import Collection, Membership
from annotations.services.collections import (
    collection_create,
    collection_grades_set,
    collection_update,
)
from annotations.services.imports import (
    LOOKUP_CHUNK,
    ImportSummary,
    documents_upsert,
    queries_upsert,
)


@dataclass(frozen=True)
class QueryFields:
    qid: str
    title: str = ""
    description: str = ""
    narrative: str = ""


@dataclass(frozen=True)
class DocumentFields:
    docno: str
    title: str = ""
    text: str = ""
    url: str = ""


def _check_ids(ids: Sequence[str], field: str) -> None:
    check = trec.qid_problem if field == "qid" else trec.id_problem
    for value in ids:
        problem = check(value) if isinstance(value, str) else "not a string"
        if problem is not None:
            raise ValidationError({field: f"not a valid id: {problem}"})
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise ValidationError({field: f"{value!r} appears more than once"})
        seen.add(value)


def _check_texts(records: Sequence[object], fields: Sequence[str]) -> None:
    for index, record in enumerate(records):
        for field in fields:
            problem = trec.text_problem(getattr(record, field))
            if problem is not None:
                raise ValidationError({f"[{index}].{field}": problem})


def queries_store(*, collection: Collection, queries: Sequence[QueryFields]) -> ImportSummary:
    """Create or update queries by qid (all or nothing); like a topic file import."""
    _check_ids([q.qid for q in queries], "qid")
    _check_texts(queries, ("title", "description", "narrative"))
    topics = [trec.Topic(q.qid, q.title, q.description, q.narrative, line=0) for q in queries]
    return queries_upsert(collection=collection, topics=topics)


def documents_store(
    *, collection: Collection, documents: Sequence[DocumentFields]
) -> ImportSummary:
    """Create or update documents by docno (all or nothing); like a document file import."""
    _check_ids([d.docno for d in documents], "docno")
    _check_texts(documents, ("title", "text", "url"))
    records = [trec.DocumentRecord(d.docno, d.title, d.text, d.url, line=0) for d in documents]
    created = updated = unchanged = 0
    with transaction.atomic():
        for start in range(0, len(records), LOOKUP_CHUNK):
            c, u, n = documents_upsert(collection, records[start : start + LOOKUP_CHUNK])
            created, updated, unchanged = created + c, updated + u, unchanged + n
    return ImportSummary(created, updated, unchanged)


def membership_grant(*, collection: Collection, user: AbstractBaseUser, role: str) -> Membership:
    """Give a user a role in a collection (idempotent)."""
    if role not in {Membership.ORGANISER, Membership.ASSESSOR, Membership.OWNER}:
        raise ValidationError({"role": f"{role!r} is not a role"})
    membership, _ = Membership.objects.get_or_create(collection=collection, user=user, role=role)
    return membership


def collection_create_with_organiser(
    *,
    organiser: AbstractBaseUser,
    slug: str,
    name: str = "",
    description: str = "",
    gain: str = "linear",
    cutoffs: Sequence[int] | None = None,
    grades: Sequence[tuple[int, str, str]] | None = None,
    missing_queries: str = "zero",
    aggregation: str = "median",
    public_leaderboard: bool = False,
    assessors_see_leaderboard: bool = False,
    stale_judgements: str = "count",
) -> Collection:
    """Create a collection and make its creator an organiser of it, in one transaction."""
    with transaction.atomic():
        collection = collection_create(
            slug=slug,
            name=name,
            description=description,
            gain=gain,
            cutoffs=cutoffs,
            grades=grades,
            missing_queries=missing_queries,
            aggregation=aggregation,
            assessors_see_leaderboard=assessors_see_leaderboard,
            stale_judgements=stale_judgements,
        )
        if public_leaderboard:
            collection_publish(collection=collection, public=True)
        membership_grant(collection=collection, user=organiser, role=Membership.ORGANISER)
    return collection


def collection_publish(*, collection: Collection, public: bool) -> Collection:
    """Open (or close) the collection's leaderboard and scores to anonymous readers.

    Separate from ``collection_update``: it changes who may read, never a score.
    """
    if collection.public_leaderboard != public:
        collection.public_leaderboard = public
        collection.save(update_fields=["public_leaderboard", "updated"])
    return collection


def collection_settings_save(
    *,
    collection: Collection,
    grades: Sequence[tuple[int, str, str]] | None = None,
    public_leaderboard: bool | None = None,
    **changes: object,
) -> Collection:
    """Change settings, grade scale and publication together: all of it or none of it."""
    with transaction.atomic():
        if changes:
            collection_update(collection=collection, **changes)
        if grades is not None:
            current = [(g.value, g.label, g.definition) for g in collection.grades.all()]
            if sorted(grades) != current:
                collection_grades_set(collection=collection, grades=grades)
        if public_leaderboard is not None:
            collection_publish(collection=collection, public=public_leaderboard)
    return collection
