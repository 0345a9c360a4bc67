"""Bulk row insertion: COPY on PostgreSQL, batched INSERT statements elsewhere."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

from django.db import connection
from django.db.models import Model

BATCH_ROWS = 5000


def bulk_insert(model: type[Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Insert rows (tuples in `columns` order, column names as in the table) and count them.

    Runs inside the caller's transaction; rows are streamed, never materialised as model
    instances, so memory stays flat however many rows there are.
    """
    table = connection.ops.quote_name(model._meta.db_table)
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    count = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            raw = cursor.cursor  # the psycopg cursor under Django's wrapper
            with raw.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
                    count += 1
            return count
        placeholders = ", ".join(["%s"] * len(columns))
        sql = f"INSERT INTO {table} ({quoted}) VALUES ({placeholders})"
        iterator = iter(rows)
        while batch := list(islice(iterator, BATCH_ROWS)):
            cursor.executemany(sql, batch)
            count += len(batch)
    return count
