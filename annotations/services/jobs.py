"""Import jobs: store an upload, run its import with visible progress and a heartbeat.

Failing the jobs whose process stopped, Retry and Dismiss are in `job_recovery` (their
names are importable from here too)."""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.core.files.move import file_move_safe
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotations import events, publishing
from annotations.formats.trec import TrecFormatError
from annotations.models import Collection, ImportJob
from annotations.models.webhooks import IMPORT_FAILED, IMPORT_FINISHED
from annotations.selectors.jobs import progress_in_rows, progress_key
from annotations.services.imports import documents_import, topics_import
from annotations.services.judgements import import_assessor, judgements_import
from annotations.services.runs import run_files_import

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

RETRY = "Press Retry to import it again."


def upload_delete(path: str) -> None:
    """Delete a stored upload its job no longer names."""
    if path:
        Path(path).unlink(missing_ok=True)


NOT_QUEUED = (
    f"The job could not be queued (the broker is unreachable); nothing was imported. {RETRY}"
)
PROGRESS_SECONDS = 0.5  # how often a running job writes its progress while it moves


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


def import_job_progress_write(
    *, job: ImportJob, bytes_done: int, lines_done: int, attempt: datetime
) -> None:
    """Record a running job's progress and heartbeat outside the import's transaction
    (call it from a thread of its own: its connection is not the import's); `attempt` is
    when this run claimed the job, so a run outlived by its job's failure writes nothing."""
    now = timezone.now()
    if progress_in_rows():
        table = connection.ops.quote_name(ImportJob._meta.db_table)
        with connection.cursor() as cursor:
            # SKIP LOCKED: never wait for the row (the import locks it as it finishes).
            cursor.execute(
                f"UPDATE {table} SET bytes_done = %s, lines_done = %s, heartbeat = %s "
                f"WHERE id = (SELECT id FROM {table} WHERE id = %s AND state = %s "
                "AND started = %s FOR UPDATE SKIP LOCKED)",
                [bytes_done, lines_done, now, job.id, ImportJob.RUNNING, attempt],
            )
        return
    timeout = max(3600, settings.NDCG_IMPORT_STALE_SECONDS * 4)
    caches["coordination"].set(
        progress_key(job), (bytes_done, lines_done, now.timestamp()), timeout=timeout
    )


class _ProgressWriter(threading.Thread):
    """While the import runs, writes the job's progress and heartbeat every PROGRESS_SECONDS
    while the progress moves, and the heartbeat at least every NDCG_IMPORT_HEARTBEAT_SECONDS
    whatever the import does (a long step that reads nothing: storing, scoring)."""

    def __init__(self, job: ImportJob, reader: CountingReader, attempt: datetime) -> None:
        super().__init__(name=f"import-job-{job.id}-progress", daemon=True)
        self.job, self.reader, self.attempt = job, reader, attempt
        self.finished = threading.Event()

    def run(self) -> None:
        heartbeat = float(settings.NDCG_IMPORT_HEARTBEAT_SECONDS)
        written, last = (0, 0), time.monotonic()
        try:
            while not self.finished.wait(min(PROGRESS_SECONDS, heartbeat)):
                done = (self.reader.bytes_done, self.reader.lines_done)
                if done == written and time.monotonic() - last < heartbeat:
                    continue
                try:
                    import_job_progress_write(
                        job=self.job, bytes_done=done[0], lines_done=done[1], attempt=self.attempt
                    )
                    written, last = done, time.monotonic()
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
            transaction.on_commit(lambda job_id=job.id: import_job_publish(job_id))  # type: ignore[misc]
        return
    for job in jobs:
        import_job_run(job_id=job.id)


def import_job_publish(job_id: int) -> None:
    try:
        publishing.IMPORT_JOB_RUN.apply_async((job_id,), retry=False)
    except Exception as error:
        logger.warning("could not queue import job %s: %r", job_id, error)
        # The upload is kept: Retry queues the job again.
        ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED).update(
            state=ImportJob.FAILED, error=NOT_QUEUED, finished=timezone.now()
        )


class _Abandoned(Exception):
    """The job was failed meanwhile (its heartbeat went stale, and maybe it was queued again
    since): this run's import must not commit."""


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
        collection=collection,
        sources=[source],
        names=[name],
        split_tags=job.split_tags,
        owner=job.created_by,
        replace=job.replace,
    )
    if not job.split_tags:
        return f"run: {imported[0].run.name}, {imported[0].results} results"
    runs = ", ".join(f"{one.run.name} ({one.results} results)" for one in imported)
    return f"runs, one per tag: {runs}"


