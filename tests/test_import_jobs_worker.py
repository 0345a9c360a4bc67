"""Import jobs on a real Celery worker with Redis: progress while it runs, and a killed worker."""

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotations.models import Collection, ImportJob, Judgement, Query
from annotations.services import job_recovery
from annotations.services.job_recovery import WORKER_STOPPED, import_jobs_sweep
from annotations.services.jobs import import_job_create
from tests.conftest import celery_broker, require_component
from tests.factories import MembershipFactory, UserFactory
from tests.waiting import wait_until
from tests.workers import BROKER, redis_reachable, worker_start

pytestmark = pytest.mark.celery


@pytest.fixture
def organiser(collection: Collection, settings, tmp_path: Path) -> Client:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    user = UserFactory(username="olga")
    MembershipFactory(collection=collection, user=user, role="organiser")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def worker(collection: Collection, settings, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    """A real worker on the test database and the test's upload directory; this process
    queues tasks on Redis and reads the progress a worker writes to the coordination cache
    (the broker's Redis) on SQLite."""
    if not redis_reachable():
        require_component(f"Redis is not reachable at {BROKER}")
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    queue = f"ndcg-test-imports-{os.getpid()}"
    heartbeat = {"annotations.services.job_progress.HEARTBEAT_SECONDS": 1}
    process = worker_start(
        queue, {"TEST_WORKER_CONSTANTS": json.dumps(heartbeat)}, without=["DJANGO_CACHE_URL"]
    )
    settings.CELERY_BROKER_URL = BROKER
    settings.CACHES = {
        **settings.CACHES,
        "coordination": {
            "BACKEND": "ndcg_platform.redis_cache.PooledRedisCache",
            "LOCATION": BROKER,
            "KEY_PREFIX": "ndcg",  # the worker's (settings.py)
        },
    }
    settings.NDCG_COORDINATION_SHARED = True
    try:
        with celery_broker(BROKER, task_default_queue=queue):
            yield process
    finally:
        process.terminate()
        process.wait(timeout=30)
        caches["coordination"].close()


def _qrels(lines: int) -> bytes:
    return "".join(f"q{i % 500} 0 doc{i} {i % 4}\n" for i in range(lines)).encode()


def _upload(client: Client, content: bytes) -> ImportJob:
    response = client.post(
        reverse("collection-import-upload", args=["demo", "qrels"]),
        {"qrels-file": SimpleUploadedFile("big.qrels", content)},
    )
    assert response.status_code == 302
    return ImportJob.objects.get()


def _poll(client: Client, until: Callable[[dict[str, Any]], bool], seconds: float) -> list[dict]:
    """The job as the page's endpoint shows it, polled until `until` holds; every state seen."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        [job] = client.get(reverse("collection-import-jobs", args=["demo"])).json()["jobs"]
        seen.append(job)
        if until(job):
            return seen
        if job["state"] in ("done", "failed"):
            break
        time.sleep(0.2)
    states = [(job["state"], job["bytes_done"]) for job in seen]
    pytest.fail(f"the job did not get there; seen: {states[:20]} ... {states[-1:]}")


def _running_with_progress(job: dict[str, Any]) -> bool:
    return job["state"] == "running" and job["bytes_done"] > 0 and job["lines_done"] > 0


def test_a_worker_runs_the_job_and_the_page_sees_its_progress(
    collection: Collection, organiser: Client, worker: subprocess.Popen[bytes]
) -> None:
    content = _qrels(400_000)
    job = _upload(organiser, content)
    assert job.size == len(content)
    assert not Judgement.objects.exists()  # the request queued the job, the worker imports
    seen = _poll(organiser, _running_with_progress, 120)
    assert seen[-1]["bytes_done"] <= len(content)
    seen += _poll(organiser, lambda job: job["state"] != "running", 180)
    done = seen[-1]
    assert (done["state"], done["error"]) == ("done", "")
    assert done["summary"] == "judgements as trec: 400000 created, 0 updated, 0 unchanged"
    assert (done["bytes_done"], done["lines_done"], done["lines_total"]) == (
        len(content), 400_000, 400_000
    )  # fmt: skip
    assert (done["value"], done["max"], done["progress"]) == (1, 1, "done")
    assert all(job["lines_done"] <= 400_000 for job in seen)
    assert Judgement.objects.filter(query__collection=collection).count() == 400_000
    job.refresh_from_db()
    assert job.upload_path == "" and job.started is not None and job.finished is not None
    assert worker.poll() is None


def test_a_killed_worker_leaves_the_job_failed_and_nothing_imported(
    collection: Collection,
    organiser: Client,
    worker: subprocess.Popen[bytes],
    settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(job_recovery, "DEAD_SECONDS", 3)
    job = _upload(organiser, _qrels(800_000))
    _poll(organiser, _running_with_progress, 120)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    # The beat's sweep: once the job is silent for 3 s it is failed, and the page shows it.
    wait_until(import_jobs_sweep, "the sweep failed the silent job", seconds=60)
    failed = _poll(organiser, lambda job: job["state"] != "running", 5)[-1]
    assert (failed["state"], failed["error"]) == ("failed", WORKER_STOPPED)
    assert not Judgement.objects.exists()
    assert not Query.objects.filter(collection=collection).exists()
    assert not get_user_model().objects.filter(username="trec").exists()
    job.refresh_from_db()  # the upload is kept for Retry
    assert [path.name for path in Path(settings.NDCG_UPLOAD_DIR).iterdir()] == [job.upload_path]


def test_a_job_whose_task_the_broker_lost_is_queued_again_and_imported(
    collection: Collection,
    organiser: Client,
    worker: subprocess.Popen[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The job is stored but its task never reaches the broker (as after a Redis restart
    # without persistence); once it has waited STALE_SECONDS, the sweep (the beat's) queues
    # it again and the worker runs it.
    monkeypatch.setattr(job_recovery, "STALE_SECONDS", 5)
    job = import_job_create(
        collection=collection,
        kind="qrels",
        upload=SimpleUploadedFile("lost.qrels", _qrels(1000)),
        created_by=None,
    )
    ImportJob.objects.filter(id=job.id).update(created=timezone.now() - timedelta(seconds=6))
    caches["coordination"].delete(f"import-job-republished:{job.id}")
    import_jobs_sweep()
    done = _poll(organiser, lambda job: job["state"] == "done", 120)[-1]
    assert done["summary"] == "judgements as trec: 1000 created, 0 updated, 0 unchanged"
    assert Judgement.objects.filter(query__collection=collection).count() == 1000
