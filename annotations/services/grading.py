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
    the grade before it. The assessor's current grades are read in one query; only the pair
    taken back is locked (and checked again under the lock).
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
    rows = [row for row in history if (row.query_id, row.document_id) in items]
    held = {
        (query, document): grade
        for query, document, grade in Judgement.objects.filter(
            assessor=assessor,
            query_id__in={row.query_id for row in rows},
            document_id__in={row.document_id for row in rows},
        ).values_list("query_id", "document_id", "grade")
    }
    # The latest grade that still stands: the pair holds the grade it set.
    standing = next(
        (row for row in rows if held.get((row.query_id, row.document_id)) == row.new_grade),
        None,
    )
    if standing is None:
        return None
    item = items[(standing.query_id, standing.document_id)]
    with transaction.atomic():
        current = (
            Judgement.objects.select_for_update()
            .filter(query_id=standing.query_id, document_id=standing.document_id, assessor=assessor)
            .first()
        )
        if (current.grade if current else None) != standing.new_grade:
            return None  # changed meanwhile by another tab: nothing is taken back
        if standing.old_grade is None:
            if current is not None:
                judgement_delete(judgement=current, source="undo", changed_by=assessor)
        else:
            judgement_record(
                query=item.entry.query,
                document=item.entry.document,
                assessor=assessor,
                grade=standing.old_grade,
                note=current.note if current else "",
                source="undo",
                changed_by=assessor,
            )
    return item
