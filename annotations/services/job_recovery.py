"""Import jobs whose process stopped: the sweep that fails them, Retry and Dismiss.

A job failed other than by its file keeps its stored upload, so the organiser can queue the
same job again (Retry) or let it go (Dismiss, which deletes the upload).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotations.models import Collection, ImportJob
from annotations.selectors.jobs import import_job_progress_read, progress_in_rows, progress_key
from annotations.services.job_queue import RETRY, import_job_publish, import_jobs_start
from annotations.services.upload_store import upload_delete, upload_exists

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

WORKER_STOPPED = f"The worker stopped while importing this file; nothing was imported. {RETRY}"
# A running job silent this long is failed: its worker stopped. Several heartbeats
# (job_progress.HEARTBEAT_SECONDS) long, so a busy worker is never taken for a stopped one;
# with the beat's sweep every third of it (settings: CELERY_BEAT_SCHEDULE), a stopped
# worker's job fails within a minute.
DEAD_SECONDS = 45
# A job still queued this long is queued again (its task was lost with a broker that did
# not persist it); long enough that a busy imports queue's jobs are not queued twice.
STALE_SECONDS = 300
UPLOAD_GONE = (
    "The stored upload is gone, so this file cannot be imported again; nothing was imported. "
    "Upload the file again."
)


def _dead_seconds() -> int:
    """How long a running job may be silent: DEAD_SECONDS where every process sees its
    heartbeat (on its row, or in a shared coordination cache), else no less than
    STALE_SECONDS (a process that cannot see a live job's heartbeat would otherwise fail
    it)."""
    if progress_in_rows() or settings.NDCG_COORDINATION_SHARED:
        return DEAD_SECONDS
    return max(DEAD_SECONDS, STALE_SECONDS)


def import_jobs_sweep(*, collection: Collection | None = None) -> int:
    """Fail the running jobs whose heartbeat is older than DEAD_SECONDS (the worker
    stopped), their uploads kept for Retry, and queue again the jobs still queued after
    STALE_SECONDS (at most once per that time): a broker that lost its
    task (a Redis restarted without persistence) would leave one waiting for ever, and a
    second delivery of a job already claimed does nothing. Nothing of a failed job was
    imported: a job's import commits only together with its "done", and an import that
    outlives its job's failure rolls back (`import_job_run`). The count failed."""
    now = timezone.now()
    dead = now - timedelta(seconds=_dead_seconds())
    stale = now - timedelta(seconds=STALE_SECONDS)
    running = ImportJob.objects.filter(state=ImportJob.RUNNING, heartbeat__lt=dead)
    waiting = ImportJob.objects.alias(since=Coalesce("retried", "created")).filter(
        state=ImportJob.QUEUED, since__lt=stale
    )
    if collection is not None:
        running = running.filter(collection=collection)
        waiting = waiting.filter(collection=collection)
    swept = 0
    for job in running:
        progress = import_job_progress_read(job=job)
        if progress is not None and progress.heartbeat >= dead:
            continue
        swept += _fail_unless_held(job.id, dead=dead, now=now)
    _republish(list(waiting.values_list("id", flat=True)))
    return swept


def _fail_unless_held(job_id: int, *, dead: datetime, now: datetime) -> int:
    """Fail a silent running job, unless a transaction holds its row: its import's own, which
    commits the job's "done" with what it imported (a large import can spend minutes in
    COMMIT without a heartbeat). Such a job is alive; waiting for its lock would hold the
    sweep (and the worker or page running it) for as long. PostgreSQL skips the locked row;
    SQLite has no row locks and one writer at a time."""
    with transaction.atomic():
        claimed = (
            ImportJob.objects.select_for_update(skip_locked=True)
            .filter(id=job_id, state=ImportJob.RUNNING, heartbeat__lt=dead)
            .values_list("id", flat=True)
            .first()
        )
        if claimed is None:
            return 0
        return ImportJob.objects.filter(id=claimed).update(
            state=ImportJob.FAILED, error=WORKER_STOPPED, finished=now
        )


def _republish(job_ids: list[int]) -> None:
    """Queue these jobs' tasks again, each at most once per STALE_SECONDS."""

    for job_id in job_ids:
        key = f"import-job-republished:{job_id}"
        if caches["coordination"].add(key, 1, timeout=STALE_SECONDS):
            logger.warning("import job %s still queued: queued again", job_id)
            import_job_publish(job_id)


def import_job_retry(*, job: ImportJob, by: User | None) -> ImportJob:
    """Queue a failed job again with its stored upload (a dataset job: its dataset) and its
    options (kind, assessor, replace, split_tags, parts), for a worker. The job as it is afterwards.
    ValidationError when it is not failed, or its upload is gone (the job then says so)."""

    if job.state != ImportJob.FAILED:
        raise ValidationError(f"{job.file_name}: only a failed import can be retried.")
    failed = ImportJob.objects.filter(id=job.id, state=ImportJob.FAILED)
    if job.kind in (ImportJob.FETCH, ImportJob.DATASET):  # no upload: asked or read again
        again = failed
    else:
        if not upload_exists(job.upload_path):
            failed.update(upload_path="", error=UPLOAD_GONE)
            raise ValidationError(f"{job.file_name}: {UPLOAD_GONE}")
        again = failed.exclude(upload_path="")
    queued = again.update(
        state=ImportJob.QUEUED,
        error="",
        summary="",
        bytes_done=0,
        lines_done=0,
        lines_total=0,
        stage="",
        queries_done=0,
        queries_total=0,
        started=None,
        finished=None,
        heartbeat=None,
        retried=timezone.now(),
        retries=F("retries") + 1,
        cancel_requested=False,
    )
    if not queued:
        raise ValidationError(f"{job.file_name}: it was retried or dismissed meanwhile.")
    _progress_forget(job)
    logger.info("import job %s queued again by %s", job.id, by.username if by else "nobody")
    job.refresh_from_db()
    import_jobs_start(jobs=[job])
    job.refresh_from_db()
    return job


def import_job_dismiss(*, job: ImportJob) -> None:
    """Let a failed job go: its stored upload is deleted, the job stays listed, dismissed."""
    path = job.upload_path
    dismissed = ImportJob.objects.filter(id=job.id, state=ImportJob.FAILED).update(
        state=ImportJob.DISMISSED, upload_path=""
    )
    if not dismissed:
        raise ValidationError(f"{job.file_name}: only a failed import can be dismissed.")
    upload_delete(path)


def _progress_forget(job: ImportJob) -> None:
    """Drop what an earlier run of the job left in the coordination cache (best effort)."""
    if progress_in_rows():
        return
    try:
        caches["coordination"].delete(progress_key(job))
    except Exception:
        logger.warning("could not clear the progress of import job %s", job.id)
