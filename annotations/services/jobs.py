"""Import jobs: store an upload, run its import with visible progress, fail orphaned jobs."""

from __future__ import annotations

import logging
import os
import threading
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.core.files.move import file_move_safe
from django.core.files.uploadedfile import UploadedFile
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from annotations.models import Collection, ImportJob
from annotations.selectors.jobs import import_job_progress_read, progress_in_rows, progress_key
from annotations.services.imports import documents_import, topics_import
from annotations.services.judgements import import_assessor, judgements_import
from annotations.services.runs import run_files_import
from annotations.trec import TrecFormatError

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

WORKER_STOPPED = "the worker stopped; nothing was imported"
NOT_STARTED = "the server stopped before the import started; nothing was imported"
NOT_QUEUED = "the job could not be queued (the broker is unreachable); nothing was imported"
PROGRESS_SECONDS = 0.5  # how often a running job writes its progress and heartbeat


# --- progress ---------------------------------------------------------------------------


class CountingReader:
    """A binary file that counts what the import has read of it: bytes (the furthest
    position reached) and lines (newlines up to there); seeking back does not count twice."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.bytes_done = 0
        self.lines_done = 0

    def read(self, size: int = -1, /) -> bytes:
        start = self._raw.tell()
        data = self._raw.read(size)
        end = start + len(data)
        if end > self.bytes_done:
            self.lines_done += data.count(b"\n", max(0, self.bytes_done - start))
            self.bytes_done = end
        return data

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET, /) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def readable(self) -> bool:
        return True


def import_job_progress_write(*, job: ImportJob, bytes_done: int, lines_done: int) -> None:
    """Record a running job's progress and heartbeat outside the import's transaction
    (call it from a thread of its own: its connection is not the import's)."""
    now = timezone.now()
    if progress_in_rows():
        table = connection.ops.quote_name(ImportJob._meta.db_table)
        with connection.cursor() as cursor:
            # SKIP LOCKED: never wait for the row (the import locks it as it finishes).
            cursor.execute(
                f"UPDATE {table} SET bytes_done = %s, lines_done = %s, heartbeat = %s "
                f"WHERE id = (SELECT id FROM {table} WHERE id = %s AND state = %s "
                "FOR UPDATE SKIP LOCKED)",
                [bytes_done, lines_done, now, job.id, ImportJob.RUNNING],
            )
        return
    timeout = max(3600, settings.NDCG_IMPORT_STALE_SECONDS * 4)
    caches["coordination"].set(
        progress_key(job), (bytes_done, lines_done, now.timestamp()), timeout=timeout
    )


class _ProgressWriter(threading.Thread):
    """Writes a job's progress and heartbeat every PROGRESS_SECONDS while the import runs."""

    def __init__(self, job: ImportJob, reader: CountingReader) -> None:
        super().__init__(name=f"import-job-{job.id}-progress", daemon=True)
        self.job, self.reader = job, reader
        self.finished = threading.Event()

    def run(self) -> None:
        try:
            while not self.finished.wait(PROGRESS_SECONDS):
                try:
                    import_job_progress_write(
                        job=self.job,
                        bytes_done=self.reader.bytes_done,
                        lines_done=self.reader.lines_done,
                    )
                except Exception:  # progress is best effort; the import goes on
                    logger.warning("could not record the progress of import job %s", self.job.id)
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self.finished.set()
        self.join()


# --- creating and running jobs ------------------------------------------------------------


def _upload_store(upload: UploadedFile, path: Path) -> None:
    """Move (a large upload, already on disk) or copy (a small one, in memory) to `path`."""
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        file_move_safe(temporary(), str(path))  # a rename within one file system
        upload.close()
        return
    with open(path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)


def _upload_delete(job: ImportJob) -> None:
    """Delete a finished job's stored upload (its row already says it is gone)."""
    if job.upload_path:
        Path(job.upload_path).unlink(missing_ok=True)
        job.upload_path = ""


def import_job_create(
    *,
    collection: Collection,
    kind: str,
    upload: UploadedFile,
    created_by: User | None,
    assessor: User | None = None,
    replace: bool = False,
    split_tags: bool = False,
) -> ImportJob:
    """Store an uploaded file under NDCG_UPLOAD_DIR and record its job, queued."""
    directory = Path(settings.NDCG_UPLOAD_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    job = ImportJob(
        collection=collection,
        kind=kind,
        file_name=(upload.name or "upload")[:255],
        size=upload.size or 0,
        created_by=created_by,
        assessor=assessor if kind == ImportJob.QRELS else None,
        replace=replace and kind == ImportJob.RUN,
        split_tags=split_tags and kind == ImportJob.RUN,
    )
    job.full_clean(exclude=["upload_path"])
    path = directory / f"{job.token}.upload"
    _upload_store(upload, path)
    job.upload_path = str(path)
    try:
        job.save()
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return job


def import_jobs_start(*, jobs: list[ImportJob]) -> None:
    """With a broker, queue each job for a worker once the jobs are committed; without one,
    run them here, one after the other."""
    if settings.CELERY_BROKER_URL:
        for job in jobs:
            transaction.on_commit(lambda job_id=job.id: _publish(job_id))  # type: ignore[misc]
        return
    for job in jobs:
        import_job_run(job_id=job.id)


def _publish(job_id: int) -> None:
    from annotations import tasks

    try:
        tasks.import_job_run.apply_async((job_id,), retry=False)
    except Exception as error:
        logger.warning("could not queue import job %s: %r", job_id, error)
        job = ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED).first()
        if job is not None:
            _finish_failed(job, NOT_QUEUED, only_if=ImportJob.QUEUED)
            _upload_delete(job)


class _Abandoned(Exception):
    """The job was failed meanwhile (its heartbeat went stale): its import must not commit."""


def _validation_text(error: ValidationError) -> str:
    if hasattr(error, "error_dict"):
        return "; ".join(
            f"{field}: {' '.join(m for e in errors for m in e.messages)}"
            for field, errors in error.error_dict.items()
        )
    return " ".join(error.messages)


def _import(job: ImportJob, source: BinaryIO) -> str:
    """The import the job's kind names, through the services the commands use."""
    collection, name = job.collection, job.file_name
    if job.kind == ImportJob.TOPICS:
        return f"queries: {topics_import(collection=collection, source=source, name=name)}"
    if job.kind == ImportJob.DOCUMENTS:
        return f"documents: {documents_import(collection=collection, source=source, name=name)}"
    if job.kind == ImportJob.QRELS:
        assessor = job.assessor or import_assessor()
        summary = judgements_import(
            collection=collection,
            source=source,
            name=name,
            assessor=assessor,
            changed_by=job.created_by,
        )
        return f"judgements as {assessor.username}: {summary}"
    imported = run_files_import(
        collection=collection, sources=[source], names=[name], split_tags=job.split_tags,
        owner=job.created_by, replace=job.replace,
    )  # fmt: skip
    if not job.split_tags:
        return f"run: {imported[0].run.name}, {imported[0].results} results"
    runs = ", ".join(f"{one.run.name} ({one.results} results)" for one in imported)
    return f"runs, one per tag: {runs}"


def import_job_run(*, job_id: int) -> str:
    """Run a queued job (a worker's task, or the request without a broker); its final state.

    The job is claimed (queued -> running) first, so a task delivered twice runs it once.
    Its import and its "done" commit in one transaction; any error leaves nothing imported
    and the error on the job. The stored upload is deleted when the job ends.
    """
    now = timezone.now()
    claimed = ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED).update(
        state=ImportJob.RUNNING, started=now, heartbeat=now
    )
    job = ImportJob.objects.select_related("collection", "assessor", "created_by").filter(id=job_id)
    found = job.first()
    if found is None:
        return "missing"
    if not claimed:
        return found.state
    try:
        return _run_claimed(found)
    finally:
        _upload_delete(found)


