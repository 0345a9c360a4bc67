"""Import jobs as the import page and its progress endpoint show them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.core.cache import caches
from django.db import connection

from annotations.models import Collection, ImportJob

logger = logging.getLogger(__name__)

JOBS_SHOWN = 200


@dataclass(frozen=True)
class Progress:
    bytes_done: int
    lines_done: int
    heartbeat: datetime


def progress_key(job: ImportJob) -> str:
    return f"import-job:{job.token}"


def progress_in_rows() -> bool:
    """PostgreSQL takes progress on the job's row from another connection while the import's
    transaction is open; SQLite allows one writer at a time, so there progress travels
    through the coordination cache (the broker's Redis when there is one)."""
    return connection.vendor == "postgresql"


def import_job_progress_read(*, job: ImportJob) -> Progress | None:
    """What a running job last wrote to the coordination cache (None: nothing there)."""
    if progress_in_rows():
        return None
    try:
        found = caches["coordination"].get(progress_key(job))
    except Exception:  # an unreachable cache: the row's values stand
        logger.warning("could not read the progress of import job %s", job.id)
        return None
    if found is None:
        return None
    bytes_done, lines_done, stamp = found
    return Progress(bytes_done, lines_done, datetime.fromtimestamp(stamp, tz=UTC))


def import_jobs_of(*, collection: Collection, limit: int = JOBS_SHOWN) -> list[ImportJob]:
    """The collection's latest jobs, newest first, running ones with their latest progress."""
    jobs = list(
        ImportJob.objects.filter(collection=collection)
        .select_related("created_by", "assessor")
        .order_by("-created", "-id")[:limit]
    )
    for job in jobs:
        if job.state == ImportJob.RUNNING:
            progress = import_job_progress_read(job=job)
            if progress is not None and progress.bytes_done > job.bytes_done:
                job.bytes_done, job.lines_done = progress.bytes_done, progress.lines_done
    return jobs


def import_job_state(job: ImportJob) -> dict[str, Any]:
    """One job for the page's self-refresh (JSON)."""
    return {
        "id": job.id,
        "kind": job.kind,
        "file_name": job.file_name,
        "state": job.state,
        "size": job.size,
        "bytes_done": job.size if job.state == ImportJob.DONE else job.bytes_done,
        "lines_done": job.lines_done,
        "percent": job.percent,
        "summary": job.summary,
        "error": job.error,
        "retryable": job.retryable,
        "finished": job.finished.isoformat() if job.finished else None,
    }
