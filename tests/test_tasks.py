"""Score recomputation on a real Celery worker with Redis as the broker."""

import os
import subprocess
from collections.abc import Iterator

import pytest
from django.db import connection

from annotations import services
from annotations.models import Collection, Judgement, Query
from tests.conftest import celery_broker, require_component
from tests.stored import query_score
from tests.test_scores import oracle, stored_ndcg
from tests.waiting import wait_until
from tests.workers import BROKER, redis_reachable, worker_start


def _coordination_url(broker: str) -> str:
    """The same Redis, another database: clearing the coordination cache flushes its whole
    database, which must never hold another test's queued tasks."""
    base, _, db = broker.rpartition("/")
    number = int(db) if db.isdigit() else 15
    return f"{base}/{(number - 1) % 16}"


@pytest.fixture
def celery_worker(worked_example: Collection, settings) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    """A real worker process on the test database; this process sends tasks to Redis."""
    if not redis_reachable():
        require_component(f"Redis is not reachable at {BROKER}")
    # A queue of its own, so no other worker (another test run) can take these tasks.
    queue = f"ndcg-test-{os.getpid()}"
    worker = worker_start(queue)
    try:
        settings.CELERY_BROKER_URL = BROKER
        with celery_broker(BROKER, task_default_queue=queue):
            yield worker
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def _wait_until_scored(query: Query, deadline_seconds: float = 60.0) -> None:
    """Poll the database until the worker has stored the query's scores (or fail)."""

    def scored() -> bool:
        query.refresh_from_db()
        return not query.scores_pending

    wait_until(scored, "the Celery worker did not recompute the scores", deadline_seconds)


@pytest.mark.celery
def test_worker_recomputes_scores_after_judgement_changes(
    worked_example: Collection,
    celery_worker: subprocess.Popen[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    query = Query.objects.get(qid="q1")
    before = query_score(query=query, k=6).ndcg
    judgement = Judgement.objects.get(query=query, document__docno="d1")
    for grade in (0, 1, 2):
        services.judgement_record(
            query=query,
            document=judgement.document,
            assessor=judgement.assessor,
            grade=grade,
            source="api",
        )
        _wait_until_scored(query)
        assert stored_ndcg(worked_example) == oracle(worked_example)
    assert query_score(query=query, k=6).ndcg != before
    assert celery_worker.poll() is None


@pytest.mark.celery
@pytest.mark.skipif(connection.vendor != "postgresql", reason="terminates PostgreSQL backends")
def test_a_worker_whose_kept_connection_was_cut_recomputes_the_next_change(
    worked_example: Collection, celery_worker: subprocess.Popen[bytes]
) -> None:
    """The worker keeps its connection between tasks; when the server drops it (a restart,
    a failover), the next task checks it, connects again and recomputes."""
    query = Query.objects.get(qid="q1")
    judgement = Judgement.objects.get(query=query, document__docno="d1")
    cut = 0
    for grade in (3, 0, 2):
        services.judgement_record(
            query=query,
            document=judgement.document,
            assessor=judgement.assessor,
            grade=grade,
            source="api",
        )
        _wait_until_scored(query)
        assert stored_ndcg(worked_example) == oracle(worked_example)
        with connection.cursor() as cursor:  # every other session of the test database
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            cut += cursor.fetchone()[0]
    assert cut >= 1  # the worker's kept connection was among them
    assert celery_worker.poll() is None


class _Recorder:
    name = "recorder"

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.fail = fail

    def apply_async(self, args: tuple[object, ...], **options: object) -> None:
        if self.fail:
            raise ConnectionRefusedError("broker down")
        self.calls.append(args)


@pytest.fixture
def shared_coordination(settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The coordination cache on a real Redis, as with a broker in production."""
    if not redis_reachable():
        require_component(f"Redis is not reachable at {BROKER}")
    settings.CACHES = {
        **settings.CACHES,
        "coordination": {
            "BACKEND": "ndcg_platform.redis_cache.PooledRedisCache",
            "LOCATION": _coordination_url(BROKER),
            "KEY_PREFIX": f"ndcg-test-{os.getpid()}",
        },
    }
    settings.NDCG_COORDINATION_SHARED = True
    from django.core.cache import caches

    caches["coordination"].clear()
    yield
    caches["coordination"].clear()


def test_one_queued_recomputation_per_query_until_the_task_starts(
    shared_coordination: None,
) -> None:
    from annotations.scores import scheduling as scores

    task = _Recorder()
    for _ in range(5):
        scores._publish(task, 7, coalesce="recompute-query:7")
    scores._publish(task, 8, coalesce="recompute-query:8")
    assert task.calls == [(7,), (8,)]
    scores.coalesce_release("recompute-query:7")  # the task started: later changes queue again
    scores._publish(task, 7, coalesce="recompute-query:7")
    assert task.calls == [(7,), (8,), (7,)]


def test_a_publish_that_fails_is_logged_not_raised_and_leaves_no_mark(
    shared_coordination: None,
) -> None:
    from annotations.scores import scheduling as scores

    scores._publish(_Recorder(fail=True), 9, coalesce="recompute-query:9")
    task = _Recorder()
    scores._publish(task, 9, coalesce="recompute-query:9")
    assert task.calls == [(9,)]
