"""Without a broker (`make demo`), import jobs run on the web process's own threads: the
upload's request returns at once, the page keeps answering while the threads import, the
progress is in the units of the work and never ahead of it, and a job a restart cut off is
failed by the sweep with nothing of it imported."""

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotations import services
from annotations.models import Collection, ImportJob, QueryScore, Run
from annotations.services.job_progress import lines_count
from annotations.services.job_queue import import_jobs_held, import_jobs_wait, import_threads
from annotations.services.job_recovery import NOT_STARTED, import_jobs_sweep
from annotations.services.jobs import import_job_create
from tests.conftest import stored_upload
from tests.factories import MembershipFactory, UserFactory

QUERIES, DEPTH, FILES = 60, 1000, 6


def _run_file(tag: str) -> bytes:
    lines = (
        f"q{q} Q0 doc{(d * 7 + q) % 3000} {d + 1} {DEPTH - d}.5 {tag}\n"
        for q in range(QUERIES)
        for d in range(DEPTH)
    )
    return "".join(lines).encode()


@pytest.fixture
def organiser(collection: Collection, settings: Any, tmp_path: Path) -> Client:
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    user = UserFactory(username="olga")
    MembershipFactory(collection=collection, user=user, role="organiser")
    qrels = "".join(f"q{q} 0 doc{d} {(q + d) % 4}\n" for q in range(QUERIES) for d in range(40))
    path = tmp_path / "judged.qrels"
    path.write_text(qrels)
    with path.open("rb") as source:
        services.judgements_import(
            collection=collection, source=source, assessor=services.import_assessor()
        )
    client = Client()
    client.force_login(user)
    return client


def test_the_threads_import_a_multi_file_upload_while_the_page_answers(
    collection: Collection, organiser: Client, import_threads: int
) -> None:
    files = {f"system-{i:02d}.txt": _run_file(f"system-{i:02d}") for i in range(FILES)}
    url = reverse("collection-import-upload", args=[collection.slug, "run"])
    upload = [SimpleUploadedFile(name, content) for name, content in files.items()]
    response = organiser.post(url, {"run-file": upload})
    assert response.status_code == 302
    # The request returned with the imports still going: it did not run them.
    states = list(ImportJob.objects.values_list("state", flat=True))
    assert len(states) == FILES and any(state != "done" for state in states)
    assert import_jobs_held(), "the import threads hold the jobs"

    state_url = reverse("collection-import-jobs", args=[collection.slug])
    page_url = reverse("collection-imports", args=[collection.slug])
    seen: dict[str, list[dict[str, Any]]] = {name: [] for name in files}
    answered_while_running = 0
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        data = organiser.get(state_url).json()
        running = [job for job in data["jobs"] if job["state"] == "running"]
        if running and organiser.get(page_url).status_code == 200:
            answered_while_running += 1
        for job in data["jobs"]:
            seen[job["file_name"]].append(job)
        if data["active"] == 0 and all(job["stage"] == "" for job in data["jobs"]):
            break
        time.sleep(0.05)
    assert import_jobs_wait(timeout=60)
    assert answered_while_running > 0, "the page never answered while a job was running"

    for name, content in files.items():
        lines = content.count(b"\n")
        snapshots = seen[name]
        for job in snapshots:
            # Never ahead of the work: no more lines than the file has, no more queries
            # scored than there are to score, the bar within its maximum.
            assert job["lines_done"] <= lines
            assert job["lines_total"] in (0, lines)
            assert job["queries_done"] <= max(job["queries_total"], 0)
            if job["value"] is not None:
                assert 0 <= job["value"] <= job["max"]
            assert "bytes" not in job["progress"] and "%" not in job["progress"]
        parsed = [job["lines_done"] for job in snapshots if job["state"] == "running"]
        assert parsed == sorted(parsed), "the lines parsed never go back"
        final = snapshots[-1]
        assert (final["state"], final["error"]) == ("done", ""), final
        assert final["summary"] == f"run: {name[:-4]}, {QUERIES * DEPTH} results"
        assert final["lines_done"] == final["lines_total"] == lines
        # Scored in the job's thread: every judged query of the run.
        assert final["queries_done"] == final["queries_total"] == QUERIES
    stages = {job["stage"] for jobs in seen.values() for job in jobs}
    assert stages & {"parsing", "storing", "scoring"}, stages
    assert Run.objects.filter(collection=collection).count() == FILES
    assert QueryScore.objects.filter(run__collection=collection).count() == FILES * QUERIES
    page = organiser.get(page_url).content.decode()
    assert (
        f'Your last upload of {FILES} files: <strong class="batch-line">{FILES} of {FILES} done'
        in page
    )


