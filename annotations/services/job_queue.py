"""Starting import jobs: each queued for a worker (the imports queue) once it commits, so an
upload never waits for its import. Each import commits with its "done" or not at all, so a
job cut off leaves nothing half-imported (`job_recovery` fails it, its upload kept for
Retry)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from annotations import publishing
from annotations.models import ImportJob

logger = logging.getLogger(__name__)

RETRY = "Press Retry to import it again."
NOT_QUEUED = (
    f"The job could not be queued (the broker is unreachable); nothing was imported. {RETRY}"
)


def import_jobs_start(*, jobs: list[ImportJob]) -> None:
    """Queue these committed (or about to be committed) jobs for a worker, after commit."""
    for job in jobs:
        transaction.on_commit(lambda job_id=job.id: import_job_publish(job_id))  # type: ignore[misc]


def import_job_publish(job_id: int) -> None:
    fetch = ImportJob.objects.filter(id=job_id, kind=ImportJob.FETCH).exists()
    task = publishing.SYSTEM_FETCH if fetch else publishing.IMPORT_JOB_RUN
    try:
        task.apply_async((job_id,), retry=False)
    except Exception as error:
        logger.warning("could not queue import job %s: %r", job_id, error)
        # The upload is kept: Retry queues the job again.
        ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED).update(
            state=ImportJob.FAILED, error=NOT_QUEUED, finished=timezone.now()
        )
