"""The bootstrap CIs a stored leaderboard snapshot holds, with the values they came from."""

from __future__ import annotations

import json

from annotations.bulk import fetch_binary
from annotations.models import Collection, LeaderboardSnapshot
from annotations.selectors.leaderboards import KnownIntervals

_WIDTH = 8  # bytes of one stored value (float64)


def known_intervals(*, collection: Collection, k: int) -> KnownIntervals | None:
    """The CIs of the snapshot stored for (collection, k), each with its run's row of the
    stored per-query matrix, for the next computation to keep where the values did not move
    (``leaderboards.KnownIntervals``); None without a snapshot.

    The matrix's columns are the queries every run counts; a row is the input its CI was
    computed from only when the run counted exactly those queries (its ``queries``), so
    only such runs are offered.
    """
    table = LeaderboardSnapshot._meta.db_table
    found = fetch_binary(
        f"SELECT rows, query_ids, per_query, stamp FROM {table} "
        "WHERE collection_id = %s AND k = %s",
        [collection.id, k],
    )
    if not found:
        return None
    rows, query_ids, per_query, stamp = found[0]
    if isinstance(rows, str):  # SQLite's raw rows are text
        rows, query_ids = json.loads(rows), json.loads(query_ids)
    matrix = bytes(per_query)
    width = _WIDTH * len(query_ids)
    if not rows or not width or len(matrix) != width * len(rows):
        return None
    values: dict[int, bytes] = {}
    intervals: dict[int, tuple[float, float]] = {}
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("queries") != len(query_ids):
            continue
        low, high = row.get("ci_low"), row.get("ci_high")
        if low is None or high is None:
            continue
        values[row["run"]] = matrix[index * width : (index + 1) * width]
        intervals[row["run"]] = (float(low), float(high))
    return KnownIntervals(tuple(query_ids), values, intervals, matrix, stamp)
