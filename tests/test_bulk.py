"""Bulk row writes keep every value exactly, on PostgreSQL and on SQLite."""

import json
import math
import random
import struct
from datetime import UTC, datetime

import numpy as np
import pytest
from django.db import connection

from annotations.bulk import bulk_delete, bulk_insert, bulk_update
from annotations.formats import score_bytes
from annotations.models import (
    Collection,
    IdealScore,
    LeaderboardSnapshot,
    Query,
    QueryScore,
    Run,
    RunScore,
)
from tests.factories import CollectionFactory, QueryFactory

pytestmark = pytest.mark.django_db

AWKWARD_FLOATS = [
    0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1 / 3,
    0.7850023719699042, 1e-300, -2.5, 123456789.12345679,
]  # fmt: skip
AWKWARD_TEXTS = [
    "plain", 'with "quotes"', "back\\slash", "", "NULL", "comma,brace}{", "tab\tnew\nline",
]  # fmt: skip
# Bytes that an array literal or COPY text would have to escape, and the empty value.
AWKWARD_BYTES = [
    b"", b"\x00", b"\\", b'"', b"{,}", b"NULL", b"\\x00", b"\t\n\r", bytes(range(256)),
]  # fmt: skip
MEASURES = score_bytes.QUERY_MEASURES  # one bytes column per measure
QUERY_SCORE_COLUMNS = ("run_id", "query_id", "cutoffs", *MEASURES)
RUN_SCORE_COLUMNS = ("run_id", "cutoffs", "updated")
SNAPSHOT_COLUMNS = (
    "collection_id",
    "k",
    "stamp",
    "rows",
    "unscored",
    "computed_at",
    "seconds",
    "query_ids",
    "per_query",
    "significance",
    "pairs",
)
EARLIER = datetime(2026, 1, 1, tzinfo=UTC)
LATER = datetime(2026, 12, 1, 12, 30, tzinfo=UTC)


def _runs(collection: Collection, count: int) -> list[Run]:
    return [Run.objects.create(collection=collection, name=f"r{i}") for i in range(count)]


def _queries(collection: Collection, count: int) -> list[Query]:
    return [QueryFactory(collection=collection) for _ in range(count)]


def _packed(rng: random.Random, cutoffs: int) -> tuple[bytes, ...]:
    """One bytes column per measure: `cutoffs` awkward or random float64s each."""
    return tuple(
        struct.pack(
            f"<{cutoffs}d", *(rng.choice([*AWKWARD_FLOATS, rng.random()]) for _ in range(cutoffs))
        )
        for _ in MEASURES
    )


def _same_at_every_measure(
    ndcg: float, dcg: float, judged: float, condensed: float
) -> tuple[bytes, ...]:
    """The packed columns of a one-cutoff row."""
    return score_bytes.pack_query(np.array([[ndcg], [dcg], [judged], [condensed]]))


def _stored_query_scores() -> dict[tuple[int, int], tuple[object, ...]]:
    """(query, run) -> (cutoffs, *bytes columns) as stored."""
    return {
        (query_id, run_id): (cutoffs, *map(bytes, columns))
        for run_id, query_id, cutoffs, *columns in QueryScore.objects.values_list(
            *QUERY_SCORE_COLUMNS
        )
    }


def test_bulk_update_round_trips_floats() -> None:
    collection = CollectionFactory(slug="bulk-floats")
    queries = _queries(collection, 3)
    ks = (5, 10, 20, 100)
    bulk_insert(
        IdealScore, ("query_id", "k", "idcg"), [(q.id, k, 1.0) for q in queries for k in ks]
    )
    rng = random.Random(5)
    rows = [(q.id, k, rng.choice([*AWKWARD_FLOATS, rng.random()])) for q in queries for k in ks]
    assert bulk_update(IdealScore, key=("query_id", "k"), columns=("idcg",), rows=rows) == len(rows)
    stored = {
        (q, k): idcg for q, k, idcg in IdealScore.objects.values_list("query_id", "k", "idcg")
    }
    for query_id, k, want in rows:
        have = stored[(query_id, k)]
        assert have == want
        if connection.vendor == "postgresql":  # SQLite stores -0.0 as the integer 0
            assert math.copysign(1, want) == math.copysign(1, have)


