"""What reads of a leaderboard cost little by, from the stored snapshots alone.

`stored_read` names a leaderboard served as stored and current (for the bodies pages and the
API render once per name), and `table_stamp` tells the open page when reloading its table
would show something new. Neither computes, stores nor queues anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import TextField
from django.db.models.functions import MD5, Cast

from annotations.models import Collection, ImpactSnapshot, LeaderboardSnapshot
from annotations.selectors.scores_state import ScoresState, scores_state

# What a "being computed" answer suggests as the wait before asking again (Retry-After).
RETRY_AFTER_SECONDS = 2


@dataclass(frozen=True)
class StoredRead:
    """What a read of a leaderboard would serve as stored: its name (``key``, for a body
    rendered for it) and the scores stamp of its rows."""

    key: str
    stamp: str


def stored_read(*, collection: Collection, k: int) -> StoredRead | None:
    """The name of the leaderboard at k when it is stored at the current scores: no score
    pending, the rows at the current scores stamp and the flip marks (if any) for those
    rows; the name holds the time of its significance letters. None otherwise (the read
    then serves the stored rows marked stale, or "being computed").

    Four small reads, none of them the rows: a page or endpoint can answer from a body it
    rendered under this name without decoding the stored rows (hundreds of runs)."""
    state = scores_state(collection=collection)
    if state.pending:
        return None
    header = (
        LeaderboardSnapshot.objects.filter(collection=collection, k=k)
        .values_list("stamp", "computed_at", "significance__stamp", "significance__computed_at")
        .first()
    )
    if header is None:
        return None
    stamp, computed_at, significance_stamp, significance_at = header
    if stamp != state.stamp:
        return None
    flips = (
        ImpactSnapshot.objects.filter(collection=collection, k=k)
        .annotate(digest=MD5(Cast("adjacent", TextField())))
        .values_list("leaderboard_stamp", "digest")
        .first()
    )
    if flips is not None and flips[0] != stamp:
        return None  # the marks trail the rows: the worker refreshes them
    marks = flips[1] if flips is not None else "none"
    parts = (
        collection.id, k, stamp, computed_at.timestamp(), significance_stamp, significance_at, marks
    )  # fmt: skip
    return StoredRead(key=":".join(map(str, parts)), stamp=stamp)


def table_stamp(*, collection: Collection, k: int, state: ScoresState) -> str:
    """What the open leaderboard page's table should carry as its stamp (``data-stamp``):
    the stamp of the stored rows, with ``+significance`` while their significance pass has
    not run. The page reloads its table when this differs from its own, that is once a
    worker has stored something new; before the first snapshot, the scores stamp."""
    stored = LeaderboardSnapshot.objects.filter(collection=collection, k=k)
    found = stored.values_list("stamp", "significance__stamp").first()
    if found is None:
        return state.stamp
    stamp, significance_stamp = found
    if significance_stamp == stamp or stored.filter(rows=[]).exists():
        return stamp
    return f"{stamp}+significance"
