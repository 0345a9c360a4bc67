"""A leaderboard read that never computes a first snapshot in the request while a worker can.

Every cutoff's snapshot (and the top-grade bounds it needs) is computed by the derived worker
after an import, a cutoff change or a rescore (`snapshots.leaderboards_refresh_schedule`,
queued by the recomputations). A read that comes before it, at a cutoff with no snapshot
stored yet, queues that refresh (once, however many ask) and answers "being computed" at
once instead of computing for seconds. Without a broker (inline mode) there is no worker:
the read computes the snapshot itself, as before.
"""

from __future__ import annotations

from django.conf import settings

from annotations.models import Collection, LeaderboardSnapshot
from annotations.scores import snapshots
from annotations.selectors.leaderboards import Leaderboard

# What a "being computed" answer suggests as the wait before asking again (Retry-After).
RETRY_AFTER_SECONDS = 2


def leaderboard_read_ready(*, collection: Collection, k: int) -> Leaderboard | None:
    """The leaderboard at k (`snapshots.leaderboard_read`), or None while its first snapshot
    is being computed by a worker (queued now if it was not)."""
    if (
        settings.CELERY_BROKER_URL
        and not LeaderboardSnapshot.objects.filter(collection=collection, k=k).exists()
    ):
        snapshots.leaderboards_refresh_schedule(collection_id=collection.id, delay=0.0)
        return None
    return snapshots.leaderboard_read(collection=collection, k=k)
