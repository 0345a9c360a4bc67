"""Import jobs: store an upload (or name an ir_datasets dataset), run its import with its
progress in the units of the work (lines parsed, rows stored, records read) and a heartbeat.

Starting jobs (a worker's queue) is in `job_queue`; failing the jobs whose worker stopped,
Retry and Dismiss in `job_recovery`."""

from __future__ import annotations

import codecs
import logging
from datetime import datetime
from typing import TYPE_CHECKING, BinaryIO, Protocol, cast

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations import events
from annotations.access import ORGANISER, OWNER, roles_of
from annotations.formats.trec import TrecFormatError
from annotations.models import Collection, ImportJob
from annotations.models.webhooks import IMPORT_FAILED
from annotations.services.imports import documents_import, import_told, topics_import
from annotations.services.job_progress import (
    CountingReader,
    DatasetProgress,
    JobProgress,
    ProgressWriter,
    lines_count,
)
from annotations.services.judgements import (
    import_assessor,
    judgements_import,
    qrels_assessor_check,
)
from annotations.services.run_storage import RunCheck
from annotations.services.runs import run_files_import
from annotations.services.standard_collections import ir_dataset_import, ir_dataset_records
from annotations.services.upload_store import upload_delete, upload_open, upload_save

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

# --- creating and running jobs ------------------------------------------------------------

# How much of a file is looked at before it is queued: enough to tell text from anything else.
_SNIFF_BYTES = 64 * 1024


def upload_text_problem(upload: UploadedFile) -> str | None:
    """Why the file cannot be a text file of any kind the page imports, from its first
    bytes (None: it may be); the parsers check every line when the job runs."""
    if not upload.size:
        return "file is empty"
    upload.seek(0)
    head = upload.read(_SNIFF_BYTES)
    upload.seek(0)
    nul = head.find(b"\x00")
    if nul >= 0:
        return f"not a text file (a NUL byte at offset {nul})"
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(head, final=len(head) < _SNIFF_BYTES)
    except UnicodeDecodeError as error:
        byte = head[error.start]
        return f"not a text file: not valid UTF-8 (byte 0x{byte:02x} at offset {error.start})"
    return None


def import_job_create(
    *,
    collection: Collection,
    kind: str,
    upload: UploadedFile,
    created_by: User | None,
    assessor: User | None = None,
    replace: bool = False,
    split_tags: bool = False,
    run_name: str = "",
    description: str = "",
) -> ImportJob:
    """Store an uploaded file in the uploads storage (`upload_store`) and record its job,
    queued (start it with `job_queue.import_jobs_start` once it is committed). A qrels job's
    `assessor` is the uploader, the import account or an organiser or assessor of the
    collection (`qrels_assessor_check`)."""
    if kind == ImportJob.QRELS and assessor is not None:
        qrels_assessor_check(collection=collection, assessor=assessor, uploader=created_by)
    job = ImportJob(
        collection=collection,
        kind=kind,
        file_name=(upload.name or "upload")[:255],
        size=upload.size or 0,
        created_by=created_by,
        assessor=assessor if kind == ImportJob.QRELS else None,
        replace=replace and kind == ImportJob.RUN,
        split_tags=split_tags and kind == ImportJob.RUN,
        run_name=run_name if kind == ImportJob.RUN else "",
        description=description if kind == ImportJob.RUN else "",
    )
    job.full_clean(exclude=["upload_path"])
    job.upload_path = upload_save(upload, f"{job.token}.upload")
    try:
        job.save()
    except BaseException:
        upload_delete(job.upload_path)
        raise
    return job


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
        run_name=job.run_name or None,
        description=job.description,
        may_replace=_may_replace(job),
    )
    if not job.split_tags:
        return f"run: {imported[0].run.name}, {imported[0].results} results"
    runs = ", ".join(f"{one.run.name} ({one.results} results)" for one in imported)
    return f"runs, one per tag: {runs}"


def _may_replace(job: ImportJob) -> RunCheck | None:
    """Whether the job's uploader may replace a run, asked on the locked run as the import
    replaces it: organisers any run, system owners their own (as the API's PUT)."""
    uploader = job.created_by
    if uploader is None:
        return None
    roles = roles_of(user=uploader, collection=job.collection)
    if ORGANISER in roles:
        return None
    return lambda run: OWNER in roles and run.owner_id == uploader.pk


def import_job_run(*, job_id: int) -> str:
    """Run a queued job (a worker's task); its final state.

    The job is claimed (queued -> running) first, so a task delivered twice runs it once;
    the claim's time names this run (`started`), so a run outlived by its job's failure (and
    perhaps a Retry) changes nothing. Its import and its "done" commit in one transaction;
    any error leaves nothing imported and the error on the job. The stored upload is deleted
    when the job is done or its file was at fault, and kept for Retry otherwise.
    """
    now = timezone.now()
    # A fetch from a search system is a job of its own task (`system_fetch`).
    claimed = (
        ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED)
        .exclude(kind=ImportJob.FETCH)
        .update(state=ImportJob.RUNNING, started=now, heartbeat=now)
    )
    job = ImportJob.objects.select_related("collection", "assessor", "created_by").filter(id=job_id)
    found = job.first()
    if found is None:
        return "missing"
    if not claimed or found.started != now:
        return found.state
    if found.kind == ImportJob.DATASET:
        return _run_dataset(found, now)
    return _run_claimed(found, now)


