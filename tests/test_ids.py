"""Tests for ids created on the fly: ids of an Arrow column of docnos, in order, created once."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pytest
from django.db import connection, connections

from annotations import ids
from annotations.models import Document
from tests.factories import CollectionFactory, DocumentFactory

DEFAULTS = {"title": "", "text": "", "url": "", "content_hash": ""}


def ensure(collection_id: int, values: list[str]) -> list[int]:
    column = pa.array(values, pa.string())
    found = ids.ids_ensure_column(
        Document, collection_id=collection_id, key="docno", values=column, defaults=DEFAULTS
    )
    return found.tolist()


def docnos_of(found: list[int]) -> list[str]:
    by_id = dict(Document.objects.filter(id__in=found).values_list("id", "docno"))
    return [by_id[i] for i in found]


@pytest.mark.parametrize("probes_up_to", [0, 20_000])  # the hash join, then index probes
def test_ids_come_back_in_the_order_asked_and_are_created_once(
    db: None, monkeypatch: pytest.MonkeyPatch, probes_up_to: int
) -> None:
    monkeypatch.setattr(ids, "_PROBES_UP_TO", probes_up_to)
    collection, other = CollectionFactory(), CollectionFactory()
    existing = DocumentFactory(collection=collection, docno="b", title="kept")
    DocumentFactory(collection=other, docno="a")
    values = ["a", "b", 'quo"te', "com,ma", "back\\slash", "é", "x" * 200]
    found = ensure(collection.id, values)
    assert docnos_of(found) == values
    assert found[1] == existing.id
    assert Document.objects.get(id=existing.id).title == "kept"
    assert ensure(collection.id, list(reversed(values))) == list(reversed(found))
    assert Document.objects.filter(collection=collection).count() == len(values)


def test_an_empty_column_asks_nothing(db: None) -> None:
    assert ensure(CollectionFactory().id, []) == []


def test_documents_created_meanwhile_by_another_import_are_found(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup misses a document another transaction commits right after it: the insert
    then conflicts, and the ids come from the insert that skips conflicts and a new lookup.
    (SQLite's path inserts with OR IGNORE before it looks anything up.)"""
    collection = CollectionFactory()
    raced = DocumentFactory(collection=collection, docno="raced")
    lookups: list[str] = []
    real = ids._pairs_into

    def blind_first_lookup(found: Any, cursor: Any, sql: str, params: list[Any]) -> None:
        lookups.append(sql)
        if len(lookups) > 1:  # the first lookup ran before the other import committed
            real(found, cursor, sql, params)

    monkeypatch.setattr(ids, "_pairs_into", blind_first_lookup)
    found = ensure(collection.id, ["new", "raced"])
    assert found[1] == raced.id
    assert docnos_of(found) == ["new", "raced"]
    # PostgreSQL: lookup, conflicting insert, insert skipping conflicts, lookup.
    assert len(lookups) == (4 if connection.vendor == "postgresql" else 0)


def test_ids_by_value_share_the_column_lookup_and_its_quoting(db: None) -> None:
    collection = CollectionFactory()
    existing = DocumentFactory(collection=collection, docno="b")
    values = ["a", "b", 'quo"te', "com,ma", "back\\slash", "é", "a"]
    found = ids.ids_ensure(
        Document, collection_id=collection.id, key="docno", values=values, defaults=DEFAULTS
    )
    assert sorted(found) == sorted(set(values))
    assert found["b"] == existing.id
    assert docnos_of(list(found.values())) == list(found)
    assert ensure(collection.id, list(found)) == list(found.values())


def _filled(
    collection_id: int, given: list[tuple[str, str, str, str]]
) -> tuple[dict[str, int], int]:
    texts = {docno: (title, text, url) for docno, title, text, url in given}
    return ids.document_ids_filled(
        collection_id=collection_id, docnos=list(texts), texts=texts.__getitem__
    )


def test_documents_with_texts_are_created_filled_when_blank_and_otherwise_kept(db: None) -> None:
    collection, other = CollectionFactory(), CollectionFactory()
    blank = DocumentFactory(collection=collection, docno="blank", title="", text="", url="")
    kept = DocumentFactory(collection=collection, docno="kept", title="Old", text="old text")
    untouched = DocumentFactory(collection=collection, docno="no-texts", title="", text="")
    DocumentFactory(collection=other, docno="new")
    given = [
        ("new", 'A "quoted" title', "Text\twith tab, é and \\ back", "https://e.org/n"),
        ("blank", "Filled", "filled text", ""),
        ("kept", "New", "new text", "https://e.org/k"),
        ("no-texts", "", "", ""),  # nothing to give: left as it is
    ]
    found, changed = _filled(collection.id, given)
    assert changed == 2  # "new" created, "blank" filled
    mine = {d.docno: d for d in Document.objects.filter(collection=collection)}
    assert found == {docno: document.id for docno, document in mine.items()}
    assert (found["blank"], found["kept"]) == (blank.id, kept.id)
    assert found["no-texts"] == untouched.id
    for docno, title, text, url in given[:2]:
        document = mine[docno]
        assert (document.title, document.text, document.url) == (title, text, url)
        # The database's hash is the model's, bit for bit.
        assert document.content_hash == Document.hash_of(title, text)
    assert (mine["kept"].title, mine["kept"].text) == ("Old", "old text")
    asked: list[str] = []
    texts = {docno: (title, text, url) for docno, title, text, url in given}

    def recorded(docno: str) -> tuple[str, str, str]:
        asked.append(docno)
        return texts[docno]

    again, changed = ids.document_ids_filled(
        collection_id=collection.id, docnos=list(texts), texts=recorded
    )
    assert (again, changed) == (found, 0)
    # Held with texts: theirs are never asked for (a fetch again of an engine sends none).
    assert asked == ["no-texts"]
    assert _filled(collection.id, []) == ({}, 0)


@pytest.mark.django_db(transaction=True)
def test_documents_another_writer_creates_meanwhile_are_found_not_duplicated() -> None:
    """PostgreSQL: another transaction inserts a docno this writer is about to create and
    commits while this writer's insert waits on it: the insert gives way (ON CONFLICT) and
    the id comes from a second lookup."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    collection = CollectionFactory()
    other = connections.create_connection("default")
    other.set_autocommit(False)
    with other.cursor() as cursor:
        cursor.execute(
            "INSERT INTO annotations_document (collection_id, docno, title, text, url, "
            "content_hash) VALUES (%s, 'raced', 'theirs', '', '', '') RETURNING id",
            [collection.id],
        )
        (theirs,) = cursor.fetchone()
    result: dict[str, Any] = {}

    def write() -> None:
        given = [("new", "A", "a", ""), ("raced", "B", "b", "")]
        result["found"], result["changed"] = _filled(collection.id, given)
        connections.close_all()

    thread = threading.Thread(target=write)
    thread.start()
    waiting = 0
    while not waiting and thread.is_alive():  # until its insert waits on the other's row
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            (waiting,) = cursor.fetchone()
    other.commit()
    other.close()
    thread.join()
    assert result["found"]["raced"] == theirs and result["changed"] == 1
    assert Document.objects.get(id=theirs).title == "theirs"
    assert Document.objects.filter(collection=collection).count() == 2
