"""Reads for judging: roles, pools, assessor queues, grading pages, agreement."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery

from annotations.access import roles_of
from annotations.metrics import agreement
from annotations.models import (
    Assignment,
    AssignmentItem,
    Collection,
    Judgement,
    Membership,
    Pool,
    PoolEntry,
    Query,
    Run,
)
from annotations.selectors import top_documents

# --- roles ------------------------------------------------------------------------------


def user_is_organiser(*, user: Any, collection: Collection) -> bool:
    """Staff users organise every collection; others need the organiser role in it (the
    role table's rule, `access.roles_of`)."""
    return Membership.ORGANISER in roles_of(user=user, collection=collection)


def collections_organised(*, user: Any) -> QuerySet[Collection]:
    if getattr(user, "is_staff", False):
        return Collection.objects.all()
    return Collection.objects.filter(
        memberships__user=user, memberships__role=Membership.ORGANISER
    ).distinct()


# --- progress ---------------------------------------------------------------------------


def _judged_by_assessor() -> Exists:
    """True for an item whose assessor has a judgement of the item's pair."""
    return Exists(
        Judgement.objects.filter(
            query_id=OuterRef("entry__query_id"),
            document_id=OuterRef("entry__document_id"),
            assessor_id=OuterRef("assignment__assessor_id"),
        )
    )


def items_annotated(*, assignment: Assignment) -> QuerySet[AssignmentItem]:
    """The items of an assignment in order, with `judged` and the assessor's `grade`."""
    grade = Judgement.objects.filter(
        query_id=OuterRef("entry__query_id"),
        document_id=OuterRef("entry__document_id"),
        assessor_id=OuterRef("assignment__assessor_id"),
    ).values("grade")[:1]
    return (
        AssignmentItem.objects.filter(assignment=assignment)
        .select_related("entry__query", "entry__document")
        .annotate(judged=_judged_by_assessor(), grade=Subquery(grade))
        .order_by("position")
    )


@dataclass(frozen=True)
class Progress:
    """Judged, skipped and total pairs of one assignment; a skipped pair is not done."""

    judged: int
    skipped: int
    total: int

    @property
    def done(self) -> int:
        """The pairs graded (a skip is the assessor's doubt, not a judgement)."""
        return self.judged

    @property
    def left(self) -> int:
        """Neither graded nor skipped: what *Continue* opens next."""
        return self.total - self.judged - self.skipped

    @property
    def percent(self) -> int:
        return 100 if self.total == 0 else (100 * self.done) // self.total


def assignment_progress(*, assignment: Assignment) -> Progress:
    judged = _judged_by_assessor()
    counts = AssignmentItem.objects.filter(assignment=assignment).aggregate(
        total=Count("id"),
        judged=Count("id", filter=Q(judged)),
        skipped=Count("id", filter=Q(~judged, skipped=True)),
    )
    return Progress(judged=counts["judged"], skipped=counts["skipped"], total=counts["total"])


def unjudged_assigned(*, user: Any, collection: Collection) -> int:
    """The pairs assigned to `user` in the collection's pools that they have not graded."""
    return (
        AssignmentItem.objects.filter(
            assignment__assessor=user, assignment__pool__collection=collection
        )
        .exclude(_judged_by_assessor())
        .count()
    )


def assignments_of(*, user: Any) -> list[tuple[Assignment, Progress]]:
    """The user's own assignments with their progress, newest pool first within a collection."""
    assignments = (
        Assignment.objects.filter(assessor=user)
        .select_related("pool__collection")
        .order_by("pool__collection__slug", "-pool__created", "pool__name")
    )
    return [(a, assignment_progress(assignment=a)) for a in assignments]


def assignment_of(*, user: Any, assignment_id: int) -> Assignment | None:
    """The assignment if it is the user's own (nobody sees another assessor's assignment)."""
    return (
        Assignment.objects.filter(id=assignment_id, assessor=user)
        .select_related("pool__collection")
        .first()
    )


def item_at(*, assignment: Assignment, position: int) -> AssignmentItem | None:
    return (
        AssignmentItem.objects.filter(assignment=assignment, position=position)
        .select_related("entry__query", "entry__document", "assignment")
        .first()
    )


def next_pending_position(*, assignment: Assignment, after: int = 0) -> int | None:
    """The next item neither judged nor skipped after `after`, wrapping round; None if done."""
    pending = (
        AssignmentItem.objects.filter(assignment=assignment, skipped=False)
        .annotate(judged=_judged_by_assessor())
        .filter(judged=False)
        .order_by("position")
        .values_list("position", flat=True)
    )
    later = pending.filter(position__gt=after).first()
    return later if later is not None else pending.first()


def pending_items_after(
    *, assignment: Assignment, after: int, exclude: set[int], limit: int
) -> list[AssignmentItem]:
    """Up to `limit` items neither judged nor skipped, in the order grading visits them (after
    `after`, then wrapping round), leaving out `exclude` (item ids: the grading page's pairs
    whose grades are on their way) and the item at `after` itself."""
    pending = (
        AssignmentItem.objects.filter(assignment=assignment, skipped=False)
        .exclude(id__in=exclude)
        .exclude(position=after)
        .annotate(judged=_judged_by_assessor())
        .filter(judged=False)
        .select_related("entry__query", "entry__document", "assignment")
    )
    later: list[AssignmentItem] = list(
        pending.filter(position__gt=after).order_by("position")[:limit]
    )
    if len(later) < limit:
        later += list(pending.filter(position__lt=after).order_by("position")[: limit - len(later)])
    return later


def item_to_grade(
    *, user: Any, assignment_id: int, position: int, item_id: int | None = None
) -> AssignmentItem | None:
    """In one statement, the item a grade is for: `item_id` (the item the page showed) or
    else the one at `position`, only in the user's own assignment (None otherwise, as if it
    did not exist), with its pair, its assignment and the assignment's pool and collection."""
    found = AssignmentItem.objects.filter(assignment_id=assignment_id, assignment__assessor=user)
    found = found.filter(id=item_id) if item_id is not None else found.filter(position=position)
    return found.select_related(
        "entry__query", "entry__document", "assignment__pool__collection"
    ).first()


def neighbour_positions(*, assignment: Assignment, position: int) -> tuple[int | None, int | None]:
    """Positions of the previous and next items, None at either end."""
    items = AssignmentItem.objects.filter(assignment=assignment)
    previous = (
        items.filter(position__lt=position)
        .order_by("-position")
        .values_list("position", flat=True)
        .first()
    )
    following = (
        items.filter(position__gt=position)
        .order_by("position")
        .values_list("position", flat=True)
        .first()
    )
    return previous, following


def judgement_of(*, item: AssignmentItem) -> Judgement | None:
    """The item's assessor's own judgement of its pair."""
    return Judgement.objects.filter(
        query_id=item.entry.query_id,
        document_id=item.entry.document_id,
        assessor_id=item.assignment.assessor_id,
    ).first()


# --- pools ------------------------------------------------------------------------------


def pool_candidates(
    *,
    runs: Sequence[Run],
    queries: Sequence[Query],
    depth: int,
    include_judged: bool = False,
) -> dict[tuple[int, int], int]:
    """(query id, document id) -> best effective position, over the runs' top `depth` per
    query (every query when `queries` is empty); pairs a person judged left out unless
    asked (a machine judge's grade leaves a pair to people: pools are their work)."""
    pairs: dict[tuple[int, int], int] = {}
    for _, query_id, documents in top_documents(
        run_ids=[run.id for run in runs],
        query_ids=[query.id for query in queries] if queries else None,
        depth=depth,
    ):
        for position, document_id in enumerate(documents, start=1):
            key = (query_id, document_id)
            if position < pairs.get(key, depth + 1):
                pairs[key] = position
    if not include_judged and pairs:
        judged = set(
            Judgement.objects.filter(
                query_id__in={query_id for query_id, _ in pairs},
                assessor__machine_judge__isnull=True,
            )
            .values_list("query_id", "document_id")
            .distinct()
        )
        pairs = {key: best for key, best in pairs.items() if key not in judged}
    return pairs


def pools_of(*, collection: Collection) -> QuerySet[Pool]:
    return (
        Pool.objects.filter(collection=collection)
        .annotate(entry_count=Count("entries", distinct=True))
        .order_by("-created", "name")
    )


def pool_assignments(*, pool: Pool) -> list[tuple[Assignment, Progress]]:
    """Every assignment of a pool with its progress (organisers' overview)."""
    assignments = Assignment.objects.filter(pool=pool).select_related("assessor")
    return [(a, assignment_progress(assignment=a)) for a in assignments]


def pool_top_entries(*, pool: Pool, limit: int = 20) -> QuerySet[PoolEntry]:
    """An impact-ordered pool's unjudged entries of highest impact (organisers' view)."""
    return (
        pool.entries.filter(impact__gt=0)
        .select_related("query", "document")
        .order_by("-impact", "best_position", "query__qid", "document__docno")[:limit]
    )


def pool_unassigned_count(*, pool: Pool) -> int:
    """Entries still short of the pool's overlap."""
    return pool.entries.annotate(assigned=Count("items")).filter(assigned__lt=pool.overlap).count()


# The roles that grade (the judgements API's writers): work is assigned to, and qrels are
# imported as the judgements of, only an active account holding one of them in the collection.
GRADING_ROLES = (Membership.ORGANISER, Membership.ASSESSOR)


def grading_members(*, collection: Collection) -> QuerySet[Any]:
    """The collection's active organisers and assessors. Staff are no exception: a staff
    account that is to grade joins on the members page like anyone, so naming an account
    never tells whether it exists outside the collection."""
    from django.contrib.auth import get_user_model

    return (
        get_user_model()
        .objects.filter(
            is_active=True,
            memberships__collection=collection,
            memberships__role__in=GRADING_ROLES,
        )
        .distinct()
    )


def collection_assessors(*, collection: Collection) -> list[Any]:
    """Users who may be given assignments: `grading_members`, by username."""
    return list(grading_members(collection=collection).order_by("username"))


# --- agreement --------------------------------------------------------------------------


@dataclass
class AgreementSummary:
    """Collection-wide ordinal alpha and per assessor pair kappa, alpha and confusion matrix."""

    levels: list[int]
    units: int
    alpha: float | None
    pairs: list[agreement.Agreement] = field(default_factory=list)


def _grades_by_pair(
    collection: Collection, levels: list[int]
) -> dict[tuple[int, int], dict[str, int]]:
    """(query id, document id) -> {assessor username: grade}, grades off the scale left out,
    and so are machine judges' (calibrated against people apart: `selectors.calibration`)."""
    by_pair: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    on_scale = set(levels)
    rows = Judgement.objects.filter(
        query__collection=collection, assessor__machine_judge__isnull=True
    ).values_list("query_id", "document_id", "assessor__username", "grade")
    for query_id, document_id, username, grade in rows:
        if grade in on_scale:
            by_pair[(query_id, document_id)][username] = grade
    return by_pair


def agreement_summary(*, collection: Collection) -> AgreementSummary:
    """Agreement among people over every pair judged by two or more of them."""
    levels = sorted(collection.grades.values_list("value", flat=True))
    by_pair = _grades_by_pair(collection, levels)
    units = [list(grades.values()) for grades in by_pair.values() if len(grades) >= 2]
    enough_levels = len(levels) >= 2
    summary = AgreementSummary(
        levels=levels,
        units=len(units),
        alpha=(
            agreement.krippendorff_alpha_ordinal(units, levels) if units and enough_levels else None
        ),
    )
    together: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for grades in by_pair.values():
        for first, second in combinations(sorted(grades), 2):
            together[(first, second)].append((grades[first], grades[second]))
    for (first, second), pairs in sorted(together.items()):
        summary.pairs.append(agreement.agreement_between(first, second, pairs, levels))
    return summary
