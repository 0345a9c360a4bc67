"""Which search systems a scheduled fetch is due for."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db.models import OuterRef, Subquery

from annotations.models import ImportJob, SearchSystem


def next_fetch(system: SearchSystem, last: datetime | None, now: datetime) -> datetime | None:
    """When the system's next scheduled fetch is due: `fetch_every_hours` after its last
    fetch began (now if it was never fetched); None without a schedule."""
    if system.fetch_every_hours is None:
        return None
    if last is None:
        return now
    return last + timedelta(hours=system.fetch_every_hours)


def systems_due(*, now: datetime, ids: Sequence[int] | None = None) -> list[int]:
    """The ids of the scheduled systems (of `ids`, if given) with no fetch going whose last
    fetch, in whatever state it ended, was queued `fetch_every_hours` or more before `now`
    (or that were never fetched). A failed fetch waits for the next turn: an engine that is
    down is not asked again every sweep."""
    fetches = ImportJob.objects.filter(system=OuterRef("pk"), kind=ImportJob.FETCH)
    systems = (
        SearchSystem.objects.filter(fetch_every_hours__isnull=False)
        .exclude(fetches__state__in=ImportJob.ACTIVE)
        .annotate(last=Subquery(fetches.order_by("-created").values("created")[:1]))
        .order_by("id")
    )
    if ids is not None:
        systems = systems.filter(id__in=list(ids))
    due = []
    for system in systems.only("id", "fetch_every_hours"):
        at = next_fetch(system, system.last, now)  # type: ignore[attr-defined]
        if at is not None and at <= now:
            due.append(system.id)
    return due
