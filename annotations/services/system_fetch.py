"""Fetching a run from a search system: every query of the collection asked, as an import job
(`ImportJob.FETCH`) on the outbound worker, and the answers stored as a new run.

The queries are asked a few at a time (the system's concurrency, threads of the worker's
task, never of a web process), at most the system's requests per minute, each with its
attempts (Retry-After honoured). Progress is the queries asked. The documents the answers
name are written as the answers arrive, a few thousand at a time (those the collection did
not hold created with the title, text and link the mapping reads; those it held without
any text given theirs), so that what is left once every query was asked is the run: in
one transaction with the job's "done", the run's rankings and the queries that got no
answer. A run missing some queries says so in its description and the job's summary, and
each is listed with why. A cancelled job, a job whose engine failed FAILURES_IN_A_ROW
queries in a row, or one whose worker stopped, stores no run (Retry asks again); the
documents written by then stay in the collection, as any document does."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotations import publishing
from annotations.formats import search_answers, trec
from annotations.ids import document_ids_filled
from annotations.models import Collection, FetchFailure, ImportJob, Run, SearchSystem
from annotations.services.job_queue import NOT_QUEUED
from annotations.services.run_storage import PackedRanking, ranking_packed
from annotations.services.runs import run_store_packed
from annotations.services.search_client import (
    Pace,
    QueryText,
    SearchFailed,
    ask,
    client_for,
    request_headers,
)
from annotations.services.systems import query_texts

logger = logging.getLogger(__name__)

# After this many queries in a row got no answer the fetch stops, storing nothing: the
# engine is down or refuses every request, and asking the rest would only spend attempts.
FAILURES_IN_A_ROW = 10
# How often a running fetch writes its progress and heartbeat (well under the sweep's
# job_recovery.DEAD_SECONDS), and looks for a cancel.
PROGRESS_SECONDS = 2.0
# Queries handed to the threads beyond those being asked, so that they keep asking while
# this thread writes documents; not started ones are dropped when the fetch stops.
QUEUED_AHEAD = 32
# The documents of the answers are written once this many wait (each write a transaction
# of its own, while the next answers are being asked): the run's storing after the last
# answer is then its rankings alone.
DOCUMENTS_PER_WRITE = 2000
CANCELLED = "Cancelled after {done:,} of {total:,} queries; no run was stored."
_URL_LENGTH = 2000  # Document.url


def run_name_for(system: SearchSystem, label: str, now: datetime) -> str:
    """The run's name: the label given, else the system's name and the time."""
    return label.strip() or f"{system.name}-{now:%Y%m%d-%H%M%S}"


def system_fetch_start(
    *, system: SearchSystem, label: str = "", created_by: User | None
) -> ImportJob:
    """Queue a fetch of the system's run over every query of its collection (one active
    fetch per system). ValidationError when the run's name is taken or not an id, the
    collection has no query, or a secret's variable is not set."""
    request_headers(system)  # a secret not set fails now, not on the worker
    collection = system.collection
    name = run_name_for(system, label, timezone.localtime())
    problem = trec.id_problem(name)
    if problem is not None:
        raise ValidationError({"run": f"not a valid run name: {problem}"})
    if Run.objects.filter(collection=collection, name=name).exists():
        raise ValidationError({"run": f"A run named {name} exists: give another label."})
    total = len(query_texts(collection))
    if not total:
        raise ValidationError({"queries": "The collection has no queries to ask: import topics."})
    if ImportJob.objects.filter(system=system, state__in=ImportJob.ACTIVE).exists():
        raise ValidationError({"system": "A fetch of this system is going: wait or cancel it."})
    job = ImportJob.objects.create(
        collection=collection, kind=ImportJob.FETCH, system=system, file_name=system.name,
        size=0, run_name=name, lines_total=total, created_by=created_by,
        description=f"Fetched from the search system {system.name}.",
    )  # fmt: skip
    transaction.on_commit(lambda: system_fetch_publish(job.id))
    return job


def system_fetch_publish(job_id: int) -> None:
    try:
        publishing.SYSTEM_FETCH.apply_async((job_id,), retry=False)
    except Exception as error:
        logger.warning("could not queue fetch %s: %r", job_id, error)
        ImportJob.objects.filter(id=job_id, state=ImportJob.QUEUED).update(
            state=ImportJob.FAILED, error=NOT_QUEUED, finished=timezone.now()
        )


