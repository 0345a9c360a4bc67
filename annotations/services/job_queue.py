"""Starting import jobs: on a worker's queue with a broker; without one, on the web
process's own import threads (NDCG_IMPORT_THREADS, a small executor started on first use),
so an upload never waits for its import; with NDCG_IMPORT_THREADS=0, in the request.

A job waiting for a thread is queued, and its heartbeat says a live process holds it: the
threads' keeper touches the heartbeats of the jobs they hold, so a job left behind by a
restart goes stale: a running one is failed by the sweep (`job_recovery`), with its upload
kept for Retry; a queued one, never started, is taken over by the threads of the process
that sweeps. Each import commits with its "done" or not at all, so a job cut off
leaves nothing half-imported.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from django.conf import settings
from django.db import connection, connections, transaction
from django.db.models import Q
from django.utils import timezone

from annotations import publishing
from annotations.models import ImportJob
from annotations.services.jobs import NOT_QUEUED, import_job_run

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_keeper: threading.Thread | None = None
_held: set[int] = set()  # jobs handed to this process's threads and not finished yet


def import_threads() -> int:
    """How many imports this process runs at once without a broker (0: in the request).
    SQLite takes one writer at a time, so there one."""
    threads = int(settings.NDCG_IMPORT_THREADS)
    if threads and connection.vendor == "sqlite":
        return 1
    return threads


def import_jobs_start(*, jobs: list[ImportJob]) -> None:
    """Start these committed (or about to be committed) jobs: queued for a worker with a
    broker, handed to this process's import threads without one (once the jobs commit),
    or, with NDCG_IMPORT_THREADS=0, run here one after the other."""
    ids = [job.id for job in jobs]
    if settings.CELERY_BROKER_URL:
        for job_id in ids:
            transaction.on_commit(lambda job_id=job_id: import_job_publish(job_id))  # type: ignore[misc]
        return
    if not import_threads():
        for job_id in ids:
            import_job_run(job_id=job_id)
        return
    transaction.on_commit(lambda: _hand_over(ids))


def import_job_publish(job_id: int) -> None:
    try:
        publishing.IMPORT_JOB_RUN.apply_async((job_id,), retry=False)
    except Exception as error:
        logger.warning("could not queue import job %s: %r", job_id, error)
        # The upload is kept: Retry queues the job again.
        ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED).update(
            state=ImportJob.FAILED, error=NOT_QUEUED, finished=timezone.now()
        )


def import_jobs_adopt(ids: list[int], *, dead: datetime) -> list[int]:
    """Take over queued jobs whose process stopped before they started (heartbeat older
    than `dead`, or none): each is claimed by moving its heartbeat on, so of several
    processes sweeping at once one takes it; this process's threads run them. The ids
    taken."""
    now = timezone.now()
    taken = []
    for job_id in ids:
        stale = Q(heartbeat__lt=dead) | Q(heartbeat__isnull=True)
        if ImportJob.objects.filter(stale, id=job_id, state=ImportJob.QUEUED).update(heartbeat=now):
            taken.append(job_id)
    if taken:
        logger.warning("import jobs %s were left queued by a stopped process: taken over", taken)
        _hand_over(taken)
    return taken


def _hand_over(ids: list[int]) -> None:
    """Hand the jobs to the import threads, started on first use with their keeper."""
    global _executor, _keeper
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=import_threads(), thread_name_prefix="import-job"
            )
        if _keeper is None or not _keeper.is_alive():
            _keeper = threading.Thread(target=_keep, name="import-jobs-keeper", daemon=True)
            _keeper.start()
        _held.update(ids)
    ImportJob.objects.filter(id__in=ids, state=ImportJob.QUEUED).update(heartbeat=timezone.now())
    for job_id in ids:
        _executor.submit(_run_held, job_id)


def _run_held(job_id: int) -> None:
    try:
        import_job_run(job_id=job_id)
    except Exception:  # import_job_run fails the job itself; this is what it could not
        logger.exception("import job %s could not be run", job_id)
    finally:
        with _lock:
            _held.discard(job_id)
        connections.close_all()  # this thread's own connections


def _keep() -> None:
    """Touch the heartbeats of the queued jobs this process holds, every
    NDCG_IMPORT_HEARTBEAT_SECONDS (a running job writes its own)."""
    stop = threading.Event()
    try:
        while not stop.wait(float(settings.NDCG_IMPORT_HEARTBEAT_SECONDS)):
            with _lock:
                held = list(_held)
            if not held:
                continue
            try:
                ImportJob.objects.filter(id__in=held, state=ImportJob.QUEUED).update(
                    heartbeat=timezone.now()
                )
            except Exception:  # SQLite busy with an import: the next beat tries again
                logger.warning("could not record the heartbeat of %s queued jobs", len(held))
            finally:
                connections.close_all()  # held between beats, it would outlive its use
    finally:
        connections.close_all()


def import_jobs_held() -> list[int]:
    """The jobs this process's import threads hold (queued or running)."""
    with _lock:
        return sorted(_held)


def import_jobs_wait(timeout: float | None = None) -> bool:
    """Wait until this process's import threads hold no job (True), or `timeout` seconds
    passed (False): for the commands and tests that need the imports finished."""
    finished = threading.Event()
    deadline = None if timeout is None else timezone.now().timestamp() + timeout
    while True:
        with _lock:
            if not _held:
                return True
        if deadline is not None and timezone.now().timestamp() >= deadline:
            return False
        finished.wait(0.05)
