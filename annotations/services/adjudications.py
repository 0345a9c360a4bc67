"""Adjudication: an organiser's final grade for a pair, overriding the assessors' grades."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from annotations.metrics.machine_grades import assessed_pair_grade
from annotations.models import Adjudication, Document, Judgement, JudgementHistory, Query
from annotations.models.webhooks import JUDGEMENT_CHANGED
from annotations.selectors.grades import machine_accounts
from annotations.selectors.judging import user_is_organiser
from annotations.services.judgements import grade_check, judgement_told
from annotations.services.marks import queries_mark_stale

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def adjudication_record(
    *,
    query: Query,
    document: Document,
    organiser: User,
    grade: int,
    note: str = "",
) -> Adjudication:
    """Create or change the adjudicated grade of a judged pair and rescore its query.

    The history row has source "adjudication", the organiser as assessor and changed_by,
    and as old grade the pair's effective grade just before (the previous adjudication, or
    the assessors' grades combined by the collection's rules; none when only machine
    grades it does not score were there). Re-recording the same grade
    and note changes nothing. Concurrent adjudications of one pair serialise on its row.
    """
    collection = query.collection
    if document.collection_id != collection.id:
        raise ValidationError({"document": "The document belongs to another collection."})
    if not user_is_organiser(user=organiser, collection=collection):
        raise PermissionDenied("Only an organiser of the collection may adjudicate.")
    grade_check(collection, grade)
    with transaction.atomic():
        grades = list(
            Judgement.objects.select_for_update()
            .filter(query=query, document=document)
            .values_list("grade", "assessor_id")
        )
        if not grades:
            raise ValidationError({"document": "Only a judged pair can be adjudicated."})
        adjudication = (
            Adjudication.objects.select_for_update().filter(query=query, document=document).first()
        )
        if adjudication is None:
            try:
                with transaction.atomic():
                    adjudication = Adjudication(
                        query=query, document=document, organiser=organiser, grade=grade, note=note
                    )
                    adjudication.full_clean(validate_unique=False)  # the constraint decides
                    adjudication.save()
            except IntegrityError:  # another request created it first: change that one
                adjudication = Adjudication.objects.select_for_update().get(
                    query=query, document=document
                )
            else:
                old = assessed_pair_grade(
                    ((assessor, grade) for grade, assessor in grades),
                    machine_accounts(collection),
                    None,
                    aggregation=collection.aggregation,
                    rule=collection.machine_grades,
                )
                _history(adjudication, old)
                return adjudication
        if adjudication.grade == grade and adjudication.note == note:
            return adjudication
        old = adjudication.grade
        adjudication.grade, adjudication.note, adjudication.organiser = grade, note, organiser
        adjudication.save(update_fields=["grade", "note", "organiser", "updated"])
        _history(adjudication, old)
    return adjudication


def _history(adjudication: Adjudication, old: int | None) -> None:
    """The history row and the webhook event of an adjudication (in its transaction)."""
    JudgementHistory.objects.create(
        query_id=adjudication.query_id,
        document_id=adjudication.document_id,
        assessor_id=adjudication.organiser_id,
        changed_by_id=adjudication.organiser_id,
        old_grade=old,
        new_grade=adjudication.grade,
        note=adjudication.note,
        source="adjudication",
    )
    if old != adjudication.grade:
        queries_mark_stale([adjudication.query_id])
    judgement_told(
        JUDGEMENT_CHANGED, adjudication.query.collection_id, adjudication, old,
        adjudication.grade, "adjudication",
    )  # fmt: skip
