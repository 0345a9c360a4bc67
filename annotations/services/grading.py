"""Taking back an assessor's last grade in an assignment (the grading page's undo)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from annotations.models import Assignment, AssignmentItem, Judgement, JudgementHistory
from annotations.services.judgements import judgement_delete, judgement_record

# How far back an undo looks for a grade still standing (one page of the assessor's work).
UNDO_DEPTH = 500


def assignment_grade_undo(*, assignment: Assignment, assessor: User) -> AssignmentItem | None:
    """Put the pair the assessor graded last on this assignment's grading page back as it was
    before that grade, through the services like any change (history source "undo"), and
    return its item; None when there is nothing to take back.

    A grade counts only while it still stands (the pair holds the grade it set): a grade
    changed since, or already taken back, is passed over, so pressing undo again takes back
    the grade before it.
    """
    if assignment.assessor_id != assessor.pk:
        return None
    items = {
        (item.entry.query_id, item.entry.document_id): item
        for item in assignment.items.select_related("entry__query", "entry__document")
    }
    history = JudgementHistory.objects.filter(
        assessor=assessor,
        changed_by=assessor,
        source="form",
        query_id__in={query for query, _ in items},
    ).order_by("-changed_at", "-id")[:UNDO_DEPTH]
    with transaction.atomic():
        for row in history:
            item = items.get((row.query_id, row.document_id))
            if item is None:
                continue
            current = (
                Judgement.objects.select_for_update()
                .filter(query_id=row.query_id, document_id=row.document_id, assessor=assessor)
                .first()
            )
            if (current.grade if current else None) != row.new_grade:
                continue  # changed since, or taken back already
            if row.old_grade is None:
                if current is not None:
                    judgement_delete(judgement=current, source="undo", changed_by=assessor)
            else:
                judgement_record(
                    query=item.entry.query,
                    document=item.entry.document,
                    assessor=assessor,
                    grade=row.old_grade,
                    note=current.note if current else "",
                    source="undo",
                    changed_by=assessor,
                )
            return item
    return None
