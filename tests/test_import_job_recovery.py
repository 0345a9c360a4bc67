"""Import jobs whose worker stopped: failed by the sweep within the dead limit, their upload
kept, offered again with Retry (same upload, same options) or let go with Dismiss."""

import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotations import tasks
from annotations.models import Collection, ImportJob, Judgement, Run
from annotations.selectors.jobs import Progress
from annotations.services import job_progress, job_queue, job_recovery, jobs
from annotations.services.job_recovery import (
    DEAD_SECONDS,
    STALE_SECONDS,
    UPLOAD_GONE,
    WORKER_STOPPED,
    import_job_retry,
    import_jobs_sweep,
)
from annotations.services.jobs import CountingReader, import_job_create
from tests.conftest import celery_broker, require_component, stored_upload
from tests.factories import CollectionFactory, MembershipFactory, UserFactory
from tests.waiting import wait_until
from tests.workers import BROKER, redis_reachable, worker_start

DEAD = DEAD_SECONDS


@pytest.fixture(autouse=True)
def _inline(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """No broker (imports run in the request), uploads under tmp_path, the default limits,
    and heartbeats every process can see (as with the broker's Redis on SQLite)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    settings.CELERY_BROKER_URL = ""
    settings.NDCG_COORDINATION_SHARED = True


def _member(collection: Collection, username: str, role: str) -> Client:
    client = Client()
    client.force_login(
        MembershipFactory(
            collection=collection, user=UserFactory(username=username), role=role
        ).user
    )
    return client


@pytest.fixture
def olga(collection: Collection) -> Client:
    return _member(collection, "olga", "organiser")


def _qrels(lines: int) -> bytes:
    return "".join(f"q{i % 50} 0 doc{i} {i % 4}\n" for i in range(lines)).encode()


def _running(collection: Collection, *, silent_for: float, **options: Any) -> ImportJob:
    """A job a worker claimed, whose last heartbeat was `silent_for` seconds ago."""
    content = options.pop("content", _qrels(20))
    job = import_job_create(
        collection=collection,
        kind=options.pop("kind", "qrels"),
        upload=SimpleUploadedFile(options.pop("name", "q.qrels"), content),
        created_by=None,
        **options,
    )
    then = timezone.now() - timedelta(seconds=silent_for)
    ImportJob.objects.filter(id=job.id).update(state="running", started=then, heartbeat=then)
    job.refresh_from_db()
    return job


def _stopped(collection: Collection, **options: Any) -> ImportJob:
    """A job whose worker stopped, failed by the sweep."""
    job = _running(collection, silent_for=DEAD + 1, **options)
    assert import_jobs_sweep() == 1
    job.refresh_from_db()
    assert (job.state, job.error) == ("failed", WORKER_STOPPED)
    return job


def _post(client: Client, action: str, job: ImportJob) -> Any:
    url = reverse(f"collection-import-{action}", args=[job.collection.slug, job.id])
    return client.post(url, follow=True)


def _messages(response: Any) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


# --- the dead limit ------------------------------------------------------------------------


def test_a_silent_running_job_is_failed_after_the_dead_limit_and_not_before(
    collection: Collection,
) -> None:
    job = _running(collection, silent_for=DEAD - 2)
    assert import_jobs_sweep() == 0
    job.refresh_from_db()
    assert job.state == "running" and job.error == ""
    ImportJob.objects.filter(id=job.id).update(
        heartbeat=timezone.now() - timedelta(seconds=DEAD + 1)
    )
    assert import_jobs_sweep() == 1
    job.refresh_from_db()
    assert (job.state, job.error) == ("failed", WORKER_STOPPED)
    assert WORKER_STOPPED.endswith("Press Retry to import it again.")
    assert job.finished is not None
    assert job.retryable and stored_upload(job).is_file()  # the upload is kept
    assert not Judgement.objects.exists()
    assert import_jobs_sweep() == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL")
def test_a_job_whose_row_a_transaction_holds_is_alive_and_the_sweep_does_not_wait(
    collection: Collection,
) -> None:
    """A large import spends minutes in COMMIT, its job row locked and no heartbeat written:
    the sweep (on the scores worker, or in a page read) skips that row instead of waiting."""
    from django.db import connections, transaction

    job = _running(collection, silent_for=DEAD + 1)
    locked, release = threading.Event(), threading.Event()

    def committing() -> None:
        try:
            with transaction.atomic():
                ImportJob.objects.select_for_update().filter(id=job.id).first()
                locked.set()
                release.wait(timeout=15)
        finally:
            connections.close_all()

    holder = threading.Thread(target=committing)
    holder.start()
    try:
        assert locked.wait(timeout=10)
        started = time.monotonic()
        assert import_jobs_sweep() == 0  # held: alive, skipped at once
        assert time.monotonic() - started < 5
        job.refresh_from_db()
        assert job.state == "running"
    finally:
        release.set()
        holder.join()
    assert import_jobs_sweep() == 1  # silent and no longer held: failed as before
    job.refresh_from_db()
    assert (job.state, job.error) == ("failed", WORKER_STOPPED)


def test_a_job_that_keeps_beating_is_never_failed(collection: Collection) -> None:
    job = _running(collection, silent_for=DEAD + 30)
    assert job.started is not None
    # What the job's heartbeat thread writes (on its row, or on SQLite the coordination cache)
    beat = Progress(bytes_done=3, lines_done=1, heartbeat=timezone.now(), stage="parsing")
    job_progress.import_job_progress_write(job=job, now=beat, attempt=job.started)
    assert import_jobs_sweep() == 0
    job.refresh_from_db()
    assert job.state == "running"


def test_where_no_other_process_sees_the_heartbeat_the_stale_limit_stands(
    collection: Collection, settings
) -> None:  # type: ignore[no-untyped-def]
    # SQLite keeps a running job's heartbeat in the coordination cache; a cache of this
    # process alone cannot tell other processes that a job lives, so there only the longer
    # STALE_SECONDS fails it. PostgreSQL has the heartbeat on the row.
    settings.NDCG_COORDINATION_SHARED = False
    job = _running(collection, silent_for=DEAD + 10)
    expected = 1 if connection.vendor == "postgresql" else 0
    assert import_jobs_sweep() == expected
    ImportJob.objects.filter(id=job.id).update(
        heartbeat=timezone.now() - timedelta(seconds=STALE_SECONDS + 1)
    )
    assert import_jobs_sweep() == 1 - expected
    job.refresh_from_db()
    assert job.state == "failed"


def test_the_heartbeat_beats_on_its_interval_while_the_progress_stands_still(
    collection: Collection, settings, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # A long step that reads nothing (storing, scoring) still beats, every
    # HEARTBEAT_SECONDS, and not at every tick of the progress timer.
    monkeypatch.setattr(job_progress, "HEARTBEAT_SECONDS", 0.3)
    monkeypatch.setattr(job_progress, "PROGRESS_SECONDS", 0.02)
    beats: list[float] = []
    enough = threading.Event()

    def record(**kwargs: Any) -> None:
        beats.append(time.monotonic())
        if len(beats) >= 4:
            enough.set()

    monkeypatch.setattr(job_progress, "import_job_progress_write", record)
    job = _running(collection, silent_for=0)
    assert job.started is not None
    reader = CountingReader(stored_upload(job).open("rb"))
    writer = job_progress.ProgressWriter(job, job_progress.JobProgress(job, reader, 1), job.started)
    writer.start()
    try:
        assert enough.wait(10), f"only {len(beats)} heartbeats in 10 s"
    finally:
        writer.stop()
        reader._raw.close()
    gaps = [later - earlier for earlier, later in itertools.pairwise(beats)]
    assert min(gaps) >= 0.25, gaps  # the progress did not move: beats only


def test_a_stopped_worker_is_noticed_within_a_minute() -> None:
    from ndcg_platform import settings as defaults

    period = defaults.CELERY_BEAT_SCHEDULE["import-jobs-sweep"]["schedule"]
    assert period == DEAD_SECONDS / 3  # the sweep, every third of the dead limit
    assert DEAD_SECONDS + period <= 60
    # several heartbeats fit in the dead limit: a live job missing one is not failed
    assert DEAD_SECONDS >= 4 * job_progress.HEARTBEAT_SECONDS
    # a job is queued again only after it could have been failed as silent
    assert STALE_SECONDS > DEAD_SECONDS


# --- Retry ---------------------------------------------------------------------------------


def test_retry_imports_the_same_upload_as_the_same_assessor_and_then_deletes_it(
    collection: Collection, olga: Client
) -> None:
    alice = MembershipFactory(collection=collection, user=UserFactory(username="alice")).user
    job = _stopped(collection, content=_qrels(120), assessor=alice)
    upload = stored_upload(job)
    page = olga.get(reverse("collection-imports", args=["demo"])).content.decode()
    assert reverse("collection-import-retry", args=["demo", job.id]) in page
    assert reverse("collection-import-dismiss", args=["demo", job.id]) in page
    assert olga.get(reverse("collection-import-jobs", args=["demo"])).json()["jobs"][0]["retryable"]

    response = _post(olga, "retry", job)
    assert response.status_code == 200
    job.refresh_from_db()
    assert (job.state, job.error, job.retries) == ("done", "", 1)
    assert job.summary == "judgements as alice: 120 created, 0 updated, 0 unchanged"
    assert _messages(response) == [f"q.qrels: imported ({job.summary})."]
    assert job.retried is not None and job.finished is not None and job.finished > job.retried
    assert Judgement.objects.filter(query__collection=collection, assessor=alice).count() == 120
    assert job.upload_path == "" and not upload.exists()  # removed once the job succeeded
    assert not list(upload.parent.iterdir())
    page = olga.get(reverse("collection-imports", args=["demo"])).content.decode()
    assert reverse("collection-import-retry", args=["demo", job.id]) not in page
    assert "retried 1\u00d7" in page


def test_retry_keeps_a_runs_options(collection: Collection) -> None:
    owner = UserFactory(username="olga")
    collection.queries.create(qid="q1", title="one")
    two_tags = b"q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 1 2.0 dense\n"
    job = _stopped(collection, kind="run", name="track.txt", content=two_tags, split_tags=True)
    ImportJob.objects.filter(id=job.id).update(created_by=owner)
    job.refresh_from_db()
    retried = import_job_retry(job=job, by=owner)
    assert retried.state == "done", retried.error
    assert retried.summary == "runs, one per tag: bm25 (1 results), dense (1 results)"
    assert set(Run.objects.filter(collection=collection).values_list("name", flat=True)) == {
        "bm25",
        "dense",
    }


def test_a_job_failed_by_an_error_keeps_its_upload_until_a_retry_succeeds(
    collection: Collection, olga: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = jobs._import

    def broken(job: ImportJob, source: Any) -> str:
        raise RuntimeError("disk full")

    monkeypatch.setattr(jobs, "_import", broken)
    job = import_job_create(
        collection=collection,
        kind="qrels",
        upload=SimpleUploadedFile("q.qrels", _qrels(5)),
        created_by=None,
    )
    job_queue.import_jobs_start(jobs=[job])
    job.refresh_from_db()
    assert job.state == "failed" and "the import failed (RuntimeError)" in job.error
    assert job.retryable and stored_upload(job).is_file()
    assert not Judgement.objects.exists()
    monkeypatch.setattr(jobs, "_import", real_import)
    _post(olga, "retry", job)
    job.refresh_from_db()
    assert job.state == "done" and not job.upload_path
    assert Judgement.objects.count() == 5


def test_retry_with_a_broker_queues_the_job_again(
    collection: Collection, olga: Client, settings, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # never reached: publishing recorded
    published: list[int] = []
    from annotations import publishing

    monkeypatch.setattr(
        publishing.IMPORT_JOB_RUN, "apply_async", lambda args, **_: published.append(args[0])
    )
    job = _stopped(collection)
    in_cache = connection.vendor != "postgresql"  # SQLite: progress in the coordination cache
    if in_cache:
        dead_run = (99, 9, "parsing", 0, 0, 10, time.time())  # what the dead run left
        caches["coordination"].set(job_progress.progress_key(job), dead_run)
    response = _post(olga, "retry", job)
    assert _messages(response) == ["q.qrels: queued for import."]
    assert published == [job.id]
    job.refresh_from_db()
    assert (job.state, job.error, job.bytes_done, job.started, job.heartbeat) == (
        "queued",
        "",
        0,
        None,
        None,
    )
    if in_cache:
        assert caches["coordination"].get(job_progress.progress_key(job)) is None
    assert stored_upload(job).is_file()
    # queued anew: the stale limit counts from the retry, not from the upload
    ImportJob.objects.filter(id=job.id).update(created=timezone.now() - timedelta(hours=1))
    assert import_jobs_sweep() == 0 and published == [job.id]


def test_retry_of_a_job_whose_upload_is_gone_says_so(collection: Collection, olga: Client) -> None:
    job = _stopped(collection)
    stored_upload(job).unlink()
    response = _post(olga, "retry", job)
    assert _messages(response) == [f"q.qrels: {UPLOAD_GONE}"]
    assert UPLOAD_GONE in response.content.decode()
    job.refresh_from_db()
    assert (job.state, job.error, job.upload_path) == ("failed", UPLOAD_GONE, "")
    assert not job.retryable
    assert reverse("collection-import-retry", args=["demo", job.id]) not in (
        response.content.decode()
    )


def test_only_a_failed_job_is_retried_or_dismissed(collection: Collection, olga: Client) -> None:
    job = _running(collection, silent_for=1)
    for action, done in (("retry", "retried"), ("dismiss", "dismissed")):
        response = _post(olga, action, job)
        assert response.status_code == 200
        assert _messages(response) == [f"q.qrels: only a failed import can be {done}."]
    job.refresh_from_db()
    assert job.state == "running" and stored_upload(job).is_file()


# --- Dismiss -------------------------------------------------------------------------------


def test_dismiss_deletes_the_upload_and_leaves_the_job_listed_dismissed(
    collection: Collection, olga: Client
) -> None:
    job = _stopped(collection)
    upload = stored_upload(job)
    response = _post(olga, "dismiss", job)
    assert _messages(response) == ["q.qrels: dismissed; its upload is deleted."]
    job.refresh_from_db()
    assert (job.state, job.upload_path) == ("dismissed", "")
    assert not upload.exists()
    page = response.content.decode()
    assert 'data-state="dismissed"' in page
    assert reverse("collection-import-retry", args=["demo", job.id]) not in page
    response = _post(olga, "retry", job)
    assert _messages(response) == ["q.qrels: only a failed import can be retried."]
    assert ImportJob.objects.get(id=job.id).state == "dismissed"


def test_deleting_a_failed_job_deletes_its_kept_upload(collection: Collection) -> None:
    job = _stopped(collection)
    upload = stored_upload(job)
    job.delete()
    assert not upload.exists()


# --- who may ----------------------------------------------------------------------------


def test_only_an_organiser_retries_or_dismisses(collection: Collection, olga: Client) -> None:
    job = _stopped(collection)
    alice = _member(collection, "alice", "assessor")
    eve = Client()
    eve.force_login(UserFactory(username="eve"))
    for action in ("retry", "dismiss"):
        url = reverse(f"collection-import-{action}", args=["demo", job.id])
        assert alice.post(url).status_code == 403
        assert eve.post(url).status_code == 404
        assert Client().post(url).status_code == 302  # to the login page
        assert olga.get(url).status_code == 405
        checked = Client(enforce_csrf_checks=True)
        checked.force_login(get_user_model().objects.get(username="olga"))
        assert checked.post(url).status_code == 403  # no CSRF token
    other = _member(CollectionFactory(slug="other"), "oscar", "organiser")
    assert other.post(reverse("collection-import-retry", args=["other", job.id])).status_code == 404
    job.refresh_from_db()
    assert job.state == "failed" and stored_upload(job).is_file()


@pytest.mark.browser
def test_the_page_offers_retry_once_the_job_it_follows_fails_and_retry_imports_it(  # type: ignore[no-untyped-def]
    collection: Collection, page, login
) -> None:
    from playwright.sync_api import expect

    MembershipFactory(collection=collection, user=UserFactory(username="cora"), role="organiser")
    login("cora")
    job = _running(collection, silent_for=1, content=_qrels(30))
    page.goto("/collections/demo/import/")
    row = page.locator(f'#import-jobs tr[data-job="{job.id}"]')
    retry = row.get_by_role("button", name="Retry q.qrels")
    expect(row.locator(".job-state")).to_have_text("running")
    expect(retry).to_be_hidden()
    # the worker falls silent: the periodic sweep fails the job, the page's polling shows it
    ImportJob.objects.filter(id=job.id).update(
        heartbeat=timezone.now() - timedelta(seconds=DEAD + 1)
    )
    assert import_jobs_sweep() == 1
    expect(row.locator(".job-state")).to_have_text("failed", timeout=15_000)
    expect(row.locator(".job-result")).to_have_text(WORKER_STOPPED)
    expect(retry).to_be_visible()
    expect(row.get_by_role("button", name="Dismiss q.qrels and delete its upload")).to_be_visible()
    with page.expect_navigation():
        retry.click()
    expect(row.locator(".job-state")).to_have_text("done")
    expect(row.locator(".job-result")).to_have_text(
        "judgements as trec: 30 created, 0 updated, 0 unchanged"
    )
    expect(retry).to_have_count(0)
    assert Judgement.objects.filter(query__collection=collection).count() == 30


# --- a real worker killed mid-import -----------------------------------------------------


@contextmanager
def _worker(queue: str, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    process = worker_start(queue, env, without=["DJANGO_CACHE_URL"])
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)


def _until(what: Callable[[], Any], seconds: float, every: float = 0.1) -> Any:
    return wait_until(what, "the import job", seconds, every)


def _reading(client: Client) -> bool:
    """The page's job list shows the job running with some of its file read."""
    [job] = client.get(reverse("collection-import-jobs", args=["demo"])).json()["jobs"]
    return job["state"] == "running" and job["bytes_done"] > 0


@pytest.mark.celery
def test_a_worker_killed_mid_import_is_noticed_within_the_dead_limit_and_retried(
    collection: Collection, olga: Client, settings, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    if not redis_reachable():
        require_component(f"Redis is not reachable at {BROKER}")
    dead = 3
    sweep_every = max(1.0, dead / 3)  # the beat's period for this dead limit
    monkeypatch.setattr(job_recovery, "DEAD_SECONDS", dead)
    monkeypatch.setattr(job_progress, "HEARTBEAT_SECONDS", 1)
    settings.CELERY_BROKER_URL = BROKER
    settings.CACHES = {
        **settings.CACHES,
        "coordination": {
            "BACKEND": "ndcg_platform.redis_cache.PooledRedisCache",
            "LOCATION": BROKER,
            "KEY_PREFIX": "ndcg",  # the worker's (settings.py)
        },
    }
    queue = f"ndcg-test-recovery-{os.getpid()}"
    env = {"TEST_WORKER_CONSTANTS": json.dumps({f"{job_progress.__name__}.HEARTBEAT_SECONDS": 1})}
    lines = 60_000
    try:
        with celery_broker(BROKER, task_default_queue=queue):
            with _worker(queue, env) as first:
                response = olga.post(
                    reverse("collection-import-upload", args=["demo", "qrels"]),
                    {"qrels-file": SimpleUploadedFile("big.qrels", _qrels(lines))},
                )
                assert response.status_code == 302
                job = ImportJob.objects.get()
                _until(lambda: _reading(olga), 60)  # the import is under way
                os.kill(first.pid, signal.SIGKILL)
                killed = time.monotonic()
                first.wait(timeout=30)
            # the beat's sweep, every third of the dead limit
            failed = _until(
                lambda: tasks.import_jobs_sweep() and ImportJob.objects.get(id=job.id),
                dead + 10,
                every=sweep_every,
            )
            noticed = time.monotonic() - killed
            assert (failed.state, failed.error) == ("failed", WORKER_STOPPED)
            assert dead - 1.5 <= noticed <= dead + sweep_every + 1.5, noticed
            assert not Judgement.objects.exists()
            assert failed.retryable and stored_upload(failed).is_file()

            assert _messages(_post(olga, "retry", failed))[-1] == "big.qrels: queued for import."
            with _worker(queue, env):
                done = _until(
                    lambda: ImportJob.objects.filter(
                        id=job.id, state__in=["done", "failed"]
                    ).first(),
                    60,
                    every=0.2,
                )
            assert (done.state, done.error, done.retries) == ("done", "", 1)
            assert done.summary == f"judgements as trec: {lines} created, 0 updated, 0 unchanged"
            assert Judgement.objects.filter(query__collection=collection).count() == lines
            assert done.upload_path == "" and not stored_upload(failed).exists()
    finally:
        caches["coordination"].close()