def _run_claimed(job: ImportJob) -> str:
    try:
        raw = open(job.upload_path, "rb")  # noqa: SIM115  (closed in the finally below)
    except OSError as error:
        _finish_failed(
            job, f"{job.file_name}: the upload is gone ({error.strerror}); nothing was imported"
        )
        return ImportJob.FAILED
    reader = CountingReader(cast(BinaryIO, raw))
    writer = _ProgressWriter(job, reader)
    writer.start()
    try:
        with transaction.atomic():
            summary = _import(job, cast(BinaryIO, reader))
            writer.stop()
            done = ImportJob.objects.filter(id=job.id, state=ImportJob.RUNNING).update(
                state=ImportJob.DONE,
                upload_path="",  # deleted as the job ends
                summary=summary,
                bytes_done=job.size,
                lines_done=reader.lines_done,
                finished=timezone.now(),
                heartbeat=timezone.now(),
            )
            if not done:
                raise _Abandoned
    except _Abandoned:
        return ImportJob.FAILED
    except TrecFormatError as error:
        return _finish_failed(job, f"{error} (nothing was imported)", reader)
    except ValidationError as error:
        text = f"{job.file_name}: {_validation_text(error)} (nothing was imported)"
        return _finish_failed(job, text, reader)
    except IntegrityError as error:
        text = f"{job.file_name}: the database refused the import ({error}); nothing was imported"
        return _finish_failed(job, text, reader)
    except Exception as error:  # never leave a job running: say what happened
        logger.exception("import job %s failed", job.id)
        text = f"{job.file_name}: the import failed ({type(error).__name__}); nothing was imported"
        return _finish_failed(job, text, reader)
    finally:
        writer.stop()
        raw.close()
    return ImportJob.DONE


