"""One judgement's rows in plain SQL: the statements every grade makes (API, grading form,
admin, pools, machine judges).

A grade is the platform's most frequent write. Built by the ORM, each of its statements
cost more Python than the database spent on it; here each is a fixed text with its
parameters. The callers (`judgements.judgement_upsert`) keep the rules: locking, history,
marks and events.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils.dateparse import parse_datetime

from annotations.bulk import cursor
from annotations.models import Document, GradeLevel, Judgement, JudgementHistory, Query

_JUDGEMENT = Judgement._meta.db_table
_HISTORY = JudgementHistory._meta.db_table
_QUERY = Query._meta.db_table
_DOCUMENT = Document._meta.db_table
_GRADE = GradeLevel._meta.db_table

# A judgement as `judgement_locked` reads it.
LockedRow = tuple[int, int, str, bool, datetime, datetime]


def _fetch(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with cursor() as found:
        found.execute(sql, params)
        return found.fetchall()


def _run(sql: str, params: list[Any]) -> None:
    with cursor() as found:
        found.execute(sql, params)


def moment(value: Any) -> datetime:
    """A timestamp column read by plain SQL (SQLite gives text, PostgreSQL an aware value)."""
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            raise ValueError(f"not a timestamp: {value!r}")
        value = parsed
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def timestamp_parameter(value: datetime) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


def grade_values(collection_id: int) -> list[int]:
    """The collection's grades, lowest first."""
    rows = _fetch(
        f"SELECT value FROM {_GRADE} WHERE collection_id = %s ORDER BY value", [collection_id]
    )
    return [value for (value,) in rows]


def pair_rows(
    collection_id: int, qid: str, docno: str
) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None, list[int]]:
    """In one statement: the query (id, qid, judgements_version, scored_version), the
    document (id, docno) and the grades of a collection."""
    rows = _fetch(
        f"SELECT 0, id, qid, judgements_version, scored_version FROM {_QUERY} "
        "WHERE collection_id = %s AND qid = %s "
        f"UNION ALL SELECT 1, id, docno, NULL, NULL FROM {_DOCUMENT} "
        "WHERE collection_id = %s AND docno = %s "
        f"UNION ALL SELECT 2, value, NULL, NULL, NULL FROM {_GRADE} WHERE collection_id = %s",
        [collection_id, qid, collection_id, docno, collection_id],
    )
    query = next((row[1:] for row in rows if row[0] == 0), None)
    document = next((row[1:3] for row in rows if row[0] == 1), None)
    grades = sorted(row[1] for row in rows if row[0] == 2)
    return query, document, grades


def judgement_locked(query_id: int, document_id: int, assessor_id: int) -> LockedRow | None:
    """The assessor's judgement of the pair, locked until the transaction ends (PostgreSQL;
    SQLite serialises writers): id, grade, note, stale, created, updated."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    rows = _fetch(
        f"SELECT id, grade, note, stale, created, updated FROM {_JUDGEMENT} "
        f"WHERE query_id = %s AND document_id = %s AND assessor_id = %s{lock}",
        [query_id, document_id, assessor_id],
    )
    if not rows:
        return None
    found, grade, note, stale, created, updated = rows[0]
    return found, grade, note, bool(stale), moment(created), moment(updated)


def judgement_insert(
    query_id: int, document_id: int, assessor_id: int, grade: int, note: str, now: datetime
) -> int | None:
    """Insert the judgement unless the pair already has one: its id, or None when there was
    one (committed, or inserted by a transaction this waited for). No savepoint: the
    conflict is not an error."""
    at = timestamp_parameter(now)
    rows = _fetch(
        f"INSERT INTO {_JUDGEMENT} "
        "(query_id, document_id, assessor_id, grade, note, stale, created, updated) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (query_id, document_id, assessor_id) DO NOTHING RETURNING id",
        [query_id, document_id, assessor_id, grade, note, False, at, at],
    )
    return rows[0][0] if rows else None


def judgement_change(judgement_id: int, grade: int, note: str, now: datetime) -> None:
    _run(
        f"UPDATE {_JUDGEMENT} SET grade = %s, note = %s, stale = %s, updated = %s WHERE id = %s",
        [grade, note, False, timestamp_parameter(now), judgement_id],
    )


def history_insert(
    *,
    query_id: int,
    document_id: int,
    assessor_id: int,
    changed_by_id: int | None,
    old: int | None,
    new: int | None,
    note: str,
    source: str,
    dwell_ms: int | None,
    now: datetime,
) -> None:
    _run(
        f"INSERT INTO {_HISTORY} (query_id, document_id, assessor_id, changed_by_id, "
        "old_grade, new_grade, note, source, changed_at, dwell_ms) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [
            query_id, document_id, assessor_id, changed_by_id, old, new, note, source,
            timestamp_parameter(now), dwell_ms,
        ],
    )  # fmt: skip


def query_versions(query_id: int) -> tuple[int, int] | None:
    """The query's (judgements_version, scored_version)."""
    rows = _fetch(
        f"SELECT judgements_version, scored_version FROM {_QUERY} WHERE id = %s", [query_id]
    )
    return (rows[0][0], rows[0][1]) if rows else None
