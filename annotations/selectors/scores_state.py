"""The stamp and pending state of a collection's scores: what pages poll to know when to refresh."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotations.bulk import cursor
from annotations.models import Collection, Query, Run, RunScore


@dataclass(frozen=True)
class ScoresState:
    """What changes whenever a page showing scores should refresh."""

    stamp: str
    pending: bool
    pending_queries: int
    pending_runs: int
    last_recomputed: datetime | None
    # The latest write the stamp covers (settings, runs, scores); None while scores are
    # pending, when a judgement has changed what no stored time records yet.
    changed_at: datetime | None = None


def scores_state(*, collection: Collection) -> ScoresState:
    """A stamp that changes with every judgement, run or score change, and the pending state.

    One statement of three aggregates, no per-row reads: every score page reads it, and
    open pages poll it to know when to refresh.
    """
    sql = f"""
        SELECT * FROM
          (SELECT COUNT(*), SUM(judgements_version), SUM(scored_version),
                  SUM(CASE WHEN judgements_version > scored_version THEN 1 ELSE 0 END)
             FROM {Query._meta.db_table} WHERE collection_id = %s) AS queries,
          (SELECT COUNT(*), MAX(updated), SUM(CASE WHEN scored_at IS NULL THEN 1 ELSE 0 END),
                  MAX(scored_at)
             FROM {Run._meta.db_table} WHERE collection_id = %s) AS runs,
          (SELECT COUNT(*), MAX(s.updated)
             FROM {RunScore._meta.db_table} s JOIN {Run._meta.db_table} r ON r.id = s.run_id
            WHERE r.collection_id = %s) AS run_scores
    """
    with cursor() as found:  # prepared once per connection on PostgreSQL
        found.execute(sql, [collection.id] * 3)
        row = found.fetchone()
    (_, _, _, stale, _, runs_updated, unscored, runs_scored, _, scores_updated) = row
    parts = (collection.updated, *row)
    stamp = hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
    recomputed = [t for t in map(_datetime, (runs_scored, scores_updated)) if t is not None]
    written = [
        t for t in map(_datetime, (collection.updated, runs_updated, *recomputed)) if t is not None
    ]
    pending = bool(stale or unscored)
    return ScoresState(
        stamp=stamp,
        pending=pending,
        pending_queries=int(stale or 0),
        pending_runs=int(unscored or 0),
        last_recomputed=max(recomputed) if recomputed else None,
        changed_at=None if pending or not written else max(written),
    )


def _datetime(value: datetime | str | None) -> datetime | None:
    """An aggregate's timestamp as an aware datetime (SQLite's raw rows give text)."""
    if value is None or isinstance(value, datetime):
        return value
    parsed = parse_datetime(value)
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    return parsed