def _finish_failed(
    job: ImportJob,
    error: str,
    reader: CountingReader | None = None,
    *,
    only_if: str = ImportJob.RUNNING,
) -> str:
    fields: dict[str, object] = {
        "state": ImportJob.FAILED,
        "upload_path": "",
        "error": error,
        "finished": timezone.now(),
    }
    if reader is not None:
        fields.update(bytes_done=reader.bytes_done, lines_done=reader.lines_done)
    ImportJob.objects.filter(id=job.id, state=only_if).update(**fields)
    return ImportJob.FAILED


# --- jobs whose process stopped ----------------------------------------------------------


def import_jobs_sweep(*, collection: Collection | None = None) -> int:
    """Fail the running jobs not heard of for NDCG_IMPORT_STALE_SECONDS (the worker stopped)
    and, without a broker, the queued jobs that old (the server stopped); their uploads are
    deleted. Nothing of theirs was imported: a job's import commits only together with its
    "done", and an import that outlives its job's failure rolls back (`import_job_run`).

    With a broker, a job still queued that long is queued again (at most once per that
    time): a broker that lost its task (a Redis restarted without persistence) would leave
    it waiting for ever, and a second delivery of a job already claimed does nothing."""
    now = timezone.now()
    limit = now - timedelta(seconds=settings.NDCG_IMPORT_STALE_SECONDS)
    jobs = ImportJob.objects.filter(state=ImportJob.RUNNING, heartbeat__lt=limit)
    stalled = ImportJob.objects.filter(state=ImportJob.QUEUED, created__lt=limit)
    if collection is not None:
        jobs, stalled = jobs.filter(collection=collection), stalled.filter(collection=collection)
    if settings.CELERY_BROKER_URL:
        _republish(list(stalled.values_list("id", flat=True)))
    else:
        jobs = jobs | stalled
    swept = 0
    for job in jobs:
        if job.state == ImportJob.RUNNING:
            progress = import_job_progress_read(job=job)
            if progress is not None and progress.heartbeat >= limit:
                continue
            failed = ImportJob.objects.filter(
                id=job.id, state=ImportJob.RUNNING, heartbeat__lt=limit
            ).update(state=ImportJob.FAILED, error=WORKER_STOPPED, finished=now, upload_path="")
        else:
            failed = ImportJob.objects.filter(id=job.id, state=ImportJob.QUEUED).update(
                state=ImportJob.FAILED, error=NOT_STARTED, finished=now, upload_path=""
            )
        if failed:
            _upload_delete(job)
            swept += failed
    return swept


def _republish(job_ids: list[int]) -> None:
    """Queue these jobs' tasks again, each at most once per NDCG_IMPORT_STALE_SECONDS (the
    sweep also runs on every read of the import page)."""
    timeout = settings.NDCG_IMPORT_STALE_SECONDS
    for job_id in job_ids:
        if caches["coordination"].add(f"import-job-republished:{job_id}", 1, timeout=timeout):
            logger.warning("import job %s still queued: queued again", job_id)
            _publish(job_id)


def import_jobs_sweep_quietly(*, collection: Collection) -> None:
    """The sweep as a page read does it: best effort (SQLite may be busy with an import)."""
    try:
        import_jobs_sweep(collection=collection)
    except DatabaseError:
        logger.warning("could not sweep the import jobs of %s", collection.slug)
