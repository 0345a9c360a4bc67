"""Primary keys of a collection's queries and documents by their ids, created on the fly."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from django.db import IntegrityError, connection, transaction
from django.db.models import Model

if TYPE_CHECKING:  # Arrow loads with the first column looked up, not with Django
    import pyarrow as pa

# Up to this many values are looked up by one index probe each; more by a hash join, which
# reads every row of the collection once.
# How many ids one query looks up (or one bulk statement writes) at a time.
LOOKUP_CHUNK = 5000
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

    Two imports creating the same ids at once do not collide (OR IGNORE on SQLite; on
    PostgreSQL see `_ids_ensure_csv`, where the values travel once, by COPY, whatever their
    number).
    """
    wanted = sorted(set(values))
    if not wanted:
        return {}
    if connection.vendor == "postgresql":
        payload = io.StringIO()
        # Read by COPY, never by a spreadsheet: the ids travel exact, not as SpreadsheetWriter
        # would write them.
        csv.writer(payload).writerows(zip(wanted, range(len(wanted)), strict=True))
        ids = _ids_ensure_csv(
            model,
            collection_id=collection_id,
            key=key,
            payload=payload.getvalue(),
            count=len(wanted),
            defaults=defaults,
        )
        return dict(zip(wanted, ids.tolist(), strict=True))
    table = connection.ops.quote_name(model._meta.db_table)
    key_column = connection.ops.quote_name(key)
    columns = ["collection_id", key, *defaults]
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
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

    On PostgreSQL the values travel as CSV written by Arrow and the ids come back as one
    packed bytea read straight into an array (`_ids_ensure_csv`): hundreds of thousands of
    docnos per run file without a Python object per value.
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    if connection.vendor != "postgresql" or len(values) == 0:
        wanted = values.to_pylist()
        found = ids_ensure(
            model, collection_id=collection_id, key=key, values=wanted, defaults=defaults
        )
        return np.array([found[value] for value in wanted], dtype=np.int64)
    payload = io.BytesIO()
    pa_csv.write_csv(
        pa.table({"value": values, "ord": np.arange(len(values), dtype=np.int32)}),
        payload,
        pa_csv.WriteOptions(include_header=False, quoting_style="needed"),
    )
    return _ids_ensure_csv(
        model,
        collection_id=collection_id,
        key=key,
        payload=payload.getbuffer(),
        count=len(values),
        defaults=defaults,
    )


def _ids_ensure_csv(
    model: type[Model],
    *,
    collection_id: int,
    key: str,
    payload: str | bytes | memoryview,
    count: int,
    defaults: dict[str, Any],
) -> npt.NDArray[np.int64]:
    """PostgreSQL: the ids of `count` distinct values given as CSV rows (value, position),
    in position order, creating the missing rows.

    One COPY into a temporary table; the ids come back as one bytea of packed (position,
    id) pairs, and the rows created return theirs from a plain INSERT. If another import
    created some of them meanwhile, that INSERT conflicts and gives way to one that skips
    the conflicts, followed by a second lookup.
    """
    table = connection.ops.quote_name(model._meta.db_table)
    key_column = connection.ops.quote_name(key)
    columns = ", ".join(connection.ops.quote_name(c) for c in ["collection_id", key, *defaults])
    pairs = "string_agg(int4send(w.ord) || int8send(t.id), ''::bytea)"
    if count <= _PROBES_UP_TO:
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

    ids = np.zeros(count, dtype=np.int64)
    with connection.cursor() as cursor, _work_mem(cursor, "64MB"):
        cursor.execute("CREATE TEMP TABLE IF NOT EXISTS ndcg_wanted_column (value text, ord int)")
        cursor.execute("TRUNCATE ndcg_wanted_column")
        fill = "COPY ndcg_wanted_column (value, ord) FROM STDIN (FORMAT csv)"
        with cursor.cursor.copy(fill) as copy:
            copy.write(payload)
        if count > _PROBES_UP_TO:
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
        raise RuntimeError(f"{(ids == 0).sum()} of {count} {key} values found no row")
    return ids


# `Document.hash_of` in SQL, over the columns (or values) named `title` and `text` of `w`.
CONTENT_HASH_SQL = "encode(sha256(convert_to(w.title || E'\\n' || w.text, 'UTF8')), 'hex')"


Texts = Callable[[str], tuple[str, str, str]]


