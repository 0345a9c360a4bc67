"""Primary keys of a collection's queries and documents by their ids, created on the fly."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from django.db import IntegrityError, connection, transaction
from django.db.models import Model

from annotations.bulk import copy_text

if TYPE_CHECKING:  # Arrow loads with the first column looked up, not with Django
    import pyarrow as pa

# Up to this many values are looked up by one index probe each; more by a hash join, which
# reads every row of the collection once.
_PROBES_UP_TO = 20_000
# int4send(position) || int8send(id): big-endian, packed.
_POSITION_ID = np.dtype([("position", ">i4"), ("id", ">i8")])


def ids_ensure(
    model: type[Model],
    *,
    collection_id: int,
    key: str,
    values: Iterable[str],
    defaults: dict[str, Any],
) -> dict[str, int]:
    """key value -> primary key for rows of one collection, inserting the missing ones.

    The insert skips rows that exist (ON CONFLICT / OR IGNORE on the unique (collection, key)
    constraint), so two imports creating the same ids at once do not collide. On PostgreSQL
    the values travel once, by COPY into a temporary table, whatever their number.
    """
    wanted = sorted(set(values))
    if not wanted:
        return {}
    table = connection.ops.quote_name(model._meta.db_table)
    key_column = connection.ops.quote_name(key)
    columns = ["collection_id", key, *defaults]
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("CREATE TEMP TABLE IF NOT EXISTS ndcg_wanted_ids (value text)")
            cursor.execute("TRUNCATE ndcg_wanted_ids")
            raw = cursor.cursor
            with raw.copy("COPY ndcg_wanted_ids (value) FROM STDIN") as copy:
                text = "\n".join(wanted)
                special = any(char in text for char in "\\\t\r")
                if special or text.count("\n") != len(wanted) - 1:
                    text = "\n".join(map(copy_text, wanted))  # values that need escaping
                copy.write(text + "\n")
            cursor.execute("ANALYZE ndcg_wanted_ids")  # a fresh temp table has no statistics
            joined = f"{table} t JOIN ndcg_wanted_ids w ON t.{key_column} = w.value"
            cursor.execute(
                f"SELECT t.{key_column}, t.id FROM {joined} WHERE t.collection_id = %s",
                [collection_id],
            )
            ids = dict(cursor.fetchall())
            if len(ids) == len(wanted):
                return ids  # the common case on a second import: nothing to create
            placeholders = ", ".join(["%s"] * len(defaults))
            # Only the missing ones; ON CONFLICT covers another import creating them meanwhile.
            cursor.execute(
                f"INSERT INTO {table} ({quoted}) SELECT %s, w.value"
                f"{', ' + placeholders if defaults else ''} FROM ndcg_wanted_ids w "
                f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.collection_id = %s "
                f"AND t.{key_column} = w.value) ON CONFLICT DO NOTHING",
                [collection_id, *defaults.values(), collection_id],
            )
            cursor.execute(
                f"SELECT t.{key_column}, t.id FROM {joined} WHERE t.collection_id = %s",
                [collection_id],
            )
            return dict(cursor.fetchall())
        placeholders = ", ".join(["%s"] * len(columns))
        cursor.executemany(
            f"INSERT OR IGNORE INTO {table} ({quoted}) VALUES ({placeholders})",
            [(collection_id, value, *defaults.values()) for value in wanted],
        )
        found: dict[str, int] = {}
        for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
            chunk = wanted[start : start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"SELECT {key_column}, id FROM {table} "
                f"WHERE collection_id = %s AND {key_column} IN ({marks})",
                [collection_id, *chunk],
            )
            found.update(cursor.fetchall())
        return found


def ids_ensure_column(
    model: type[Model],
    *,
    collection_id: int,
    key: str,
    values: pa.StringArray,
    defaults: dict[str, Any],
) -> npt.NDArray[np.int64]:
    """`ids_ensure` for an Arrow column of distinct values: their ids, in the same order.

    On PostgreSQL the values travel as CSV written by Arrow; the ids come back as one
    bytea of packed (position, id) pairs read straight into an array, and the rows created
    return theirs from the INSERT: hundreds of thousands of docnos per run file without a
    Python object per value.
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    if connection.vendor != "postgresql" or len(values) == 0:
        wanted = values.to_pylist()
        found = ids_ensure(
            model, collection_id=collection_id, key=key, values=wanted, defaults=defaults
        )
        return np.array([found[value] for value in wanted], dtype=np.int64)
    table = connection.ops.quote_name(model._meta.db_table)
    key_column = connection.ops.quote_name(key)
    columns = ", ".join(connection.ops.quote_name(c) for c in ["collection_id", key, *defaults])
    payload = io.BytesIO()
    pa_csv.write_csv(
        pa.table({"value": values, "ord": np.arange(len(values), dtype=np.int32)}),
        payload,
        pa_csv.WriteOptions(include_header=False, quoting_style="needed"),
    )
    pairs = "string_agg(int4send(w.ord) || int8send(t.id), ''::bytea)"
    if len(values) <= _PROBES_UP_TO:
        existing = (
            f"SELECT {pairs} FROM ndcg_wanted_column w CROSS JOIN LATERAL (SELECT d.id FROM "
            f"{table} d WHERE d.collection_id = %s AND d.{key_column} = w.value LIMIT 1) t"
        )
    else:
        existing = (
            f"SELECT {pairs} FROM ndcg_wanted_column w JOIN {table} t "
            f"ON t.{key_column} = w.value AND t.collection_id = %s"
        )

    def created(on_conflict: str) -> str:
        return (
            f"WITH t AS (INSERT INTO {table} ({columns}) SELECT %s, w.value"
            f"{', %s' * len(defaults)} FROM ndcg_wanted_column w JOIN unnest(%s::int4[]) m(ord) "
            f"ON m.ord = w.ord {on_conflict} RETURNING id, {key_column}) "
            f"SELECT {pairs} FROM t JOIN ndcg_wanted_column w ON w.value = t.{key_column}"
        )

    ids = np.zeros(len(values), dtype=np.int64)
    with connection.cursor() as cursor, _work_mem(cursor, "64MB"):
        cursor.execute("CREATE TEMP TABLE IF NOT EXISTS ndcg_wanted_column (value text, ord int)")
        cursor.execute("TRUNCATE ndcg_wanted_column")
        fill = "COPY ndcg_wanted_column (value, ord) FROM STDIN (FORMAT csv)"
        with cursor.cursor.copy(fill) as copy:
            copy.write(payload.getbuffer())
        if len(values) > _PROBES_UP_TO:
            cursor.execute("ANALYZE ndcg_wanted_column")  # for the join's plan
        _pairs_into(ids, cursor, existing, [collection_id])
        missing = np.flatnonzero(ids == 0).astype(np.int32).tolist()
        if missing:
            params = [collection_id, *defaults.values(), missing]
            try:
                with transaction.atomic():
                    _pairs_into(ids, cursor, created(""), params)
            except IntegrityError:  # another import created some of them meanwhile
                _pairs_into(ids, cursor, created("ON CONFLICT DO NOTHING"), params)
                _pairs_into(ids, cursor, existing, [collection_id])
    if not ids.all():
        raise RuntimeError(f"{(ids == 0).sum()} of {len(values)} {key} values found no row")
    return ids


@contextmanager
def _work_mem(cursor: Any, size: str) -> Iterator[None]:
    """Raise work_mem for the statements inside (a hash join of a few hundred thousand
    values stays in memory), then restore it; local to the transaction either way."""
    cursor.execute("SELECT current_setting('work_mem')")
    (before,) = cursor.fetchone()
    cursor.execute("SELECT set_config('work_mem', %s, true)", [size])
    try:
        yield
    finally:
        cursor.execute("SELECT set_config('work_mem', %s, true)", [before])


def _pairs_into(ids: npt.NDArray[np.int64], cursor: Any, sql: str, params: list[Any]) -> None:
    """Run a query returning packed big-endian (int4 position, int8 id) pairs as one bytea;
    ids[position] = id for each."""
    cursor.execute(sql, params)
    (packed,) = cursor.fetchone()
    if packed:
        pairs = np.frombuffer(bytes(packed), dtype=_POSITION_ID)
        ids[pairs["position"]] = pairs["id"]
