"""Leaderboard snapshots: stored once per scores stamp, served as is, refreshed when it moves."""

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from annotations import services
from annotations.models import Collection, LeaderboardSnapshot, QueryBound
from annotations.scores import (
    bounds_cache,
    refresh_queue,
    refresh_work,
    snapshots,
)
from annotations.selectors import leaderboards
from tests.factories import CollectionFactory, UserFactory

QRELS = "q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\nq3 0 d5 0\n"
RUN_A = "q1 Q0 d1 1 9 A\nq1 Q0 d2 2 8 A\nq2 Q0 d4 1 9 A\nq2 Q0 d3 2 8 A\nq3 Q0 d9 1 1 A\n"
RUN_B = "q1 Q0 d2 1 9 B\nq1 Q0 d1 2 8 B\nq2 Q0 d3 1 9 B\nq3 Q0 d5 1 9 B\nq3 Q0 d6 2 8 B\n"


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def collection(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    collection = CollectionFactory(slug="snap", cutoffs=[2, 5])
    services.judgements_import(
        collection=collection, source=write_file("s.qrels", QRELS), assessor=UserFactory()
    )
    services.run_import(collection=collection, source=write_file("a.run", RUN_A))
    services.run_import(collection=collection, source=write_file("b.run", RUN_B))
    return collection


@pytest.fixture
def refresh_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The derived worker has not run yet: refreshes queued by writes are not run (asked
    for before `collection`, they are not run for its creation either)."""
    monkeypatch.setattr(refresh_queue, "_publish", lambda *args, **options: None)


def _judge(collection: Collection, qid: str, docno: str, grade: int) -> None:
    services.judgement_record(
        query=collection.queries.get(qid=qid),
        document=collection.documents.get(docno=docno),
        assessor=UserFactory(),
        grade=grade,
        source="api",
    )


def _values(board: leaderboards.Leaderboard) -> list[tuple[object, ...]]:
    return [
        (
            r.run.name,
            r.rank,
            r.ndcg,
            r.ci_low,
            r.ci_high,
            r.judged,
            r.ndcg_condensed,
            r.queries,
            r.ndcg_top_grade,
            r.pending,
        )
        for r in board.rows
    ]


def test_a_read_stores_the_snapshot_and_the_next_read_serves_it_without_computing(
    collection: Collection,
    django_assert_max_num_queries: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = snapshots.leaderboard_current(collection=collection, k=2)
    stored = LeaderboardSnapshot.objects.get(collection=collection, k=2)
    assert stored.stamp == first.state.stamp and not first.stale

    def fail(**_: object) -> None:
        raise AssertionError("a read at an unchanged stamp must not compute")

    monkeypatch.setattr(snapshots, "leaderboard_compute", fail)
    # the stamp, the snapshot; its significance pass (the rows are still): the pass's lock
    # across processes, the matrix, its letters stored, the lock released, the snapshot again
    with django_assert_max_num_queries(7):
        again = snapshots.leaderboard_current(collection=collection, k=2)
    assert _values(again) == _values(first)
    assert again.computed_at == stored.computed_at


def test_a_refresh_reads_as_many_queries_for_twelve_runs_as_for_two(
    collection: Collection,
    write_file: Callable[..., Path],
    django_assert_max_num_queries: Callable[..., Any],
) -> None:
    from django.test.utils import CaptureQueriesContext

    snapshots.leaderboard_refresh(collection=collection, k=2)  # bounds cached
    with CaptureQueriesContext(connection) as two:
        snapshots.leaderboard_refresh(collection=collection, k=2)
    for n in range(10):
        run = RUN_B.replace(" B\n", f" C{n}\n")
        services.run_import(collection=collection, source=write_file(f"c{n}.run", run))
    snapshots.leaderboard_refresh(collection=collection, k=2)
    with django_assert_max_num_queries(len(two)):  # no query per run (a deferred field read)
        board = snapshots.leaderboard_refresh(collection=collection, k=2)
    assert len(board.rows) == 12 and not any(row.pending for row in board.rows)


def test_the_snapshot_equals_a_computation_from_scratch_after_every_change(
    collection: Collection,
) -> None:
    for qid, docno, grade in [("q2", "d4", 3), ("q3", "d9", 1), ("q1", "d2", 0), ("q2", "d4", 0)]:
        _judge(collection, qid, docno, grade)
        for k in (2, 5):
            board = snapshots.leaderboard_current(collection=collection, k=k)
            fresh = leaderboards.leaderboard_compute(collection=collection, k=k)
            assert _values(board) == _values(fresh)
            assert board.computed_stamp == board.state.stamp


def test_after_a_judgement_only_that_querys_bounds_are_recomputed(
    refresh_later: None, collection: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshots.leaderboard_current(collection=collection, k=2)
    asked: list[set[int]] = []
    real = bounds_cache.top_grade_bounds_by_query

    def spy(**kwargs: Any) -> Any:
        asked.append(set(kwargs["query_ids"]))
        return real(**kwargs)

    monkeypatch.setattr(bounds_cache, "top_grade_bounds_by_query", spy)
    _judge(collection, "q2", "d4", 2)
    board = snapshots.leaderboard_current(collection=collection, k=2)
    assert asked == [{collection.queries.get(qid="q2").id}]
    assert QueryBound.objects.filter(query__collection=collection, k=2).count() == 3
    assert not board.stale


def test_a_changed_run_invalidates_every_cached_bound(
    refresh_later: None,
    collection: Collection,
    write_file: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshots.leaderboard_current(collection=collection, k=2)
    services.run_import(
        collection=collection,
        source=write_file("b2.run", RUN_B.replace("d5 1 9", "d7 1 9")),
        replace=True,
    )
    asked: list[set[int]] = []
    real = bounds_cache.top_grade_bounds_by_query
    monkeypatch.setattr(
        bounds_cache,
        "top_grade_bounds_by_query",
        lambda **kw: asked.append(set(kw["query_ids"])) or real(**kw),
    )
    board = snapshots.leaderboard_current(collection=collection, k=2)
    assert asked and len(asked[0]) == 3
    assert _values(board) == _values(leaderboards.leaderboard_compute(collection=collection, k=2))


def test_the_worker_refresh_computes_every_cutoff_behind_the_stamp(
    refresh_later: None, collection: Collection
) -> None:
    assert refresh_work.leaderboards_refresh_task(collection_id=collection.id) == 2
    assert refresh_work.leaderboards_refresh_task(collection_id=collection.id) == 0
    _judge(collection, "q1", "d2", 2)
    assert refresh_work.leaderboards_refresh_task(collection_id=collection.id) == 2


def test_a_refresh_that_cannot_be_published_is_not_an_error(
    collection: Collection, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the broker down the schedule neither raises nor keeps its queued mark, so the
    next change tries to publish again (reads serve the stored snapshot meanwhile)."""
    from django.core.cache import caches

    from annotations import publishing

    attempts: list[tuple[object, ...]] = []

    def down(args: tuple[object, ...], **options: object) -> None:
        attempts.append(args)
        raise ConnectionRefusedError("broker down")

    settings.NDCG_COORDINATION_SHARED = True  # the queued mark is in use, as with Redis
    key = refresh_queue.refresh_key(collection.id)
    caches["coordination"].delete(key)
    monkeypatch.setattr(publishing.REFRESH_LEADERBOARDS, "apply_async", down)
    refresh_queue.leaderboards_refresh_schedule(collection_id=collection.id)
    assert caches["coordination"].get(key) is None  # the queued mark was released
    refresh_queue.leaderboards_refresh_schedule(collection_id=collection.id)
    assert attempts == [(collection.id,), (collection.id,)]  # tried again


def test_while_a_worker_stores_a_snapshot_reads_serve_the_stored_one_without_waiting(
    collection: Collection,
) -> None:
    snapshots.leaderboard_current(collection=collection, k=2)
    _judge(collection, "q2", "d4", 3)
    stored = snapshots.leaderboard_read(collection=collection, k=2)
    assert stored is not None
    if connection.vendor != "postgresql":  # SQLite has no row locks to wait on
        return
    locked, release = threading.Event(), threading.Event()

    def storing_elsewhere() -> None:
        with transaction.atomic():
            LeaderboardSnapshot.objects.select_for_update().filter(collection=collection, k=2).get()
            locked.set()
            release.wait(timeout=30)
        connection.close()

    other = threading.Thread(target=storing_elsewhere)
    other.start()
    try:
        assert locked.wait(timeout=30)
        started = time.monotonic()
        board = snapshots.leaderboard_read(collection=collection, k=2)
        assert board is not None and board.rows == stored.rows  # the stored one
        assert time.monotonic() - started < 5  # not waiting for the lock
    finally:
        release.set()
        other.join()
    assert not snapshots.leaderboard_current(collection=collection, k=2).stale


def test_warming_makes_the_draws_of_every_stored_leaderboards_query_count(
    collection: Collection,
) -> None:
    from annotations.metrics import significance_arrays

    snapshots.leaderboard_current(collection=collection, k=2)
    significance_arrays._cached_indices.cache_clear()
    significance_arrays._cached_signs.cache_clear()
    assert snapshots.statistics_warm() == 1  # three evaluated queries at k = 2
    assert significance_arrays._cached_indices.cache_info().currsize == 1
    assert significance_arrays._cached_signs.cache_info().currsize == 1
