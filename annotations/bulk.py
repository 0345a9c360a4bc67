"""Bulk row insertion: COPY on PostgreSQL, batched INSERT statements elsewhere."""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import islice
from typing import Any

import psycopg
from django.db import connection
from django.db.models import Model

BATCH_ROWS = 5000


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: Any) -> str:
    """One value in COPY's text format (formatting here is several times faster than
    psycopg's per-row adaptation for the integers, strings and timestamps of imports)."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\\\x" + bytes(value).hex()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value).translate(_COPY_ESCAPES)


def bulk_insert(
    model: type[Model],
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    binary: bool = False,
) -> int:
    """Insert rows (tuples in `columns` order, column names as in the table) and count them.

    Runs inside the caller's transaction; rows are streamed, never materialised as model
    instances, so memory stays flat however many rows there are. `binary`: COPY in binary
    format on PostgreSQL: no text to build and parse (large bytea values, or many rows of
    plain values).
    """
    iterator = iter(rows)
    first = next(iterator, None)
    if first is None:
        return 0  # nothing to send: no COPY round trip
    rows = itertools.chain([first], iterator)
    table = connection.ops.quote_name(model._meta.db_table)
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    count = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and binary:
            with cursor.cursor.copy(f"COPY {table} ({quoted}) FROM STDIN (FORMAT BINARY)") as copy:
                # Binary COPY names types without modifiers: varchar(12) is varchar.
                types = [name.split("(")[0] for name in _column_types(model, tuple(columns))]
                copy.set_types(types)
                for row in rows:
                    copy.write_row(row)
                    count += 1
            return count
        if connection.vendor == "postgresql":
            raw = cursor.cursor  # the psycopg cursor under Django's wrapper
            with raw.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
                lines: list[str] = []
                for row in rows:
                    lines.append("\t".join(map(_copy_text, row)))
                    count += 1
                    if len(lines) == BATCH_ROWS:
                        copy.write("\n".join(lines) + "\n")
                        lines = []
                if lines:
                    copy.write("\n".join(lines) + "\n")
            return count
        placeholders = ", ".join(["%s"] * len(columns))
        sql = f"INSERT INTO {table} ({quoted}) VALUES ({placeholders})"
        iterator = iter(rows)
        while batch := list(islice(iterator, BATCH_ROWS)):
            cursor.executemany(sql, batch)
            count += len(batch)
    return count


def bulk_update(
    model: type[Model],
    *,
    key: Sequence[str],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    constants: Mapping[str, Any] | None = None,
) -> int:
    """Update rows in place, each row being (*key values, *column values); one statement.

    `constants` are columns set to the same value in every row (sent once). In-place
    updates of unindexed columns let PostgreSQL keep the rows on their pages (HOT updates):
    the score tables are rewritten on every judgement, and delete + insert would leave them
    bloated with dead rows.
    """
    if not rows:
        return 0
    constants = dict(constants or {})
    table = connection.ops.quote_name(model._meta.db_table)
    names = [*key, *columns]
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # One array parameter per column (unnest): a small statement however many rows.
            # Each array travels as one text literal built here in C-speed joins, which is
            # several times cheaper than adapting every element; floats are written as
            # repr(), which reads back as the same double.
            values = list(zip(*rows, strict=True))
            # A key column with one value in every row (the query of a query's scores)
            # becomes a plain condition: one index range scan instead of a probe per row.
            fixed = {
                name: column[0]
                for name, column in zip(key, values, strict=False)
                if column.count(column[0]) == len(column)
            }
            varying = [i for i, name in enumerate(names) if name not in fixed]
            types = _column_types(model, tuple(names))
            assignments = ", ".join(
                [f"{quote(c)} = v.{quote(c)}" for c in columns]
                + [f"{quote(c)} = %s" for c in constants]
            )
            match = " AND ".join(
                [f"t.{quote(k)} = %s" for k in fixed]
                + [f"t.{quote(k)} = v.{quote(k)}" for k in key if k not in fixed]
            )
            # bytea arrays travel in binary (%b): no escaping of every byte as text.
            unnest = ", ".join(
                f"{'%b' if _all_bytes(values[i]) else '%s'}::{types[i]}[]" for i in varying
            )
            aliases = ", ".join(quote(names[i]) for i in varying)
            # Server-side binding: the parameters are not spliced into the SQL text.
            with psycopg.Cursor(connection.connection) as raw:
                raw.execute(
                    f"UPDATE {table} AS t SET {assignments} FROM unnest({unnest}) "
                    f"AS v({aliases}) WHERE {match}",
                    [
                        *constants.values(),
                        *[_array_parameter(values[i]) for i in varying],
                        *fixed.values(),
                    ],
                )
            return len(rows)
        assignments = ", ".join(
            [f"{quote(c)} = %s" for c in columns] + [f"{quote(c)} = %s" for c in constants]
        )
        match = " AND ".join(f"{quote(k)} = %s" for k in key)
        cursor.executemany(
            f"UPDATE {table} SET {assignments} WHERE {match}",
            [(*row[len(key) :], *constants.values(), *row[: len(key)]) for row in rows],
        )
    return len(rows)


def bulk_delete(model: type[Model], *, key: Sequence[str], keys: Sequence[Sequence[Any]]) -> int:
    """Delete the rows with these key values (tuples in `key` order); one statement."""
    if not keys:
        return 0
    table = connection.ops.quote_name(model._meta.db_table)
    quote = connection.ops.quote_name
    if connection.vendor == "postgresql":
        types = _column_types(model, tuple(key))
        unnest = ", ".join(f"%s::{t}[]" for t in types)
        match = " AND ".join(f"t.{quote(k)} = v.{quote(k)}" for k in key)
        with psycopg.Cursor(connection.connection) as raw:
            raw.execute(
                f"DELETE FROM {table} AS t USING unnest({unnest}) "
                f"AS v({', '.join(quote(k) for k in key)}) WHERE {match}",
                [_array_literal(column) for column in zip(*keys, strict=True)],
            )
        return len(keys)
    match = " AND ".join(f"{quote(k)} = %s" for k in key)
    with connection.cursor() as cursor:
        cursor.executemany(f"DELETE FROM {table} WHERE {match}", [tuple(k) for k in keys])
    return len(keys)


_BYTES_TYPES = frozenset({bytes, bytearray, memoryview})


def _all_bytes(values: Sequence[Any]) -> bool:
    kinds = set(map(type, values))  # C speed: this runs on every column of every update
    if kinds <= _BYTES_TYPES:
        return bool(values)
    return bool(values) and all(
        isinstance(value, bytes | bytearray | memoryview) for value in values
    )


def _array_parameter(values: Sequence[Any]) -> str | list[bytes]:
    """One column's values as an array parameter: bytea values as a list (sent in binary),
    everything else as a text literal."""
    if _all_bytes(values):
        return [bytes(value) for value in values]
    return _array_literal(values)


def _array_literal(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal ('{1,2.5,NULL,"text"}') of one column's values."""
    if all(type(value) is float for value in values):
        return "{" + ",".join(map(repr, values)) + "}"
    if all(type(value) is int for value in values):
        return "{" + ",".join(map(str, values)) + "}"
    if all(type(value) is str and '"' not in value and "\\" not in value for value in values):
        return '{"' + '","'.join(values) + '"}'
    return "{" + ",".join(map(_array_element, values)) + "}"


