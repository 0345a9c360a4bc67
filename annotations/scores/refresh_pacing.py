"""Pacing of leaderboard refreshes under a steady stream of judgements.

A refresh of a collection's snapshots (every cutoff, with its statistics) costs far more
than the judgements that move them. While assessors judge without pause, each refresh is
due again as soon as the last one ends, and the derived worker would compute leaderboards
all the time, on the cores the web workers and the recomputations need. So after a refresh
that took `d` seconds and started soon after the one before it ended (back to back: the
judgements did not pause) the next one of the collection waits until `d * (1 / share - 1)`
seconds have passed since it ended (NDCG_REFRESH_MAX_SHARE, 0.5 by default: rest as long
as it ran), never less than the debounce. A burst after a quiet spell is not delayed: its
first refresh, and the one right after it for the burst's last judgements, do not rest,
and a rest left by the last burst is dropped when the judgements had paused (a
recomputation asks for a refresh more than a second after the previous one ended, and
none asked in between).
The marks are kept in the coordination cache; without one (or with it unreachable)
refreshes are not paced.

Without a broker the leaderboard's second pass (the all-pairs significance) runs in a read;
it waits until the scores have been still for NDCG_SIGNIFICANCE_QUIET_SECONDS (judgements
streaming in would otherwise start one after each) and, after a pass of `d` seconds, for
`d * (1 / NDCG_SIGNIFICANCE_MAX_SHARE - 1)`; the marks are per process when the coordination
cache is. One pass runs at a time however many processes serve reads
(`significance_pass_lock`): without a shared cache, a PostgreSQL advisory lock.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from datetime import datetime

from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.utils import timezone

logger = logging.getLogger(__name__)

# A refresh never waits longer than this for the previous one's rest.
MAX_REST_SECONDS = 30.0


def _rest_key(collection_id: int) -> str:
    return f"ndcg:leaderboards-rest:{collection_id}"


def rest_seconds(seconds: float, *, share: float | None = None) -> float:
    """How long the collection rests after a refresh that took `seconds`, so that its
    refreshes take at most `share` of the time (NDCG_REFRESH_MAX_SHARE by default)."""
    share = float(settings.NDCG_REFRESH_MAX_SHARE if share is None else share)
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
        window = rest + float(settings.NDCG_REFRESH_DEBOUNCE_SECONDS) + BACK_TO_BACK_SLACK_SECONDS
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


def _significance_rest_key(collection_id: int, k: int) -> str:
    return f"ndcg:significance-rest:{collection_id}:{k}"


def significance_due(*, collection_id: int, k: int, rows_computed_at: datetime) -> bool:
    """Whether a read may run the significance pass of rows computed at `rows_computed_at`
    (current rows: no change since): the scores still long enough, the last rest over."""
    quiet = float(settings.NDCG_SIGNIFICANCE_QUIET_SECONDS)
    if quiet > 0 and (timezone.now() - rows_computed_at).total_seconds() < quiet:
        return False
    try:
        until = caches["coordination"].get(_significance_rest_key(collection_id, k))
    except Exception:  # unpaced: costs time, not data
        return True
    return not (isinstance(until, int | float) and until > time.time())


def significance_done(*, collection_id: int, k: int, seconds: float) -> None:
    """After an inline significance pass that took `seconds`: its rest."""
    rest = rest_seconds(seconds, share=settings.NDCG_SIGNIFICANCE_MAX_SHARE)
    if rest > 0:
        with contextlib.suppress(Exception):  # unpaced: costs time, not data
            caches["coordination"].set(
                _significance_rest_key(collection_id, k), time.time() + rest, timeout=int(rest) + 1
            )


# An inline significance pass holds its mark at most this long (a process killed mid-pass
# leaves it to expire).
PASS_LOCK_SECONDS = 300
# The first key of the inline pass's PostgreSQL advisory lock: its namespace.
_PASS_LOCK_SPACE = 0x6E64


def pass_lock_key(*, collection_id: int, k: int) -> list[int]:
    """The two int4 keys of the inline pass's advisory lock of (collection, k)."""
    return [_PASS_LOCK_SPACE, (collection_id * 1_000_003 + k) % 2**31]


@contextlib.contextmanager
def significance_pass_lock(*, collection_id: int, k: int) -> Iterator[bool]:
    """Yields whether this read runs the inline significance pass of (collection, k): one
    at a time however many processes serve reads, so that when the scores go still the web
    workers do not each start the same pass.

    A mark in the coordination cache when that is shared (or the database is not
    PostgreSQL: one process); otherwise, every process holding its own cache, a PostgreSQL
    session advisory lock, released when the pass ends or, at the latest, when its
    connection closes. Two (collection, k) sharing a lock key only wait for each other.
    """
    if settings.NDCG_COORDINATION_SHARED or connection.vendor != "postgresql":
        key = f"ndcg:significance-pass:{collection_id}:{k}"
        try:
            taken = caches["coordination"].add(key, 1, timeout=PASS_LOCK_SECONDS)
        except Exception:  # no coordination: compute anyway (two at once cost time, not data)
            taken = True
        try:
            yield taken
        finally:
            if taken:
                with contextlib.suppress(Exception):  # the mark expires by itself
                    caches["coordination"].delete(key)
        return
    lock = pass_lock_key(collection_id=collection_id, k=k)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s::int4, %s::int4)", lock)
        row = cursor.fetchone()
    taken = bool(row and row[0])
    try:
        yield taken
    finally:
        if taken:
            with contextlib.suppress(Exception), connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s::int4, %s::int4)", lock)


# With a broker the significance passes are the derived worker's own tasks
# (`scores.refresh_work`): after a pass of `d` seconds the collection's next one waits
# `d * (1 / NDCG_SIGNIFICANCE_MAX_SHARE - 1)`, unless its rows are those the last pass ran
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
    if not (isinstance(found, list | tuple) and len(found) == 2):
        return 0.0
    last_stamp, until = found
    if last_stamp == stamp or not isinstance(until, int | float):
        return 0.0
    return max(0.0, min(MAX_REST_SECONDS, float(until) - time.time()))


def significance_pass_done(*, collection_id: int, stamp: str, seconds: float) -> None:
    """After a worker's significance pass over rows at `stamp` that took `seconds`."""
    if not settings.NDCG_COORDINATION_SHARED:
        return
    rest = rest_seconds(seconds, share=settings.NDCG_SIGNIFICANCE_MAX_SHARE)
    with contextlib.suppress(Exception):  # unpaced: costs time, not data
        caches["coordination"].set(
            _pass_key(collection_id),
            [stamp, time.time() + rest],
            timeout=int(rest) + int(MAX_REST_SECONDS),
        )