def _dataset_error(job: ImportJob, error: ValidationError) -> str:
    """A dataset job's failure in the command's words: a dataset out of reach is told by
    its own message (naming the dataset, the files missing and where to place them)."""
    if hasattr(error, "error_dict") and set(error.error_dict) == {"dataset"}:
        return f"{' '.join(error.messages)} (nothing was imported)"
    return f"{job.file_name}: {_validation_text(error)} (nothing was imported)"


def _run_dataset(job: ImportJob, attempt: datetime) -> str:
    """A dataset job: its parts read through ir_datasets (downloading what is not under
    IR_DATASETS_HOME) and imported as `import_ir_datasets` imports them, with the job's
    "done" in the same transaction."""
    held = ImportJob.objects.filter(id=job.id, state=ImportJob.RUNNING, started=attempt)
    parts = list(job.parts) or None
    done = DatasetProgress(None)
    writer: ProgressWriter | None = None
    try:
        if parts is not None:
            done = DatasetProgress(ir_dataset_records(dataset_id=job.file_name, parts=parts))
        held.update(lines_total=done.lines_total, stage=ImportJob.PARSING)
        writer = ProgressWriter(job, done, attempt)
        writer.start()
        with transaction.atomic():
            imported = ir_dataset_import(
                collection=job.collection,
                dataset_id=job.file_name,
                parts=parts,
                assessor=job.assessor,
                run_name=job.run_name or None,
                progress=done.heard,
                changed_by=job.created_by,
                job_id=job.id,
            )
            finished = timezone.now()
            marked = held.update(
                state=ImportJob.DONE,
                summary="; ".join(imported.lines()),
                lines_done=done.lines_done,
                stage="",
                finished=finished,
                heartbeat=finished,
            )
            if not marked:
                raise _Abandoned
    except _Abandoned:
        return ImportJob.FAILED
    except TrecFormatError as error:  # a record the platform's parsers refuse
        return _finish_failed(job, f"{error} (nothing was imported)", done, attempt=attempt)
    except ValidationError as error:  # out of reach, or refused by an import's checks
        return _finish_failed(job, _dataset_error(job, error), done, attempt=attempt)
    except IntegrityError as error:
        text = f"{job.file_name}: the database refused the import ({error}); nothing was imported"
        return _finish_failed(job, text, done, attempt=attempt)
    except Exception as error:  # never leave a job running: say what happened
        logger.exception("import job %s failed", job.id)
        text = f"{job.file_name}: the import failed ({type(error).__name__}); nothing was imported"
        return _finish_failed(job, text, done, attempt=attempt)
    finally:
        if writer is not None:
            writer.stop()
    return ImportJob.DONE


def _run_claimed(job: ImportJob, attempt: datetime) -> str:
    try:
        with upload_open(job.upload_path) as counted:
            lines_total = lines_count(counted)
        raw = upload_open(job.upload_path)
    except OSError as error:
        reason = error.strerror or str(error)
        text = f"{job.file_name}: the upload is gone ({reason}); nothing was imported"
        _finish_failed(job, text, attempt=attempt, keep_upload=False)
        return ImportJob.FAILED
    ImportJob.objects.filter(id=job.id, state=ImportJob.RUNNING, started=attempt).update(
        lines_total=lines_total, stage=ImportJob.PARSING
    )
    reader = CountingReader(cast(BinaryIO, raw))
    done = JobProgress(job, reader, lines_total)
    writer = ProgressWriter(job, done, attempt)
    writer.start()
    try:
        with transaction.atomic():
            summary = _import(job, cast(BinaryIO, reader))
            finished = timezone.now()
            marked = ImportJob.objects.filter(
                id=job.id, state=ImportJob.RUNNING, started=attempt
            ).update(
                state=ImportJob.DONE,
                upload_path="",  # deleted once this commits
                summary=summary,
                bytes_done=job.size,
                lines_done=lines_total,
                stage="",
                finished=finished,
                heartbeat=finished,
            )
            if not marked:
                raise _Abandoned
            import_told(  # its scores are queued at commit
                collection=job.collection,
                kind=job.kind,
                file_name=job.file_name,
                summary=summary,
                job_id=job.id,
            )
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
    except PermissionDenied as error:  # a run its uploader may not replace
        text = f"{job.file_name}: {error} (nothing was imported)"
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


class _Counted(Protocol):
    """What a job read before it failed."""

    @property
    def bytes_done(self) -> int: ...

    @property
    def lines_done(self) -> int: ...


def _finish_failed(
    job: ImportJob,
    error: str,
    reader: _Counted | None = None,
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
        fields.update(bytes_done=reader.bytes_done, lines_done=reader.lines_done, stage="")
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
