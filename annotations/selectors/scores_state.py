"""The stamp and pending state of a collection's scores: what pages poll to know when to refresh."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Max, Q, Sum

from annotations.models import Collection, Query, Run, RunScore


@dataclass(frozen=True)
class ScoresState:
    """What changes whenever a page showing scores should refresh."""

    stamp: str
    pending: bool
    pending_queries: int
    pending_runs: int
    last_recomputed: datetime | None


def scores_state(*, collection: Collection) -> ScoresState:
    """A stamp that changes with every judgement, run or score change, and the pending state.

    Five aggregate queries, no per-row reads: pages poll it to know when to refresh.
    """
    queries = Query.objects.filter(collection=collection).aggregate(
        count=Count("id"),
        versions=Sum("judgements_version"),
        scored=Sum("scored_version"),
        stale=Count("id", filter=Q(judgements_version__gt=F("scored_version"))),
    )
    runs = Run.objects.filter(collection=collection).aggregate(
        count=Count("id"),
        updated=Max("updated"),
        unscored=Count("id", filter=Q(scored_at__isnull=True)),
        scored=Max("scored_at"),
    )
    run_scores = RunScore.objects.filter(run__collection=collection).aggregate(
        count=Count("id"), updated=Max("updated")
    )
    parts = (
        collection.updated, *queries.values(), *runs.values(), *run_scores.values(),
    )  # fmt: skip
    stamp = hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
    stale, unscored = int(queries["stale"] or 0), int(runs["unscored"] or 0)
    recomputed = [t for t in (runs["scored"], run_scores["updated"]) if t is not None]
    return ScoresState(
        stamp=stamp,
        pending=bool(stale or unscored),
        pending_queries=stale,
        pending_runs=unscored,
        last_recomputed=max(recomputed) if recomputed else None,
    )