def system_fetch_cancel(*, job: ImportJob) -> None:
    """Stop a fetch: a queued one at once, a running one after the queries in flight;
    either way nothing is stored."""
    now = timezone.now()
    ImportJob.objects.filter(id=job.id, kind=ImportJob.FETCH, state=ImportJob.QUEUED).update(
        state=ImportJob.FAILED, error=CANCELLED.format(done=0, total=job.lines_total), finished=now
    )
    ImportJob.objects.filter(id=job.id, kind=ImportJob.FETCH, state=ImportJob.RUNNING).update(
        cancel_requested=True
    )


@dataclass
class _Asked:
    """What the queries asked so far gave."""

    failures: dict[str, SearchFailed]
    # qid -> its ranking, packed once its documents have ids; before: (docno, score, rank)
    packed: dict[str, PackedRanking] = field(default_factory=dict)
    unpacked: dict[str, list[tuple[str, float | None, int | None]]] = field(default_factory=dict)
    empty: int = 0  # queries the engine found nothing for
    documents: dict[str, int] = field(default_factory=dict)  # docno -> id, written
    waiting: dict[str, search_answers.Hit] = field(default_factory=dict)  # not written yet
    changed: int = 0  # documents created or given their texts
    in_a_row: int = 0
    last: str = ""

    @property
    def answered(self) -> int:
        return len(self.packed) + len(self.unpacked) + self.empty

    def add(self, qid: str, hits: list[search_answers.Hit]) -> None:
        self.in_a_row = 0
        if not hits:
            self.empty += 1
            return
        self.unpacked[qid] = [(hit.docno, hit.score, place) for place, hit in enumerate(hits, 1)]
        for hit in hits:
            if hit.docno not in self.documents:
                self.waiting.setdefault(hit.docno, hit)


def system_fetch_run(*, job_id: int) -> str:
    """Run a queued fetch (a worker's task); its final state. Claimed first (queued ->
    running), so a task delivered twice runs it once; the claim's time names this attempt,
    so an attempt outlived by its job's failure (and perhaps a Retry) stores no run."""
    now = timezone.now()
    claimed = ImportJob.objects.filter(
        id=job_id, kind=ImportJob.FETCH, state=ImportJob.QUEUED
    ).update(state=ImportJob.RUNNING, started=now, heartbeat=now, cancel_requested=False)
    job = ImportJob.objects.select_related("collection", "system", "created_by").filter(id=job_id)
    found = job.first()
    if found is None:
        return "missing"
    if not claimed or found.started != now:
        return found.state
    mine = ImportJob.objects.filter(id=job_id, state=ImportJob.RUNNING, started=now)
    try:
        return _fetched(found)
    except Exception as error:  # never leave a job running: say what happened
        logger.exception("fetch %s failed", job_id)
        message = (
            " ".join(error.messages) if isinstance(error, ValidationError)
            else f"the fetch failed ({type(error).__name__})"
        )  # fmt: skip
        mine.update(
            state=ImportJob.FAILED, stage="", finished=timezone.now(),
            error=f"{message}; no run was stored. Press Retry to fetch again.",
        )  # fmt: skip
        return ImportJob.FAILED


def _fetched(job: ImportJob) -> str:
    system = job.system
    if system is None:
        raise ValidationError("The search system was deleted")
    queries = query_texts(job.collection)
    total = len(queries)
    held = ImportJob.objects.filter(id=job.id, state=ImportJob.RUNNING, started=job.started)
    held.update(lines_total=total, lines_done=0, stage="")
    asked = _Asked(failures={})
    stopped = _ask_all(system, queries, asked, held)
    done = asked.answered + len(asked.failures)
    if stopped == "gone":
        return ImportJob.FAILED
    if stopped == "cancelled":
        return _failed(job, held, asked, CANCELLED.format(done=done, total=total))
    if stopped == "failing":
        return _failed(
            job, held, asked,
            f"The engine gave no answer for {FAILURES_IN_A_ROW} queries in a row (the last: "
            f"{asked.last}); the queries after them were not asked and no run was stored. "
            "Press Retry once the engine answers again.",
        )  # fmt: skip
    if not asked.packed:
        why = (
            f"no query got an answer ({len(asked.failures)} failed, listed below)"
            if asked.failures else "the engine found nothing for any query"
        )  # fmt: skip
        return _failed(job, held, asked, f"{why.capitalize()}; no run was stored.")
    return _store(job, system, held, asked, total)


