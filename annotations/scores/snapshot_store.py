"""A leaderboard snapshot's rows written in one statement, the matrix sent as binary."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import psycopg
from django.db import connection
from psycopg.types.json import Jsonb

from annotations.models import LeaderboardSnapshot

_FIELDS = ("stamp", "rows", "unscored", "computed_at", "seconds", "query_ids", "per_query")


def snapshot_store(
    *,
    collection_id: int,
    k: int,
    stamp: str,
    rows: list[dict[str, Any]],
    unscored: list[list[Any]],
    computed_at: datetime,
    seconds: float,
    query_ids: list[int],
    per_query: bytes,
    same_as_stored_at: str | None = None,
) -> dict[str, Any]:
    """Insert or replace the snapshot of (collection, k) and return its significance
    document (that of the last significance pass, kept).

    ``same_as_stored_at``: the caller found ``per_query`` the same bytes as the matrix
    stored with that stamp (a megabyte at 500 runs), which is then not sent again; should
    the stored snapshot have moved meanwhile, its matrix is emptied instead (it would not
    match these rows; the significance pass then has the rows computed again).

    On PostgreSQL one ``INSERT ... ON CONFLICT ... RETURNING`` with server-side binding:
    the matrix travels as bytes, not as the hex text Django's client-side binding makes
    of it."""
    if connection.vendor != "postgresql":
        values = {
            "stamp": stamp,
            "rows": rows,
            "unscored": unscored,
            "computed_at": computed_at,
            "seconds": seconds,
            "query_ids": query_ids,
            "per_query": per_query,
        }
        LeaderboardSnapshot.objects.bulk_create(
            [LeaderboardSnapshot(collection_id=collection_id, k=k, **values)],
            update_conflicts=True,
            unique_fields=["collection", "k"],
            update_fields=list(_FIELDS),
        )
        stored = LeaderboardSnapshot.objects.filter(collection_id=collection_id, k=k)
        significance: dict[str, Any] | None = stored.values_list("significance", flat=True).first()
        return significance or {}
    table = LeaderboardSnapshot._meta.db_table
    updates = ", ".join(f"{name} = EXCLUDED.{name}" for name in _FIELDS if name != "per_query")
    kept = same_as_stored_at is not None
    matrix = (
        f"CASE WHEN {table}.stamp = %s THEN {table}.per_query ELSE ''::bytea END"
        if kept
        else "EXCLUDED.per_query"
    )
    sql = (
        f"INSERT INTO {table} (collection_id, k, stamp, rows, unscored, computed_at, seconds, "
        "query_ids, per_query, significance, pairs) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %b, '{}'::jsonb, ''::bytea) "
        f"ON CONFLICT (collection_id, k) DO UPDATE SET {updates}, per_query = {matrix} "
        "RETURNING significance"
    )
    params = [
        collection_id,
        k,
        stamp,
        Jsonb(rows),
        Jsonb(unscored),
        computed_at,
        seconds,
        Jsonb(query_ids),
        b"" if kept else per_query,
        *([same_as_stored_at] if kept else []),
    ]
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    found = row[0] if row else None
    # Django's connection loads jsonb as text (its JSONField decodes it)
    return (json.loads(found) if isinstance(found, str) else found) or {}
