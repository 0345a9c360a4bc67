"""What an assessor has left of an assignment: released back to the pool, or handed to
another assessor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Exists, Max, OuterRef

from annotations.models import Assignment, AssignmentItem, Judgement, Pool
from annotations.selectors.judging import user_is_organiser
from annotations.services.members import grading_members_check

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _ungraded(assignment: Assignment) -> list[AssignmentItem]:
    """The assignment's items whose pair its assessor has not graded (skips included: a
    skip is a doubt, not a judgement), in their order."""
    graded = Judgement.objects.filter(
        query_id=OuterRef("entry__query_id"),
        document_id=OuterRef("entry__document_id"),
        assessor_id=assignment.assessor_id,
    )
    return list(
        AssignmentItem.objects.filter(assignment=assignment)
        .annotate(graded=Exists(graded))
        .filter(graded=False)
        .order_by("position")
    )


def assignment_release(
    *, assignment: Assignment, actor: User, to: User | None = None
) -> tuple[int, int]:
    """Take back the pairs the assessor has not graded; returns (released, handed over).

    Without `to` the pairs go back to the pool: they fall short of its overlap again and the
    next `assignment_create` hands them out. With `to` they are appended, in their order, to
    `to`'s assignment of the same pool (created if need be), except pairs `to` already
    holds; `to` must already be an organiser or assessor of the collection, as for
    `assignment_create`. Graded pairs and their judgements stay with the assessor. Only an
    organiser of the collection may do it.
    """
    pool = assignment.pool
    collection = pool.collection
    if not user_is_organiser(user=actor, collection=collection):
        raise PermissionDenied("Only an organiser of the collection may release assignments.")
    if to is not None and to.pk == assignment.assessor_id:
        raise ValidationError({"to": "Hand the pairs to another assessor than their holder."})
    if to is not None:
        grading_members_check(collection=collection, users=[to], field="to")
    with transaction.atomic():
        # The pool's lock serialises this with assignment_create on the same pool.
        Pool.objects.select_for_update().filter(id=pool.id).first()
        items = _ungraded(assignment)
        handed = 0
        if to is not None and items:
            target, _ = Assignment.objects.get_or_create(
                pool=pool, assessor=to, defaults={"created_by": actor}
            )
            held = set(
                AssignmentItem.objects.filter(assignment=target).values_list("entry_id", flat=True)
            )
            position = (
                AssignmentItem.objects.filter(assignment=target).aggregate(last=Max("position"))[
                    "last"
                ]
                or 0
            )
            moved = []
            for item in items:
                if item.entry_id in held:
                    continue
                position += 1
                moved.append(
                    AssignmentItem(
                        assignment=target, entry_id=item.entry_id, position=position, note=item.note
                    )
                )
            AssignmentItem.objects.filter(id__in=[item.id for item in items]).delete()
            AssignmentItem.objects.bulk_create(moved, batch_size=2000)
            handed = len(moved)
        else:
            AssignmentItem.objects.filter(id__in=[item.id for item in items]).delete()
    return len(items), handed