def test_bulk_update_round_trips_texts_floats_json_and_constants() -> None:
    collection = CollectionFactory(slug="bulk")
    bulk_insert(
        LeaderboardSnapshot,
        SNAPSHOT_COLUMNS,
        [
            (collection.id, k, "", "[]", "[]", EARLIER, 0.0, "[]", b"", "{}", b"")
            for k in range(1, 9)
        ],
    )
    rng = random.Random(3)
    rows = [
        (
            collection.id,
            k,
            rng.choice(AWKWARD_TEXTS),
            json.dumps([{"name": text} for text in rng.sample(AWKWARD_TEXTS, 3)]),
            rng.choice(AWKWARD_FLOATS[:-1]),
        )
        for k in range(1, 9)
    ]
    assert bulk_update(
        LeaderboardSnapshot,
        key=("collection_id", "k"),
        columns=("stamp", "rows", "seconds"),
        rows=rows,
        constants={"computed_at": LATER},
    ) == len(rows)
    stored = {
        k: (stamp, snapshot_rows, seconds, computed_at, unscored)
        for k, stamp, snapshot_rows, seconds, computed_at, unscored in (
            LeaderboardSnapshot.objects.values_list(
                "k", "stamp", "rows", "seconds", "computed_at", "unscored"
            )
        )
    }
    # The column not updated (unscored) is as inserted.
    assert stored == {
        k: (stamp, json.loads(snapshot_rows), seconds, LATER, [])
        for _, k, stamp, snapshot_rows, seconds in rows
    }


def test_bulk_update_writes_bytes_columns_exactly() -> None:
    """Packed scores (float64 bits, -0.0 and subnormals included) and bytes that text
    formats would have to escape come back byte for byte, alone or with a text column."""
    collection = CollectionFactory(slug="bulk-bytes")
    runs, queries = _runs(collection, 4), _queries(collection, 3)
    rng = random.Random(11)
    bulk_insert(
        QueryScore,
        QUERY_SCORE_COLUMNS,
        [(r.id, q.id, "5", *_packed(rng, 1)) for r in runs for q in queries],
    )
    expected = _stored_query_scores()
    assert len(expected) == len(runs) * len(queries)
    packed = [
        (q.id, r.id, "5,10,20", *_packed(rng, 3))
        for r in runs
        for q in queries
        if rng.random() < 0.8
    ]
    assert 0 < len(packed) < len(expected)  # the rows not updated stay as inserted
    assert bulk_update(
        QueryScore, key=("query_id", "run_id"), columns=("cutoffs", *MEASURES), rows=packed
    ) == len(packed)
    for query_id, run_id, *values in packed:
        expected[(query_id, run_id)] = tuple(values)
    assert _stored_query_scores() == expected
    # Bytes only, of every length, some shared by several rows; two of the columns.
    awkward = [
        (q.id, r.id, rng.choice(AWKWARD_BYTES), AWKWARD_BYTES[-1]) for r in runs for q in queries
    ]
    bulk_update(QueryScore, key=("query_id", "run_id"), columns=MEASURES[1:3], rows=awkward)
    for query_id, run_id, dcg, judged in awkward:
        cutoffs, ndcg, _, _, condensed = expected[(query_id, run_id)]
        expected[(query_id, run_id)] = (cutoffs, ndcg, dcg, judged, condensed)
    assert _stored_query_scores() == expected


def test_bulk_update_with_a_key_shared_by_every_row_touches_only_those_rows() -> None:
    collection = CollectionFactory(slug="bulk-key")
    runs = _runs(collection, 3)
    first, second = QueryFactory(collection=collection), QueryFactory(collection=collection)
    bulk_insert(
        QueryScore,
        QUERY_SCORE_COLUMNS,
        [
            (run.id, query.id, "5", *_same_at_every_measure(0.5, 1.0, 1.0, 0.5))
            for run in runs
            for query in (first, second)
        ],
    )
    bulk_update(
        QueryScore,
        key=("query_id", "run_id"),
        columns=("cutoffs", *MEASURES),
        rows=[
            (first.id, run.id, "5", *_same_at_every_measure(0.25, 2.0, 0.8, 1 / 3)) for run in runs
        ],
    )
    values = {(row.query_id, row.at(5)[1:]) for row in QueryScore.objects.all()}
    assert values == {(first.id, (0.25, 2.0, 0.8, 1 / 3)), (second.id, (0.5, 1.0, 1.0, 0.5))}
    # one row alone: every key column is shared
    bulk_update(
        QueryScore,
        key=("query_id", "run_id"),
        columns=("ndcg",),
        rows=[(second.id, runs[0].id, score_bytes.float_bytes([0.125]))],
    )
    assert QueryScore.objects.get(query=second, run=runs[0]).at(5)[1:] == (0.125, 1.0, 1.0, 0.5)
    assert QueryScore.objects.get(query=second, run=runs[1]).at(5).ndcg == 0.5


