"""The streamed qrels export equals the row-by-row writer, byte for byte, on both databases."""

from collections.abc import Callable
from pathlib import Path

import pytest

from annotations import selectors, services
from annotations.formats import trec
from annotations.models import Collection, Membership
from tests.factories import CollectionFactory, UserFactory

# Ids with what TREC ids may hold: backslash, quotes, commas, %, non-ASCII, ~ and /.
IDS = ["q\\1", 'q"2', "q,3", "q%4", "qé5"]
DOCS = ["d\\a", "d'b", "d,c", "d/e~2F", "dä"]


@pytest.fixture
def collection(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    collection = CollectionFactory(slug="export", cutoffs=[2], aggregation="mean")
    first, second, third = UserFactory(), UserFactory(), UserFactory()
    lines = [f"{q} 0 {d} {(i + j) % 4}" for i, q in enumerate(IDS) for j, d in enumerate(DOCS)]
    services.judgements_import(
        collection=collection,
        source=write_file("a.qrels", "\n".join(lines) + "\n"),
        assessor=first,
    )
    # several assessors on some pairs (mean rule, halves down), an adjudication on one
    others = [
        f"{q} 0 {d} {(i * 2 + j) % 4}"
        for i, q in enumerate(IDS[:3])
        for j, d in enumerate(DOCS[:3])
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("b.qrels", "\n".join(others) + "\n"),
        assessor=second,
    )
    services.judgements_import(
        collection=collection,
        source=write_file("c.qrels", f"{IDS[0]} 0 {DOCS[1]} 3\n"),
        assessor=third,
    )
    organiser = UserFactory()
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    services.adjudication_record(
        query=collection.queries.get(qid=IDS[1]),
        document=collection.documents.get(docno=DOCS[1]),
        organiser=organiser,
        grade=1,
    )
    return collection


def test_streamed_qrels_equal_the_row_writer_byte_for_byte(collection: Collection) -> None:
    streamed = b"".join(selectors.qrels_lines(collection=collection, chunk_bytes=64))
    expected = "".join(trec.qrels_text(selectors.qrels_rows(collection=collection))).encode()
    assert streamed == expected
    assert streamed.count(b"\n") == len(IDS) * len(DOCS)
    lines = dict(
        ((line.split()[0], line.split()[2]), line.split()[3])
        for line in streamed.decode().splitlines()
    )
    assert lines[(IDS[1], DOCS[1])] == "1"  # the adjudication wins
    # q\1 d'b: grades 1 (first), 2 (second), 3 (third): mean 2
    assert lines[(IDS[0], DOCS[1])] == "2"
