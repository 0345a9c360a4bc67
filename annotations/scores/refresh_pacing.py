"""Pacing of leaderboard refreshes under a steady stream of judgements.

A refresh of a collection's snapshots (every cutoff, with its statistics) costs far more
than the judgements that move them. While assessors judge without pause, each refresh is
due again as soon as the last one ends, and the derived worker would compute leaderboards
all the time, on the cores the web workers and the recomputations need. So after a refresh
that took `d` seconds and started soon after the one before it ended (back to back: the
judgements did not pause) the next one of the collection waits until `d * (1 / share - 1)`
seconds have passed since it ended (REFRESH_SHARE: rest as long as it ran), never less
than the debounce. A burst after a quiet spell is not delayed: its
first refresh, and the one right after it for the burst's last judgements, do not rest,
and a rest left by the last burst is dropped when the judgements had paused (a
recomputation asks for a refresh more than a second after the previous one ended, and
none asked in between).
The marks are kept in the coordination cache; without one (or with it unreachable)
refreshes are not paced.
"""

from __future__ import annotations

import contextlib
import logging
import time

from django.conf import settings
from django.core.cache import caches

logger = logging.getLogger(__name__)

# A refresh never waits longer than this for the previous one's rest.
MAX_REST_SECONDS = 30.0
# A refresh starts this long after the first change of a burst, so that the burst's later
# judgements are in it: one refresh per burst rather than one per judgement, while a page
# still follows a grade within a second.
DEBOUNCE_SECONDS = 0.5
# Under steady judging a collection's rows refreshes take at most this share of a derived
# worker's time, and a leaderboard's significance passes (far costlier, and shown marked
# as being recomputed meanwhile) a smaller one: the cores stay with the web workers and
# the recomputations, which assessors wait for.
REFRESH_SHARE = 0.5
SIGNIFICANCE_SHARE = 0.2


def _rest_key(collection_id: int) -> str:
    return f"ndcg:leaderboards-rest:{collection_id}"


def rest_seconds(seconds: float, *, share: float | None = None) -> float:
    """How long the collection rests after a refresh that took `seconds`, so that its
    refreshes take at most `share` of the time (REFRESH_SHARE by default)."""
    share = REFRESH_SHARE if share is None else share
    if share >= 1.0 or seconds <= 0:
        return 0.0
    return min(MAX_REST_SECONDS, seconds * (1.0 / share - 1.0))


def _ended_key(collection_id: int) -> str:
    return f"ndcg:leaderboards-ended:{collection_id}"


# Started within this long (beyond the rest and the debounce) after the previous refresh
# ended, a refresh counts as back to back.
BACK_TO_BACK_SLACK_SECONDS = 1.0


def refresh_done(*, collection_id: int, seconds: float) -> None:
    """After a refresh that took `seconds`: when the collection's next one may start."""
    rest = rest_seconds(seconds)
    if rest <= 0 or not settings.NDCG_COORDINATION_SHARED:
        return
    now = time.time()
    coordination = caches["coordination"]
    try:
        previous = coordination.get(_ended_key(collection_id))
        coordination.set(_ended_key(collection_id), now, timeout=int(2 * MAX_REST_SECONDS))
        started = now - seconds
        window = rest + DEBOUNCE_SECONDS + BACK_TO_BACK_SLACK_SECONDS
        if isinstance(previous, int | float) and started - float(previous) <= window:
            coordination.set(_rest_key(collection_id), now + rest, timeout=max(1, int(rest) + 1))
    except Exception:  # unpaced: costs time, not data
        logger.warning("could not record the refresh pace of collection %s", collection_id)


def refresh_countdown(*, collection_id: int, countdown: float) -> float:
    """The countdown of a refresh being queued now: at least `countdown`, and at least until
    the previous refresh's rest is over."""
    if not settings.NDCG_COORDINATION_SHARED:
        return countdown
    try:
        until = caches["coordination"].get(_rest_key(collection_id))
    except Exception:
        return countdown
    if not isinstance(until, int | float):
        return countdown
    return max(countdown, min(MAX_REST_SECONDS, float(until) - time.time()))


def _asked_key(collection_id: int) -> str:
    return f"ndcg:leaderboards-asked:{collection_id}"


def rest_dropped_after_pause(*, collection_id: int) -> bool:
    """Called as a recomputation asks for a refresh: whether this ends the collection's
    rest. It does when the judgements paused: nothing asked since the last refresh ended,
    more than BACK_TO_BACK_SLACK_SECONDS ago. So a new burst is not held back by the rest
    of the last one (nor by a refresh queued for the rest's end), while a steady stream,
    whose recomputations keep asking, is paced."""
    if not settings.NDCG_COORDINATION_SHARED:
        return False
    coordination = caches["coordination"]
    now = time.time()
    try:
        keys = [_rest_key(collection_id), _ended_key(collection_id), _asked_key(collection_id)]
        found = coordination.get_many(keys)
        coordination.set(keys[2], now, timeout=int(2 * MAX_REST_SECONDS))
        until, ended, asked = (found.get(key) for key in keys)
        if not (isinstance(until, int | float) and until > now):
            return False
        if not (isinstance(ended, int | float) and now - ended > BACK_TO_BACK_SLACK_SECONDS):
            return False
        if isinstance(asked, int | float) and asked >= ended:
            return False  # asked meanwhile: the judgements went on
        coordination.delete(keys[0])
    except Exception:  # unpaced: costs time, not data
        return False
    return True


# The significance passes are the derived worker's own tasks
# (`scores.refresh_work`): after a pass of `d` seconds the collection's next one waits
# `d * (1 / SIGNIFICANCE_SHARE - 1)`, unless its rows are those the last pass ran
# on (the other cutoffs of one burst's rows follow each other without a rest).


def _pass_key(collection_id: int) -> str:
    return f"ndcg:significance-worker-pass:{collection_id}"


def significance_rest_left(*, collection_id: int, stamp: str) -> float:
    """Seconds a worker's significance pass over rows at `stamp` still waits: what is left of
    the last pass's rest, or nothing when that pass ran on rows at the same stamp."""
    if not settings.NDCG_COORDINATION_SHARED:
        return 0.0
    try:
        found = caches["coordination"].get(_pass_key(collection_id))
    except Exception:  # unpaced: costs time, not data
        return 0.0
    if not (isinstance(found, list | tuple) and len(found) == 3):
        return 0.0
    last_stamp, until, _ = found
    if last_stamp == stamp or not isinstance(until, int | float):
        return 0.0
    return max(0.0, min(MAX_REST_SECONDS, float(until) - time.time()))


def significance_pass_done(*, collection_id: int, stamp: str, seconds: float) -> None:
    """After a worker's significance pass over rows at `stamp` that took `seconds`. The
    passes of one stamp (every cutoff's, every kept measure's) rest as one: the rest follows
    their summed time."""
    if not settings.NDCG_COORDINATION_SHARED:
        return
    coordination = caches["coordination"]
    with contextlib.suppress(Exception):  # unpaced: costs time, not data
        found = coordination.get(_pass_key(collection_id))
        if isinstance(found, list | tuple) and len(found) == 3 and found[0] == stamp:
            seconds += float(found[2])
        rest = rest_seconds(seconds, share=SIGNIFICANCE_SHARE)
        coordination.set(
            _pass_key(collection_id),
            [stamp, time.time() + rest, seconds],
            timeout=int(rest) + int(MAX_REST_SECONDS),
        )
