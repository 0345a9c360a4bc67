"""A running import job's progress in the units of the work (lines parsed, rows stored) and
its heartbeat, written from a thread of its own at a bounded rate.

The thread runs inside the import's task on the worker: the import holds its transaction
(and, on SQLite, the database's one write lock) until it commits, so its progress and
heartbeat can only be written beside it, on a connection of their own (the job's row on
PostgreSQL, the coordination cache on SQLite)."""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime
from typing import IO, BinaryIO, Protocol

from django.core.cache import caches
from django.db import connection
from django.utils import timezone

from annotations.formats import ir_records
from annotations.models import ImportJob
from annotations.selectors.jobs import Progress, progress_in_rows, progress_key

logger = logging.getLogger(__name__)

PROGRESS_SECONDS = 0.5  # how often a running job writes its progress while it moves
# A running job writes its heartbeat at least this often, whatever the import does: well
# inside the sweep's dead limit (job_recovery.DEAD_SECONDS), so that a live job missing one
# beat is never taken for dead.
HEARTBEAT_SECONDS = 10
# Progress kept in the coordination cache outlives the longest silence the sweep tolerates
# (job_recovery.STALE_SECONDS), so a live job's progress is never lost to expiry.
PROGRESS_KEEP_SECONDS = 3600


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


LINE_CHUNK = 1024 * 1024


def lines_count(raw: IO[bytes]) -> int:
    """The lines of a stored upload, read to its end (a last line without its newline
    counts): the "of N" of the parsing stage, counted before the import reads the file
    (about 0.1 s per 100 MB on a local disk)."""
    count, last = 0, b"\n"
    while chunk := raw.read(LINE_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


class JobProgress:
    """What a running job has done, in the units of its stage: the lines its parser read
    (through the CountingReader), then storing once the whole file is read."""

    def __init__(self, job: ImportJob, reader: CountingReader, lines_total: int) -> None:
        self.size, self.reader, self.lines_total = job.size, reader, lines_total

    def now(self) -> Progress:
        reader = self.reader
        stage = ImportJob.STORING if reader.bytes_done >= self.size else ImportJob.PARSING
        return Progress(
            bytes_done=reader.bytes_done,
            lines_done=min(reader.lines_done, self.lines_total),
            heartbeat=timezone.now(),
            stage=stage,
            lines_total=self.lines_total,
        )


class DatasetProgress:
    """What a running dataset job has read: the records of the parts done and of the one
    being read (counted by its stream as the import reads it), of `lines_total` when
    ir_datasets knows it (0 otherwise)."""

    bytes_done = 0

    def __init__(self, lines_total: int | None) -> None:
        self.lines_total = lines_total or 0
        self._parts_done = 0
        self._reading: ir_records.Progress | None = None

    def heard(self, progress: ir_records.Progress) -> None:
        """The import's report: a part starting, its records read, or its end."""
        if progress is not self._reading:
            if self._reading is not None:
                self._parts_done += self._reading.lines
            self._reading = progress

    @property
    def lines_done(self) -> int:
        reading = self._reading.lines if self._reading is not None else 0
        return self._parts_done + reading

    def now(self) -> Progress:
        return Progress(
            bytes_done=0,
            lines_done=self.lines_done,
            heartbeat=timezone.now(),
            stage=ImportJob.PARSING,
            lines_total=self.lines_total,
        )


class ProgressSource(Protocol):
    """What a running job has done, asked by its ProgressWriter."""

    def now(self) -> Progress: ...


def import_job_progress_write(*, job: ImportJob, now: Progress, attempt: datetime) -> None:
    """Record a job's progress and heartbeat outside the import's transaction (call it from
    a thread of its own: its connection is not the import's); `attempt` is when this run
    claimed the job, so a run outlived by its job's failure writes nothing."""
    if progress_in_rows():
        table = connection.ops.quote_name(ImportJob._meta.db_table)
        with connection.cursor() as cursor:
            # SKIP LOCKED: never wait for the row (the import locks it as it finishes).
            cursor.execute(
                f"UPDATE {table} SET bytes_done = %s, lines_done = %s, heartbeat = %s, "
                f"stage = %s WHERE id = (SELECT id FROM {table} WHERE id = %s AND state = %s "
                "AND started = %s FOR UPDATE SKIP LOCKED)",
                [
                    now.bytes_done, now.lines_done, now.heartbeat, now.stage, job.id,
                    ImportJob.RUNNING, attempt,
                ],
            )  # fmt: skip
        return
    caches["coordination"].set(progress_key(job), now.cached(), timeout=PROGRESS_KEEP_SECONDS)


class ProgressWriter(threading.Thread):
    """While the import runs, writes the job's progress and
    heartbeat every PROGRESS_SECONDS while the progress moves (a bounded rate, never once
    per line), and the heartbeat at least every HEARTBEAT_SECONDS whatever the
    import does."""

    def __init__(self, job: ImportJob, done: ProgressSource, attempt: datetime) -> None:
        super().__init__(name=f"import-job-{job.id}-progress", daemon=True)
        self.job, self.done, self.attempt = job, done, attempt
        self.finished = threading.Event()

    def run(self) -> None:
        heartbeat = float(HEARTBEAT_SECONDS)
        written: object = None
        last = time.monotonic()
        try:
            while not self.finished.wait(min(PROGRESS_SECONDS, heartbeat)):
                now = self.done.now()
                moved = now.counts()
                if moved == written and time.monotonic() - last < heartbeat:
                    continue
                try:
                    import_job_progress_write(job=self.job, now=now, attempt=self.attempt)
                    written, last = moved, time.monotonic()
                except Exception:  # progress is best effort; the import goes on
                    logger.warning("could not record the progress of import job %s", self.job.id)
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self.finished.set()
        if self.is_alive():
            self.join()
