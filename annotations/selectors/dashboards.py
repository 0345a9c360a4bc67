"""A collection's dashboard: judging progress, coverage, agreement, pending scores, activity.

Computed once per dashboard stamp (the scores stamp plus the assignments' state) and cached:
an open dashboard polls the stamp, and a poll or a reload costs a few aggregates.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.db.models import Count, Exists, Max, OuterRef, Q
from django.db.models.functions import TruncDate

from annotations.models import (
    AssignmentItem,
    Collection,
    Judgement,
    JudgementHistory,
    MachineJudge,
    PoolEntry,
)
from annotations.selectors import leaderboard_rows
from annotations.selectors.judging import agreement_summary
from annotations.selectors.pace import NO_PACE, Pace, assessor_pace, changes_per_hour_today
from annotations.selectors.scores_state import scores_state

CACHE_SECONDS = 3600
RECENT = 15
DAYS = 30


@dataclass(frozen=True)
class AssessorProgress:
    username: str
    assigned: int
    judged: int
    skipped: int
    pace: Pace = NO_PACE

    @property
    def left(self) -> int:
        return self.assigned - self.judged - self.skipped


@dataclass(frozen=True)
class Activity:
    when: datetime
    qid: str
    docno: str
    assessor: str
    old_grade: int | None
    new_grade: int | None
    source: str


@dataclass(frozen=True)
class Dashboard:
    stamp: str
    k: int
    pooled: int
    # Pooled pairs a person judged, a machine judge graded, and a machine only: counted
    # apart, since machine grades count for scores only by the collection's rule.
    pooled_people: int
    pooled_machine: int
    pooled_machine_only: int
    assigned: int
    judged: int
    skipped: int
    assessors: list[AssessorProgress]
    per_day: list[tuple[str, int, int]]  # day, changes by judging, changes by imports
    per_hour: list[tuple[str, int, int]]  # today's hours, the same two counts
    coverage: list[tuple[str, float]]
    alpha: float | None
    agreement_units: int
    pending_queries: int
    pending_runs: int
    recent: list[Activity]

    @property
    def left(self) -> int:
        return self.assigned - self.judged - self.skipped

    def chart(self) -> dict[str, object]:
        return {
            "k": self.k,
            "days": [day for day, _, _ in self.per_day],
            "per_day": [judging for _, judging, _ in self.per_day],
            "imported_per_day": [imported for _, _, imported in self.per_day],
            "hours": [hour for hour, _, _ in self.per_hour],
            "per_hour": [judging for _, judging, _ in self.per_hour],
            "imported_per_hour": [imported for _, _, imported in self.per_hour],
            "runs": [name for name, _ in self.coverage],
            "coverage": [judged for _, judged in self.coverage],
        }


def _items(collection: Collection):  # type: ignore[no-untyped-def]
    judged = Exists(
        Judgement.objects.filter(
            query_id=OuterRef("entry__query_id"),
            document_id=OuterRef("entry__document_id"),
            assessor_id=OuterRef("assignment__assessor_id"),
        )
    )
    return AssignmentItem.objects.filter(assignment__pool__collection=collection).annotate(
        has_judgement=judged
    )


def dashboard_stamp(*, collection: Collection) -> str:
    """Changes with every judgement, score, pool or assignment change (skips included)."""
    items = AssignmentItem.objects.filter(assignment__pool__collection=collection).aggregate(
        n=Count("id"), skipped=Count("id", filter=Q(skipped=True)), updated=Max("updated")
    )
    entries = PoolEntry.objects.filter(pool__collection=collection).count()
    state = scores_state(collection=collection).stamp
    parts = (state, items["n"], items["skipped"], items["updated"], entries)
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def dashboard_compute(*, collection: Collection, k: int, stamp: str) -> Dashboard:
    machines = MachineJudge.objects.filter(collection=collection).values("account_id")
    graded = Judgement.objects.filter(
        query_id=OuterRef("query_id"), document_id=OuterRef("document_id")
    )
    pooled_pairs = (
        PoolEntry.objects.filter(pool__collection=collection)
        .annotate(
            by_person=Exists(graded.exclude(assessor_id__in=machines)),
            by_machine=Exists(graded.filter(assessor_id__in=machines)),
        )
        .values("query_id", "document_id", "by_person", "by_machine")
        .distinct()
    )
    pooled_counts = pooled_pairs.aggregate(
        pooled=Count("query_id"),
        people=Count("query_id", filter=Q(by_person=True)),
        machine=Count("query_id", filter=Q(by_machine=True)),
        machine_only=Count("query_id", filter=Q(by_machine=True, by_person=False)),
    )
    counts = _items(collection).aggregate(
        n=Count("id"),
        judged=Count("id", filter=Q(has_judgement=True)),
        skipped=Count("id", filter=Q(has_judgement=False, skipped=True)),
    )
    assessors = [
        AssessorProgress(
            row["assignment__assessor__username"],
            row["n"],
            row["judged"],
            row["skipped"],
            assessor_pace(
                collection=collection,
                assessor_id=row["assignment__assessor_id"],
                left=row["n"] - row["judged"] - row["skipped"],
            ),
        )
        for row in _items(collection)
        .values("assignment__assessor__username", "assignment__assessor_id")
        .annotate(
            n=Count("id"),
            judged=Count("id", filter=Q(has_judgement=True)),
            skipped=Count("id", filter=Q(has_judgement=False, skipped=True)),
        )
        .order_by("assignment__assessor__username")
    ]
    # Judging (assessors' forms and API calls, adjudications, undo) and imports counted apart:
    # an imported qrels file is not a day's work of the assessors.
    per_day = [
        (day.isoformat(), judging, imported)
        for day, judging, imported in JudgementHistory.objects.filter(query__collection=collection)
        .annotate(day=TruncDate("changed_at"))
        .values("day")
        .annotate(
            judging=Count("id", filter=~Q(source__in=["import", "stale"])),
            imported=Count("id", filter=Q(source="import")),
        )
        .order_by("-day")
        .values_list("day", "judging", "imported")[:DAYS]
    ][::-1]
    coverage = [(row.run.name, row.judged) for row in leaderboard_rows(collection=collection, k=k)]
    agreement = agreement_summary(collection=collection)
    state = scores_state(collection=collection)
    recent = [
        Activity(*row)
        for row in JudgementHistory.objects.filter(query__collection=collection)
        .order_by("-changed_at", "-id")
        .values_list(
            "changed_at",
            "query__qid",
            "document__docno",
            "assessor__username",
            "old_grade",
            "new_grade",
            "source",
        )[:RECENT]
    ]
    return Dashboard(
        stamp=stamp,
        k=k,
        pooled=pooled_counts["pooled"],
        pooled_people=pooled_counts["people"],
        pooled_machine=pooled_counts["machine"],
        pooled_machine_only=pooled_counts["machine_only"],
        assigned=counts["n"],
        judged=counts["judged"],
        skipped=counts["skipped"],
        assessors=assessors,
        per_day=per_day,
        per_hour=changes_per_hour_today(collection=collection),
        coverage=coverage,
        alpha=agreement.alpha,
        agreement_units=agreement.units,
        pending_queries=state.pending_queries,
        pending_runs=state.pending_runs,
        recent=recent,
    )


def dashboard_read(*, collection: Collection, k: int) -> Dashboard:
    """The dashboard at k, computed at most once per stamp."""
    stamp = dashboard_stamp(collection=collection)
    key = f"dashboard:{collection.id}:{k}:{stamp}"
    dashboard = cache.get(key)
    if not isinstance(dashboard, Dashboard):
        dashboard = dashboard_compute(collection=collection, k=k, stamp=stamp)
        cache.set(key, dashboard, CACHE_SECONDS)
    return dashboard
