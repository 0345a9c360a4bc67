"""Qrels versions: tag the judgements as they stand, cheaply (a mark, not a copy)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from annotations import events
from annotations.metrics.machine_grades import MACHINE_RULES
from annotations.models import Collection, JudgementHistory, QrelsVersion
from annotations.models.webhooks import VERSION_TAGGED

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def qrels_version_tag(
    *,
    collection: Collection,
    name: str,
    note: str = "",
    created_by: User | None = None,
    machine_grades: str | None = None,
) -> QrelsVersion:
    """Mark the collection's qrels as they stand now under `name`, machine grades counted
    by the collection's rule or by `machine_grades` (a version for each rule can be tagged
    at one moment: people only, machine-filled).

    The mark is the last judgement history row of the collection. Every row at or below it
    must be committed, and every later one above it: on PostgreSQL the history table is
    locked in SHARE mode for the instant of tagging (writers that are inserting finish
    first, new ones wait); on SQLite the version row is written first, which takes the
    database's single write lock for the same effect.
    """
    version = QrelsVersion(
        collection=collection,
        name=name,
        note=note,
        history_id=0,
        aggregation=collection.aggregation,
        machine_grades=machine_grades or collection.machine_grades,
        gain=collection.gain,
        missing_queries=collection.missing_queries,
        created_by=created_by,
    )
    if version.machine_grades not in MACHINE_RULES:
        raise ValidationError({"machine_grades": f"One of {', '.join(MACHINE_RULES)}."})
    version.full_clean(validate_constraints=False)
    if QrelsVersion.objects.filter(collection=collection, name=name).exists():
        raise ValidationError({"name": "A version of this name exists already."})
    try:
        return _tag(version)
    except IntegrityError:  # tagged under the same name meanwhile
        raise ValidationError({"name": "A version of this name exists already."}) from None


def _tag(version: QrelsVersion) -> QrelsVersion:
    collection = version.collection
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {JudgementHistory._meta.db_table} IN SHARE MODE")
        else:
            version.save()
        last = JudgementHistory.objects.filter(query__collection=collection).aggregate(
            last=Max("id")
        )["last"]
        version.history_id = last or 0
        version.save()
        events.emit(
            collection_id=collection.id,
            event_type=VERSION_TAGGED,
            data=lambda: {
                "collection": collection.slug,
                "version": version.name,
                "note": version.note,
                "created": version.created.isoformat(),
            },
        )
    return version
