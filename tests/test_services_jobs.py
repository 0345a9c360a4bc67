"""Import jobs as a service: an import outlived by its job's failure never commits."""

import threading
import time
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from annotations.models import Collection, ImportJob, Judgement
from annotations.services.job_progress import lines_count
from annotations.services.job_recovery import WORKER_STOPPED
from annotations.services.jobs import import_job_create, import_job_run


def _qrels(lines: int) -> bytes:
    return "".join(f"q{i % 500} 0 doc{i} {i % 4}\n" for i in range(lines)).encode()


def test_an_import_whose_job_was_failed_meanwhile_rolls_back(
    collection: Collection, settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    upload = SimpleUploadedFile("big.qrels", _qrels(150_000))
    job = import_job_create(collection=collection, kind="qrels", upload=upload, created_by=None)

    def run() -> None:
        try:
            import_job_run(job_id=job.id)
        finally:
            connection.close()  # the thread's own connection

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 60
    while not ImportJob.objects.filter(id=job.id, state="running").exists():
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    # What the sweep does to a job it believes orphaned, here while its import still runs.
    failed = ImportJob.objects.filter(id=job.id, state="running").update(
        state="failed", error=WORKER_STOPPED
    )
    worker.join(timeout=120)
    job.refresh_from_db()
    if connection.vendor == "postgresql":
        assert failed == 1  # the import does not lock the job's row until it finishes
    stored = [path.name for path in Path(settings.NDCG_UPLOAD_DIR).iterdir()]
    if failed:
        assert (job.state, job.error) == ("failed", WORKER_STOPPED)
        assert not Judgement.objects.exists()  # the import saw the failure and rolled back
        assert job.retryable and stored == [job.upload_path]  # kept for Retry
    else:  # SQLite has one writer at a time: the update waited for the import's commit
        assert job.state == "done"
        assert Judgement.objects.count() == 150_000
        assert stored == []


def test_the_lines_of_a_file_are_counted_with_or_without_a_last_newline(tmp_path: Path) -> None:
    path = tmp_path / "f"
    for content, lines in ((b"", 0), (b"a\n", 1), (b"a\nb", 2), (b"a\n" * 3_000_000, 3_000_000)):
        path.write_bytes(content)
        with path.open("rb") as raw:
            assert lines_count(raw) == lines
