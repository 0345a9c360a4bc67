"""Import jobs as the import page and its progress endpoint show them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.core.cache import caches
from django.db import connection
from django.db.models import Count

from annotations.models import Collection, ImportJob

logger = logging.getLogger(__name__)

JOBS_SHOWN = 200
JOBS_PER_PAGE = 20


@dataclass(frozen=True)
class Progress:
    """A job's progress as its process last wrote it (its row, or the coordination cache)."""

    bytes_done: int
    lines_done: int
    heartbeat: datetime
    stage: str = ""
    lines_total: int = 0
    queries_done: int = 0
    queries_total: int = 0

    def counts(self) -> tuple[object, ...]:
        """What moves (the heartbeat aside)."""
        return (
            self.bytes_done, self.lines_done, self.stage, self.queries_done, self.queries_total
        )  # fmt: skip

    def cached(self) -> tuple[object, ...]:
        return (*self.counts(), self.lines_total, self.heartbeat.timestamp())


def _from_cache(found: tuple[Any, ...]) -> Progress:
    bytes_done, lines_done, stage, queries_done, queries_total, lines_total, stamp = found
    return Progress(
        bytes_done=bytes_done, lines_done=lines_done, stage=stage, queries_done=queries_done,
        queries_total=queries_total, lines_total=lines_total,
        heartbeat=datetime.fromtimestamp(stamp, tz=UTC),
    )  # fmt: skip


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
    if not isinstance(found, tuple) or len(found) != 7:  # nothing, or an older process's
        return None
    return _from_cache(found)


def _with_progress(job: ImportJob) -> ImportJob:
    """A job with what its process last wrote to the coordination cache, when that is newer
    than its row (SQLite: the row cannot be written while the import's transaction is open)."""
    if not (job.state == ImportJob.RUNNING or job.stage == ImportJob.SCORING):
        return job
    found = import_job_progress_read(job=job)
    if found is None or found.heartbeat < (job.heartbeat or found.heartbeat):
        return job
    if job.state == ImportJob.RUNNING or found.stage == ImportJob.SCORING:
        job.bytes_done, job.lines_done, job.stage = found.bytes_done, found.lines_done, found.stage
        job.queries_done, job.queries_total = found.queries_done, found.queries_total
    return job


def import_jobs_page(
    *, collection: Collection, page: int = 1, per_page: int = JOBS_PER_PAGE, by: Any = None
) -> JobsPage:
    """One page of the collection's jobs, newest first (of `by`'s uploads only when given),
    with how many there are in each state."""
    jobs = ImportJob.objects.filter(collection=collection)
    if by is not None:
        jobs = jobs.filter(created_by=by)
    counts = dict(jobs.order_by().values_list("state").annotate(n=Count("id")))
    total = sum(counts.values())
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    start = (page - 1) * per_page
    rows = list(
        jobs.select_related("created_by", "assessor").order_by("-created", "-id")[
            start : start + per_page
        ]
    )
    return JobsPage([_with_progress(job) for job in rows], page, pages, total, counts)


@dataclass(frozen=True)
class JobsPage:
    jobs: list[ImportJob]
    number: int
    pages: int
    total: int
    counts: dict[str, int]

    @property
    def active(self) -> int:
        return sum(self.counts.get(state, 0) for state in ImportJob.ACTIVE)


def import_jobs_of(*, collection: Collection, limit: int = JOBS_SHOWN) -> list[ImportJob]:
    """The collection's latest jobs, newest first, running ones with their latest progress."""
    jobs = (
        ImportJob.objects.filter(collection=collection)
        .select_related("created_by", "assessor")
        .order_by("-created", "-id")[:limit]
    )
    return [_with_progress(job) for job in jobs]


def import_job_with_progress(job: ImportJob) -> ImportJob:
    return _with_progress(job)


def batch_summary(jobs: list[ImportJob]) -> str:
    """One line for the jobs of one upload: "12 of 30 done, 1 failed, 17 waiting"."""
    done = sum(job.state == ImportJob.DONE for job in jobs)
    failed = sum(job.state in (ImportJob.FAILED, ImportJob.DISMISSED) for job in jobs)
    waiting = len(jobs) - done - failed
    parts = [f"{done} of {len(jobs)} done"]
    if failed:
        parts.append(f"{failed} failed")
    if waiting:
        parts.append(f"{waiting} to go")
    return ", ".join(parts)


def import_job_state(job: ImportJob) -> dict[str, Any]:
    """One job for the page's self-refresh (JSON) and the API: its progress in the units of
    its stage (`value` of `max`, null while it stores) and what that says (`progress`)."""
    value, maximum, text = job.progress
    return {
        "id": job.id,
        "kind": job.kind,
        "file_name": job.file_name,
        "parts": list(job.parts),
        "state": job.state,
        "stage": job.stage,
        "progress": text,
        "value": value,
        "max": maximum,
        "size": job.size,
        "bytes_done": job.size if job.state == ImportJob.DONE else job.bytes_done,
        "lines_done": job.lines_done,
        "lines_total": job.lines_total,
        "queries_done": job.queries_done,
        "queries_total": job.queries_total,
        "summary": job.summary,
        "error": job.error,
        "retryable": job.retryable,
        "created": job.created.isoformat() if job.created else None,
        "finished": job.finished.isoformat() if job.finished else None,
    }