def import_job_run(*, job_id: int) -> str:
    """Run a queued job (a worker's task, or the request without a broker); its final state.

    The job is claimed (queued -> running) first, so a task delivered twice runs it once;
    the claim's time names this run (`started`), so a run outlived by its job's failure (and
    perhaps a Retry) changes nothing. Its import and its "done" commit in one transaction;
    any error leaves nothing imported and the error on the job. The stored upload is deleted
    when the job is done or its file was at fault, and kept for Retry otherwise.
    """
    now = timezone.now()
    claimed = ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED).update(
        state=ImportJob.RUNNING, started=now, heartbeat=now
    )
    job = ImportJob.objects.select_related("collection", "assessor", "created_by").filter(id=job_id)
    found = job.first()
    if found is None:
        return "missing"
    if not claimed or found.started != now:
        return found.state
    return _run_claimed(found, now)


def _run_claimed(job: ImportJob, attempt: datetime) -> str:
    try:
        raw = open(job.upload_path, "rb")  # noqa: SIM115  (closed in the finally below)
    except OSError as error:
        text = f"{job.file_name}: the upload is gone ({error.strerror}); nothing was imported"
        _finish_failed(job, text, attempt=attempt, keep_upload=False)
        return ImportJob.FAILED
    reader = CountingReader(cast(BinaryIO, raw))
    writer = _ProgressWriter(job, reader, attempt)
    writer.start()
    try:
        with transaction.atomic():
            summary = _import(job, cast(BinaryIO, reader))
            writer.stop()
            done = ImportJob.objects.filter(
                id=job.id, state=ImportJob.RUNNING, started=attempt
            ).update(
                state=ImportJob.DONE,
                upload_path="",  # deleted once this commits
                summary=summary,
                bytes_done=job.size,
                lines_done=reader.lines_done,
                finished=timezone.now(),
                heartbeat=timezone.now(),
            )
            if not done:
                raise _Abandoned
            _tell(job, IMPORT_FINISHED, summary=summary)
            path = job.upload_path
            transaction.on_commit(lambda: upload_delete(path))
    except _Abandoned:
        return ImportJob.FAILED
    # The file is at fault: a Retry would fail the same way, the upload goes.
    except TrecFormatError as error:
        text = f"{error} (nothing was imported)"
        return _finish_failed(job, text, reader, attempt=attempt, keep_upload=False)
    except ValidationError as error:
        text = f"{job.file_name}: {_validation_text(error)} (nothing was imported)"
        return _finish_failed(job, text, reader, attempt=attempt, keep_upload=False)
    # Otherwise the upload is kept for Retry.
    except IntegrityError as error:
        text = f"{job.file_name}: the database refused the import ({error}); nothing was imported"
        return _finish_failed(job, text, reader, attempt=attempt)
    except Exception as error:  # never leave a job running: say what happened
        logger.exception("import job %s failed", job.id)
        text = f"{job.file_name}: the import failed ({type(error).__name__}); nothing was imported"
        return _finish_failed(job, text, reader, attempt=attempt)
    finally:
        writer.stop()
        raw.close()
    return ImportJob.DONE


def _finish_failed(
    job: ImportJob,
    error: str,
    reader: CountingReader | None = None,
    *,
    attempt: datetime,
    keep_upload: bool = True,
) -> str:
    """Fail the job if this run still holds it; its upload deleted unless kept for Retry."""
    fields: dict[str, object] = {
        "state": ImportJob.FAILED,
        "error": error,
        "finished": timezone.now(),
    }
    if not keep_upload:
        fields["upload_path"] = ""
    if reader is not None:
        fields.update(bytes_done=reader.bytes_done, lines_done=reader.lines_done)
    held = ImportJob.objects.filter(id=job.id, state=ImportJob.RUNNING, started=attempt)
    with transaction.atomic():
        failed = held.update(**fields)
        if failed:
            _tell(job, IMPORT_FAILED, error=error)
    if failed and not keep_upload:
        upload_delete(job.upload_path)
    return ImportJob.FAILED


def _tell(job: ImportJob, event_type: str, **details: str) -> None:
    """The webhook event of a job's end (written with its state, sent after commit)."""
    events.emit(
        collection_id=job.collection_id,
        event_type=event_type,
        data=lambda: {
            "collection": job.collection.slug,
            "job": job.id,
            "kind": job.kind,
            "file": job.file_name,
            **details,
        },
    )