def _array_element(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, int | float):
        return repr(value)
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@functools.cache
def _column_types(model: type[Model], names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_column_type(model, name) for name in names)


def _base_type(db_type: str | None) -> str:
    """The column type without its constraints ('integer CHECK (...)' -> 'integer')."""
    if db_type is None:
        raise ValueError("a column without a database type cannot be updated in bulk")
    return db_type.split(" CHECK")[0].strip()


def _column_type(model: type[Model], column: str) -> str:
    for field in model._meta.concrete_fields:
        if field.column == column:
            return _base_type(field.db_type(connection))
    raise ValueError(f"{model.__name__} has no column {column!r}")


def fetch_binary(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run a query whose results include large bytea values, fetched in binary on PostgreSQL.

    Text transfer would hex-encode every byte (twice the size, then decoded in Python).
    """
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        # Django's cursors bind on the client, which cannot return binary results.
        with psycopg.Cursor(connection.connection) as raw:
            raw.execute(sql, params, binary=True)
            return raw.fetchall()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@contextmanager
def reads(
    statements: Sequence[tuple[str, Sequence[Any], bool]],
) -> Iterator[Iterator[list[tuple[Any, ...]]]]:
    """Run reads given as (sql, params, binary) and yield their rows one statement at a time.

    On PostgreSQL they all leave at once in one pipeline: the server works through them
    back to back while the caller handles the rows of the first ones (binary: results
    fetched in binary, for bytea). Other reads may run inside the block; no COPY.
    """
    if connection.vendor != "postgresql":
        yield _sqlite_reads(statements)
        return
    connection.ensure_connection()
    conn = connection.connection
    cursors: list[psycopg.Cursor[Any]] = []
    try:
        with conn.pipeline():
            for sql, params, binary in statements:
                cursor = psycopg.Cursor(conn)
                cursors.append(cursor)
                cursor.execute(sql, params, binary=binary)
            yield (cursor.fetchall() for cursor in cursors)
    finally:
        for cursor in cursors:
            cursor.close()


def _sqlite_reads(
    statements: Sequence[tuple[str, Sequence[Any], bool]],
) -> Iterator[list[tuple[Any, ...]]]:
    with connection.cursor() as cursor:
        for sql, params, _ in statements:
            cursor.execute(sql, params)
            yield cursor.fetchall()


@contextmanager
def pipeline() -> Iterator[None]:
    """Statements of `bulk_update` inside are sent without waiting for each one's result.

    On PostgreSQL (pipeline mode) the server works on them while Python goes on; their
    results and errors arrive when the block ends. No COPY (`bulk_insert`) inside.
    """
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        with connection.connection.pipeline():
            yield
    else:
        yield


def execute(sql: str, params: Sequence[Any]) -> None:
    """One statement without results; inside `pipeline()` it does not wait for the server."""
    with cursor() as found:
        found.execute(sql, params)


@contextmanager
def cursor() -> Iterator[Any]:
    """A cursor for the platform's own SQL text (``%s`` parameters). On PostgreSQL it binds
    on the server: the parameters travel apart from the text, so psycopg prepares a
    statement once a connection has run it a few times (settings: `prepare_threshold`), and
    PostgreSQL no longer parses and plans a judgement's statements on every grade. Errors
    are Django's, as from `connection.cursor()`, which it is elsewhere."""
    if connection.vendor != "postgresql":
        with connection.cursor() as django_cursor:
            yield django_cursor
        return
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as raw:
        yield _Logged(raw) if connection.queries_logged else raw


class _Logged:
    """A server-binding cursor whose statements are logged as Django logs its own (DEBUG,
    and the tests that count a request's statements)."""

    def __init__(self, raw: psycopg.Cursor[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] | None = None, **options: Any) -> Any:
        start = time.monotonic()
        try:
            return self.raw.execute(sql, params, **options)
        finally:
            elapsed = time.monotonic() - start
            connection.queries_log.append({"sql": sql, "time": f"{elapsed:.3f}"})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)