def document_ids_filled(
    *, collection_id: int, docnos: Sequence[str], texts: Texts
) -> tuple[dict[str, int], int]:
    """docno -> document id for `docnos` (each once), `texts(docno)` giving a document's
    (title, text, url): the missing documents created with their texts, a held one without
    any text given them (unless they are empty too), every other one left as it is (its
    texts never asked for); and the number created or given texts.

    A fetch writes the documents of a search engine's answers this way as they arrive, and
    a fetch again of the same engine finds most of them held: on PostgreSQL the docnos
    alone are looked up first, each by one index probe (a plan that does not depend on
    statistics, which lag behind a table that every batch grows); only the documents not
    held travel with their texts, to be inserted, and only those held without any text to
    be given them, by id. Values travel as one JSON parameter (written and quoted in C,
    where arrays of strings are adapted one element at a time). A writer creating the same
    docnos meanwhile makes this one give way (ON CONFLICT) and look them up again."""
    from annotations.models import Document

    if not docnos:
        return {}, 0
    if connection.vendor != "postgresql":
        return _document_ids_filled_orm(collection_id, docnos, texts)
    table = connection.ops.quote_name(Document._meta.db_table)
    held = (
        "SELECT w.docno, d.id, d.empty FROM jsonb_array_elements_text(%s::jsonb) w(docno) "
        "CROSS JOIN LATERAL (SELECT x.id, x.title = '' AND x.text = '' AND x.url = '' AS empty "
        f"FROM {table} x WHERE x.collection_id = %s AND x.docno = w.docno LIMIT 1) d"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(held, [json.dumps(docnos, ensure_ascii=False), collection_id])
        found: dict[str, int] = {}
        fill: list[tuple[int, tuple[str, str, str]]] = []
        for docno, pk, empty in cursor.fetchall():
            found[docno] = pk
            if empty and any(given := texts(docno)):
                fill.append((pk, given))
        missing = [docno for docno in docnos if docno not in found]
        changed = 0
        if missing:
            cursor.execute(
                f"INSERT INTO {table} (collection_id, docno, title, text, url, content_hash) "
                f"SELECT %s, w.docno, w.title, w.text, w.url, {CONTENT_HASH_SQL} FROM (SELECT "
                "e->>0 AS docno, e->>1 AS title, e->>2 AS text, e->>3 AS url FROM "
                "jsonb_array_elements(%s::jsonb) e) w "
                "ON CONFLICT (collection_id, docno) DO NOTHING RETURNING docno, id",
                [collection_id, _json_rows((docno, *texts(docno)) for docno in missing)],
            )
            created = cursor.fetchall()
            changed += len(created)
            found.update(created)
            if len(created) < len(missing):  # created by another writer meanwhile
                raced = [docno for docno in missing if docno not in found]
                cursor.execute(held, [json.dumps(raced, ensure_ascii=False), collection_id])
                found.update((docno, pk) for docno, pk, _ in cursor.fetchall())
        if fill:
            cursor.execute(
                f"UPDATE {table} d SET title = w.title, text = w.text, url = w.url, "
                f"content_hash = {CONTENT_HASH_SQL} FROM (SELECT (e->>0)::bigint AS id, "
                "e->>1 AS title, e->>2 AS text, e->>3 AS url FROM "
                "jsonb_array_elements(%s::jsonb) e) w "
                "WHERE d.id = w.id AND d.title = '' AND d.text = '' AND d.url = ''",
                [_json_rows((pk, *given) for pk, given in fill)],
            )
            changed += cursor.rowcount
    return found, changed


def _json_rows(rows: Iterable[tuple[object, ...]]) -> str:
    return json.dumps(list(rows), ensure_ascii=False)


def _document_ids_filled_orm(
    collection_id: int, docnos: Sequence[str], texts: Texts
) -> tuple[dict[str, int], int]:
    """`document_ids_filled` through the ORM (SQLite)."""
    from annotations.models import Document

    found: dict[str, int] = {}
    fill: list[Document] = []
    for start in range(0, len(docnos), 500):  # SQLite's bound-parameter limit
        chunk = docnos[start : start + 500]
        held = Document.objects.filter(collection_id=collection_id, docno__in=chunk)
        for docno, pk, *held_texts in held.values_list("docno", "pk", "title", "text", "url"):
            found[docno] = pk
            if any(held_texts):
                continue
            title, text, url = texts(docno)
            if title or text or url:
                hashed = Document.hash_of(title, text)
                fill.append(Document(pk=pk, title=title, text=text, url=url, content_hash=hashed))
    created = []
    for docno in docnos:
        if docno not in found:
            title, text, url = texts(docno)
            created.append(
                Document(
                    collection_id=collection_id,
                    docno=docno,
                    title=title,
                    text=text,
                    url=url,
                    content_hash=Document.hash_of(title, text),
                )
            )
    with transaction.atomic():
        Document.objects.bulk_update(fill, ["title", "text", "url", "content_hash"])
        Document.objects.bulk_create(created, ignore_conflicts=True)
    missing = [docno for docno in docnos if docno not in found]
    for start in range(0, len(missing), 500):
        chunk = missing[start : start + 500]
        found.update(
            Document.objects.filter(collection_id=collection_id, docno__in=chunk).values_list(
                "docno", "pk"
            )
        )
    return found, len(fill) + len(created)


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