def test_bulk_writes_of_nothing_do_nothing() -> None:
    assert bulk_insert(RunScore, ("run_id", "cutoffs"), []) == 0
    assert bulk_update(RunScore, key=("run_id",), columns=("cutoffs",), rows=[]) == 0
    assert bulk_delete(RunScore, key=("run_id",), keys=[]) == 0


def test_bulk_delete_removes_exactly_the_given_keys() -> None:
    collection = CollectionFactory(slug="bulk-delete")
    runs, queries = _runs(collection, 3), _queries(collection, 2)
    columns = _same_at_every_measure(0.5, 1.0, 1.0, 0.5)
    bulk_insert(
        QueryScore,
        QUERY_SCORE_COLUMNS,
        [(run.id, query.id, "5", *columns) for run in runs for query in queries],
    )
    gone = [(queries[0].id, runs[0].id), (queries[1].id, runs[2].id)]
    assert bulk_delete(QueryScore, key=("query_id", "run_id"), keys=gone) == 2
    assert sorted(QueryScore.objects.values_list("query_id", "run_id")) == sorted(
        (query.id, run.id) for run in runs for query in queries if (query.id, run.id) not in gone
    )
    assert bulk_delete(QueryScore, key=("query_id", "run_id"), keys=[]) == 0
    bulk_insert(RunScore, RUN_SCORE_COLUMNS, [(r.id, "5", EARLIER) for r in runs])
    assert bulk_delete(RunScore, key=("run_id",), keys=[(runs[1].id,)]) == 1
    assert sorted(RunScore.objects.values_list("run_id", flat=True)) == [runs[0].id, runs[2].id]


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_bulk_update_takes_the_bytes_like_values_bulk_insert_takes(kind: type) -> None:
    """bulk_insert writes bytes, bytearray and memoryview values alike; bulk_update too (on
    PostgreSQL they travel as one binary bytea array)."""
    collection = CollectionFactory(slug=f"bulk-{kind.__name__}")
    (run,), (query,) = _runs(collection, 1), _queries(collection, 1)
    bulk_insert(
        QueryScore,
        QUERY_SCORE_COLUMNS,
        [(run.id, query.id, "5", *_same_at_every_measure(0.5, 1.0, 1.0, 0.5))],
    )
    value = bytes(range(256))
    bulk_update(
        QueryScore,
        key=("query_id", "run_id"),
        columns=("dcg",),
        rows=[(query.id, run.id, kind(value))],
    )
    assert bytes(QueryScore.objects.get().dcg) == value


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_the_platforms_own_statements_are_prepared_once_a_connection_repeats_them(
    settings,  # type: ignore[no-untyped-def]
) -> None:
    """A grade's statements are parsed and planned once per connection, not per grade."""
    from django.db.utils import IntegrityError

    from annotations.bulk import cursor

    threshold = settings.DATABASES["default"]["OPTIONS"]["prepare_threshold"]
    assert threshold == 5  # settings.py's, unless DATABASE_URL names one
    probe = "SELECT %s::int + 1 AS prepared_probe"

    def prepared() -> int:
        with connection.cursor() as plain:
            plain.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                ["%prepared_probe%"],
            )
            return int(plain.fetchone()[0])

    for attempt in range(threshold + 1):
        assert prepared() == 0, attempt
        with cursor() as found:
            found.execute(probe, [attempt])
            assert found.fetchone() == (attempt + 1,)
    assert prepared() == 1
    for _ in range(3):  # and reused, not prepared again
        with cursor() as found:
            found.execute(probe, [7])
    assert prepared() == 1
    collection = CollectionFactory()
    # Errors are Django's, as from its own cursors.
    with pytest.raises(IntegrityError), cursor() as found:
        found.execute(
            f"INSERT INTO {Collection._meta.db_table} (slug) VALUES (%s)", [collection.slug]
        )