def test_a_sqlite_database_gets_one_import_thread(settings: Any) -> None:
    from django.db import connection

    settings.NDCG_IMPORT_THREADS = 2
    assert import_threads() == (1 if connection.vendor == "sqlite" else 2)
    settings.NDCG_IMPORT_THREADS = 0
    assert import_threads() == 0


def test_a_job_a_restart_cut_off_while_it_waited_for_a_thread_is_failed(
    collection: Collection, settings: Any, tmp_path: Path
) -> None:
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    settings.CELERY_BROKER_URL = ""
    settings.NDCG_COORDINATION_SHARED = True  # every process would see the heartbeats
    content = b"q1 0 d1 1\n"

    def queued(beat_seconds_ago: float | None, created_seconds_ago: float) -> ImportJob:
        job = import_job_create(
            collection=collection, kind="qrels", upload=SimpleUploadedFile("q.qrels", content),
            created_by=None,
        )  # fmt: skip
        now = timezone.now()
        beat = None if beat_seconds_ago is None else now - timedelta(seconds=beat_seconds_ago)
        ImportJob.objects.filter(id=job.id).update(
            heartbeat=beat, created=now - timedelta(seconds=created_seconds_ago)
        )
        return job

    dead = settings.NDCG_IMPORT_DEAD_SECONDS
    held_alive = queued(beat_seconds_ago=1, created_seconds_ago=10_000)  # a long queue
    held_dead = queued(beat_seconds_ago=dead + 5, created_seconds_ago=dead + 5)
    never_held = queued(beat_seconds_ago=None, created_seconds_ago=10)
    assert import_jobs_sweep(collection=collection) == 1
    states = {
        job.id: ImportJob.objects.values_list("state", "error").get(id=job.id)
        for job in (held_alive, held_dead, never_held)
    }
    assert states[held_alive.id] == ("queued", "")
    assert states[held_dead.id] == ("failed", NOT_STARTED)
    assert states[never_held.id] == ("queued", "")
    failed = ImportJob.objects.get(id=held_dead.id)
    assert failed.retryable and stored_upload(failed).is_file()  # Retry can run it


def test_the_lines_of_a_file_are_counted_with_or_without_a_last_newline(tmp_path: Path) -> None:
    path = tmp_path / "f"
    for content, lines in ((b"", 0), (b"a\n", 1), (b"a\nb", 2), (b"a\n" * 3_000_000, 3_000_000)):
        path.write_bytes(content)
        with path.open("rb") as raw:
            assert lines_count(raw) == lines


def test_queued_jobs_a_stopped_process_left_are_taken_over_by_the_threads_of_the_sweeper(
    collection: Collection, organiser: Client, import_threads: int, settings: Any
) -> None:
    settings.NDCG_COORDINATION_SHARED = True
    dead = settings.NDCG_IMPORT_DEAD_SECONDS
    left = []
    for index in range(3):  # handed to a process that stopped before starting them
        job = import_job_create(
            collection=collection, kind="run", created_by=None,
            upload=SimpleUploadedFile(f"left{index}.txt", b"q1 Q0 doc1 1 2.0 left%d\n" % index),
        )  # fmt: skip
        stale = timezone.now() - timedelta(seconds=dead + 5)
        ImportJob.objects.filter(id=job.id).update(heartbeat=stale, created=stale)
        left.append(job.id)
    live = import_job_create(
        collection=collection, kind="qrels", created_by=None,
        upload=SimpleUploadedFile("live.qrels", b"q1 0 doc1 1\n"),
    )  # fmt: skip
    ImportJob.objects.filter(id=live.id).update(heartbeat=timezone.now())  # a live holder's
    assert import_jobs_sweep(collection=collection) == 0  # nothing failed: taken over
    assert import_jobs_wait(timeout=120)
    states = dict(ImportJob.objects.filter(id__in=left).values_list("file_name", "state"))
    assert states == {"left0.txt": "done", "left1.txt": "done", "left2.txt": "done"}
    assert ImportJob.objects.get(id=live.id).state == "queued"  # its process still lives
    assert Run.objects.filter(collection=collection).count() == 3