def _ask_all(
    system: SearchSystem, queries: list[QueryText], asked: _Asked, held: QuerySet[ImportJob]
) -> str:
    """Ask every query, a few at a time; "" when all were asked, else why it stopped
    ("cancelled", "failing", "gone": the job is no longer this attempt's)."""
    headers = request_headers(system)
    pace = Pace(system.requests_per_minute)
    waiting: Iterator[QueryText] = iter(queries)
    flight: dict[Future[list[search_answers.Hit]], QueryText] = {}
    written = time.monotonic()
    stop = ""
    ahead = system.concurrency + QUEUED_AHEAD
    with client_for(system) as http, ThreadPoolExecutor(max_workers=system.concurrency) as pool:
        while True:
            while not stop and len(flight) < ahead:
                query = next(waiting, None)
                if query is None:
                    break
                future = pool.submit(ask, system, query, http=http, headers=headers, pace=pace)
                flight[future] = query
            if not flight:
                break
            finished, _ = wait(flight, timeout=PROGRESS_SECONDS, return_when=FIRST_COMPLETED)
            for future in finished:
                query = flight.pop(future)
                try:
                    asked.add(query.qid, future.result())
                except SearchFailed as failed:
                    asked.failures[query.qid] = failed
                    asked.in_a_row += 1
                    asked.last = str(failed)
            if asked.in_a_row >= FAILURES_IN_A_ROW and not stop:
                stop = "failing"
            if not stop and (len(asked.waiting) >= DOCUMENTS_PER_WRITE or not flight):
                _documents_write(system.collection, asked)
            if time.monotonic() - written >= PROGRESS_SECONDS or not flight:
                written = time.monotonic()
                count = asked.answered + len(asked.failures)
                if not held.update(lines_done=count, heartbeat=timezone.now()):
                    stop = "gone"
                elif not stop and held.filter(cancel_requested=True).exists():
                    stop = "cancelled"
            if stop:  # the queries not started yet are not asked
                for future in [future for future in flight if future.cancel()]:
                    del flight[future]
    return stop


def _failure_rows(job: ImportJob, asked: _Asked) -> list[FetchFailure]:
    return [
        FetchFailure(job=job, qid=qid, status=failed.status, message=str(failed)[:500])
        for qid, failed in sorted(asked.failures.items())
    ]


def _failed(job: ImportJob, held: QuerySet[ImportJob], asked: _Asked, error: str) -> str:
    with transaction.atomic():
        if held.update(state=ImportJob.FAILED, error=error, stage="", finished=timezone.now()):
            FetchFailure.objects.filter(job=job).delete()
            FetchFailure.objects.bulk_create(_failure_rows(job, asked))
    return ImportJob.FAILED


def _documents_write(collection: Collection, asked: _Asked) -> None:
    """Write the documents waiting: those the collection did not hold created with the
    texts the mapping read, those it held without any text given theirs, the others left
    as they are (`ids.document_ids_filled`); then pack the rankings whose documents all
    have ids now."""
    waiting = asked.waiting

    def texts(docno: str) -> tuple[str, str, str]:
        hit = waiting[docno]
        return hit.title, hit.snippet, hit.url[:_URL_LENGTH]

    ids, changed = document_ids_filled(
        collection_id=collection.id, docnos=list(waiting), texts=texts
    )
    asked.documents.update(ids)
    asked.changed += changed
    asked.waiting.clear()
    for qid, results in asked.unpacked.items():
        asked.packed[qid] = ranking_packed(results, asked.documents)
    asked.unpacked.clear()


def _store(
    job: ImportJob, system: SearchSystem, held: QuerySet[ImportJob], asked: _Asked, total: int
) -> str:
    held.update(stage=ImportJob.STORING, heartbeat=timezone.now())
    missing, empty = len(asked.failures), asked.empty
    description = job.description
    if missing:
        description += (
            f" {missing} of {total} queries got no answer and are missing from this run "
            f"(fetch {job.id} lists them)."
        )
    with transaction.atomic():
        run, count = run_store_packed(
            collection=job.collection,
            run_name=job.run_name,
            rankings=dict(sorted(asked.packed.items())),
            owner=job.created_by,
            description=description,
        )
        Run.objects.filter(id=run.id).update(system=system)  # its place in the history
        parts = [f"run: {run.name}, {len(asked.packed)} queries, {count} results"]
        if empty:
            parts.append(f"{empty} queries found nothing")
        if missing:
            parts.append(f"{missing} queries failed (listed) and are missing from the run")
        parts.append(f"{asked.changed} documents added or given their texts")
        finished = timezone.now()
        marked = held.update(
            state=ImportJob.DONE, stage="", summary="; ".join(parts), lines_done=total,
            finished=finished, heartbeat=finished,
        )  # fmt: skip
        if not marked:
            transaction.set_rollback(True)  # the sweep failed this attempt meanwhile
            return ImportJob.FAILED
        FetchFailure.objects.filter(job=job).delete()  # an earlier attempt's
        FetchFailure.objects.bulk_create(_failure_rows(job, asked))
    return ImportJob.DONE
