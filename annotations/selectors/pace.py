"""Assessors' pace on the dashboard: time per pair from the grading page's dwell, and today.

Read from the judgement history: each assessor's latest PACE_WINDOW timed grades (the
(assessor, changed_at) index, newest first, so the read is bounded however long the
campaign), and today's changes hour by hour (the changed_at index). The dashboard caches
both under its stamp.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from annotations.models import Collection, JudgementHistory

# How many of an assessor's latest timed grades the pace is read from.
PACE_WINDOW = 200
# History sources that are an assessor's or organiser's judging, not an import or a mark.
NOT_JUDGING = ("import", "stale")


@dataclass(frozen=True)
class Pace:
    """One assessor's pace over their latest timed grades, and what is left at that pace."""

    timed: int  # grades with a dwell time in the window
    median_seconds: float | None
    per_hour: float | None  # pairs per hour of time spent on pairs
    eta_seconds: float | None  # what is left at the mean time per pair

    @property
    def eta(self) -> str:
        """The time left as "2 min" or "1 h 05 min"; "" when there is no pace yet."""
        if self.eta_seconds is None:
            return ""
        minutes = round(self.eta_seconds / 60)
        if minutes < 60:
            return f"{minutes} min"
        return f"{minutes // 60} h {minutes % 60:02d} min"


NO_PACE = Pace(timed=0, median_seconds=None, per_hour=None, eta_seconds=None)


def assessor_pace(*, collection: Collection, assessor_id: int, left: int) -> Pace:
    """The pace of one assessor in one collection from their latest timed grades."""
    dwells: list[int] = [
        dwell
        for dwell in JudgementHistory.objects.filter(
            assessor_id=assessor_id,
            query__collection=collection,
            source="form",
            dwell_ms__isnull=False,
        )
        .order_by("-changed_at")
        .values_list("dwell_ms", flat=True)[:PACE_WINDOW]
        if dwell is not None
    ]
    if not dwells:
        return NO_PACE
    total_seconds = sum(dwells) / 1000
    mean = total_seconds / len(dwells)
    return Pace(
        timed=len(dwells),
        median_seconds=statistics.median(dwells) / 1000,
        per_hour=3600 / mean if mean > 0 else None,
        eta_seconds=left * mean,
    )


def changes_per_hour_today(*, collection: Collection) -> list[tuple[str, int, int]]:
    """(hour "HH:00", changes by judging, changes by imports) for each hour of today so far
    (the server's time zone), zeros included."""
    now = timezone.localtime()
    start = timezone.make_aware(datetime.combine(now.date(), time.min), now.tzinfo)
    counted = {
        timezone.localtime(hour).hour: (judging, imported)
        for hour, judging, imported in JudgementHistory.objects.filter(
            changed_at__gte=start, query__collection=collection
        )
        .annotate(hour=TruncHour("changed_at"))
        .values("hour")
        .annotate(
            judging=Count("id", filter=~Q(source__in=NOT_JUDGING)),
            imported=Count("id", filter=Q(source="import")),
        )
        .values_list("hour", "judging", "imported")
    }
    hours = int((now - start) / timedelta(hours=1)) + 1
    return [(f"{hour:02d}:00", *counted.get(hour, (0, 0))) for hour in range(min(hours, 24))]
