"""Bulk row writes keep every value exactly, on PostgreSQL and on SQLite."""

import math
import random
from datetime import UTC, datetime

import pytest
from django.db import connection

from annotations.bulk import bulk_delete, bulk_insert, bulk_update
from annotations.models import Collection, QueryScore, Run, RunScore
from tests.factories import CollectionFactory, QueryFactory

pytestmark = pytest.mark.django_db

AWKWARD_FLOATS = [
    0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1 / 3,
    0.7850023719699042, 1e-300, -2.5, 123456789.12345679,
]  # fmt: skip


def _runs(collection: Collection, count: int) -> list[Run]:
    return [Run.objects.create(collection=collection, name=f"r{i}") for i in range(count)]


def test_bulk_update_round_trips_floats_texts_and_constants() -> None:
    collection = CollectionFactory(slug="bulk")
    runs = _runs(collection, 4)
    columns = ("run_id", "k", "queries", "ndcg", "ndcg_condensed", "judged")
    columns += ("ndcg_sum", "ndcg_condensed_sum", "judged_sum", "updated")
    earlier = datetime(2026, 1, 1, tzinfo=UTC)
    bulk_insert(
        RunScore,
        columns,
        [
            (run.id, k, 0, 0.0, 0.0, 0.0, "0:0", "0:0", "0:0", earlier)
            for run in runs
            for k in (5, 10)
        ],
    )
    rng = random.Random(3)
    texts = ["plain", 'with "quotes"', "back\\slash", "", "NULL", "comma,brace}{", "tab\tnew\nline"]
    rows = []
    for run in runs:
        for k in (5, 10):
            rows.append(
                (
                    run.id, k, rng.randrange(1000),
                    rng.choice(AWKWARD_FLOATS), rng.random(), rng.choice(AWKWARD_FLOATS),
                    rng.choice(texts), rng.choice(texts), rng.choice(texts),
                )
            )  # fmt: skip
    later = datetime(2026, 12, 1, 12, 30, tzinfo=UTC)
    assert bulk_update(
        RunScore,
        key=("run_id", "k"),
        columns=columns[2:-1],
        rows=rows,
        constants={"updated": later},
    ) == len(rows)
    stored = {(row[0], row[1]): row[2:] for row in RunScore.objects.values_list(*columns)}
    for run_id, k, *values in rows:
        got = stored[(run_id, k)]
        assert list(got[:-1]) == values
        if connection.vendor == "postgresql":  # SQLite stores -0.0 as the integer 0
            for want, have in zip(values[1:4], got[1:4], strict=True):
                assert math.copysign(1, want) == math.copysign(1, have)
        assert got[-1] == later


def test_bulk_update_with_a_key_shared_by_every_row_touches_only_those_rows() -> None:
    collection = CollectionFactory(slug="bulk-key")
    runs = _runs(collection, 3)
    first, second = QueryFactory(collection=collection), QueryFactory(collection=collection)
    columns = ("run_id", "query_id", "k", "ndcg", "dcg", "judged", "ndcg_condensed")
    bulk_insert(
        QueryScore,
        columns,
        [(run.id, query.id, 5, 0.5, 1.0, 1.0, 0.5) for run in runs for query in (first, second)],
    )
    bulk_update(
        QueryScore,
        key=("query_id", "run_id", "k"),
        columns=("ndcg", "dcg", "judged", "ndcg_condensed"),
        rows=[(first.id, run.id, 5, 0.25, 2.0, 0.8, 1 / 3) for run in runs],
    )
    values = QueryScore.objects.values_list("query_id", "ndcg", "dcg", "judged", "ndcg_condensed")
    assert sorted(set(values)) == sorted(
        {(first.id, 0.25, 2.0, 0.8, 1 / 3), (second.id, 0.5, 1.0, 1.0, 0.5)}
    )
    # one row alone: every key column is shared
    bulk_update(
        QueryScore,
        key=("query_id", "run_id", "k"),
        columns=("ndcg",),
        rows=[(second.id, runs[0].id, 5, 0.125)],
    )
    assert QueryScore.objects.get(query=second, run=runs[0]).ndcg == 0.125
    assert QueryScore.objects.get(query=second, run=runs[1]).ndcg == 0.5


def test_bulk_writes_of_nothing_do_nothing() -> None:
    assert bulk_insert(RunScore, ("run_id", "k"), []) == 0
    assert bulk_update(RunScore, key=("run_id", "k"), columns=("queries",), rows=[]) == 0


def test_bulk_delete_removes_exactly_the_given_keys() -> None:
    collection = CollectionFactory(slug="bulk-delete")
    runs = _runs(collection, 3)
    columns = ("run_id", "k", "queries", "ndcg", "ndcg_condensed", "judged")
    columns += ("ndcg_sum", "ndcg_condensed_sum", "judged_sum", "updated")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    bulk_insert(
        RunScore,
        columns,
        [(run.id, k, 1, 0.5, 0.5, 1.0, "1:1", "1:1", "1:0", now) for run in runs for k in (5, 10)],
    )
    assert bulk_delete(RunScore, key=("run_id", "k"), keys=[(runs[0].id, 5), (runs[2].id, 10)]) == 2
    assert sorted(RunScore.objects.values_list("run_id", "k")) == sorted(
        [(runs[0].id, 10), (runs[1].id, 5), (runs[1].id, 10), (runs[2].id, 5)]
    )
    assert bulk_delete(RunScore, key=("run_id", "k"), keys=[]) == 0
