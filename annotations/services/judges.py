"""Machine judges: add and edit them, try one on a few pairs, run one over a pool.

A run grades its pool's pairs (all, or those no person judged) in the background: each pair
is asked once per (model, prompt version, query, document content), the answer kept with
its grade, excerpt and tokens, and a grade on the scale recorded as the judge's judgement
(source `machine`, in the history like any assessor's). An answer that names no grade on
the scale is a failure of that pair, never a grade; so is a pair the endpoint gave no
answer for in the judge's attempts (timeouts, refusals, answers that are not completions):
each is recorded with its kind (`JudgeRunFailure`) and the run goes on to the next pair.
A run can be cancelled; starting the judge again resumes: what was asked already comes from
its answers at no cost. A failed or cancelled run can be retried whole, and any run's failed
pairs alone; the periodic sweep queues again a run whose task was lost.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from itertools import islice
from typing import Any

from django.contrib.auth.models import User
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotations import publishing
from annotations.formats import judge_prompts
from annotations.models import (
    Collection,
    Document,
    JudgeAnswer,
    Judgement,
    JudgeRun,
    JudgeRunFailure,
    MachineJudge,
    Pool,
    PoolEntry,
    Query,
)
from annotations.services.judge_client import (
    EndpointFailed,
    Pace,
    api_key,
    ask,
    endpoint_refusal,
    pair_seconds,
)
from annotations.services.judgements import judgement_record
from annotations.services.members import system_account

logger = logging.getLogger(__name__)

TRY_PAIRS = 5
# A try answers while the organiser waits, in a web request: one attempt per prompt and at
# most TRY_SECONDS for all of them, far under the server's request timeout.
TRY_SECONDS = 30.0
PROGRESS_EVERY = 5


def levels_of(collection: Collection) -> list[judge_prompts.Level]:
    return [
        judge_prompts.Level(level.value, level.label, level.definition)
        for level in collection.grades.order_by("value")
    ]


def _checked(judge: MachineJudge) -> None:
    problem = judge_prompts.template_problem(judge.prompt_template)
    if problem is not None:
        raise ValidationError({"prompt_template": problem})
    variant = judge.variant_template and judge_prompts.template_problem(judge.variant_template)
    if variant:
        raise ValidationError({"variant_template": variant})
    judge.full_clean(exclude=["account", "collection", "created_by"], validate_unique=False)
    refusal = endpoint_refusal(judge.base_url)
    if refusal is not None:
        raise ValidationError({"base_url": refusal})


def judge_create(
    *, collection: Collection, name: str, created_by: User | None, **settings_: object
) -> MachineJudge:
    """Add a judge; its account is a system account named `judge:<collection>:<name>`."""
    judge = MachineJudge(collection=collection, name=name, created_by=created_by, **settings_)
    if not judge.prompt_template:
        judge.prompt_template = judge_prompts.UMBRELA
    _checked(judge)
    if MachineJudge.objects.filter(collection=collection, name=name).exists():
        raise ValidationError({"name": "A judge of this name exists in the collection."})
    with transaction.atomic():
        account = system_account(account_name(collection.slug, name))
        if MachineJudge.objects.filter(account_id=account.pk).exists():
            raise ValidationError({"name": "A judge of this name exists in the collection."})
        judge.account = account  # type: ignore[assignment]
        judge.save()
    return judge


def account_name(slug: str, name: str) -> str:
    """The judge's account, `judge:<collection>:<name>`; past a username's 150 characters
    cut, with a digest of the whole name so that two long names never share an account."""
    full = f"judge:{slug}:{name}"
    if len(full) <= 150:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:12]
    return f"{full[: 150 - 13]}~{digest}"


def judge_update(*, judge: MachineJudge, **changes: object) -> MachineJudge:
    """Change a judge's settings; a changed prompt raises its version (new answers)."""
    old_prompts = (judge.prompt_template, judge.variant_template)
    for field, value in changes.items():
        setattr(judge, field, value)
    _checked(judge)
    if (judge.prompt_template, judge.variant_template) != old_prompts:
        judge.prompt_version += 1
    judge.save()
    return judge


# -- one pair ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    query: Query
    document: Document


def prompt_for(
    judge: MachineJudge, pair: Pair, levels: list[judge_prompts.Level], *, variant: bool = False
) -> str:
    return judge_prompts.render(
        judge.variant_template if variant else judge.prompt_template,
        levels=levels,
        title=pair.query.title or pair.query.qid,
        description=pair.query.description,
        narrative=pair.query.narrative,
        document=(pair.document.title + "\n" + pair.document.text).strip(),
    )


def _key(judge: MachineJudge, pair: Pair) -> str:
    query = pair.query
    return judge_prompts.cache_key(
        model=judge.model,
        prompt_version=judge.prompt_version,
        query_text="\x1e".join([query.title, query.description, query.narrative]),
        document_hash=pair.document.content_hash
        or judge_prompts.cache_key(
            model="", prompt_version=0, query_text=pair.document.title,
            document_hash=pair.document.text,
        ),
    )  # fmt: skip


@dataclass(frozen=True)
class Tried:
    qid: str
    docno: str
    prompt: str
    answer: str
    grade: int | None
    failure: str
    variant_answer: str = ""  # with a variant template: the second wording's answer
    variant_grade: int | None = None


class _TryOver(Exception):
    """The try's time is spent: the pairs left are shown as not asked."""


def judge_try(*, judge: MachineJudge, pool: Pool | None = None) -> list[Tried]:
    """Ask about TRY_PAIRS pairs (of the pool, else of the collection's first pool) and show
    the prompts, the answers' texts and grades, within TRY_SECONDS; nothing is stored."""
    api_key(judge)
    pool = pool or Pool.objects.filter(collection=judge.collection).order_by("id").first()
    if pool is None:
        raise ValidationError({"pool": "Build a pool first: a judge is tried on its pairs."})
    levels = levels_of(judge.collection)
    values = [level.value for level in levels]
    deadline = time.monotonic() + TRY_SECONDS

    def asked(prompt: str) -> str:
        left = deadline - time.monotonic()
        if left < 1.0:
            raise _TryOver
        try:
            return ask(judge, prompt, attempts=1, seconds=left).text
        except EndpointFailed as error:
            if deadline - time.monotonic() < 1.0:  # cut short by the try's own time
                raise _TryOver from None
            raise ValidationError({"base_url": str(error)}) from None

    tried: list[Tried] = []
    pairs = _pairs(pool, JudgeRun.ALL, limit=TRY_PAIRS)
    for pair in pairs:
        prompt = prompt_for(judge, pair, levels)
        try:
            answer = asked(prompt)
            second = (
                asked(prompt_for(judge, pair, levels, variant=True))
                if (judge.variant_template)
                else ""
            )
        except _TryOver:
            late = f"no answer within the try's {TRY_SECONDS:.0f} s"
            tried.extend(
                Tried(rest.query.qid, rest.document.docno, "", "", None, late)
                for rest in pairs[len(tried) :]
            )
            break
        reading = judge_prompts.read_answer(answer, values)
        tried.append(
            Tried(
                pair.query.qid, pair.document.docno, prompt, answer, reading.grade,
                reading.failure, second,
                judge_prompts.read_answer(second, values).grade if second else None,
            )
        )  # fmt: skip
    return tried


# -- runs ----------------------------------------------------------------------------------


def _pairs(pool: Pool, scope: str, *, limit: int | None = None, texts: bool = True) -> list[Pair]:
    """The pool's pairs in asking order (of `scope`), the first `limit` of them; without
    `texts` the documents' texts are not read (counting needs none)."""
    entries = (
        PoolEntry.objects.filter(pool=pool)
        .select_related("query", "document")
        .order_by("query__qid", "best_position", "document__docno")
    )
    if not texts:
        entries = entries.defer("document__text")
    judged: set[tuple[int, int]] = set()
    if scope == JudgeRun.UNJUDGED:
        judged = set(
            Judgement.objects.filter(
                query__pool_entries__pool=pool, assessor__machine_judge__isnull=True
            ).values_list("query_id", "document_id")
        )
    pairs = (
        Pair(entry.query, entry.document)
        for entry in entries.iterator(chunk_size=500)
        if (entry.query_id, entry.document_id) not in judged
    )
    return list(islice(pairs, limit))


def _failed_pairs(run_id: int | None, *, texts: bool = True) -> list[Pair]:
    """The pairs that failed in a run, in asking order."""
    failures = (
        JudgeRunFailure.objects.filter(run_id=run_id)
        .select_related("query", "document")
        .order_by("query__qid", "document__docno")
    )
    if not texts:
        failures = failures.defer("document__text")
    return [Pair(failure.query, failure.document) for failure in failures]


def _run_pairs(run: JudgeRun, *, texts: bool = True) -> list[Pair]:
    if run.scope == JudgeRun.FAILED_PAIRS:
        return _failed_pairs(run.retry_of_id, texts=texts)
    return _pairs(run.pool, run.scope, texts=texts)


def judge_run_start(
    *, judge: MachineJudge, pool: Pool, scope: str, created_by: User | None
) -> JudgeRun:
    """Queue a run of the judge over the pool (one active run per judge at a time)."""
    if pool.collection_id != judge.collection_id:
        raise ValidationError({"pool": "The pool belongs to another collection."})
    if scope not in dict(JudgeRun.SCOPE_CHOICES):
        raise ValidationError({"scope": f"Give one of {[s for s, _ in JudgeRun.SCOPE_CHOICES]}."})
    return _queue(JudgeRun(judge=judge, pool=pool, scope=scope, created_by=created_by))


def _queue(run: JudgeRun) -> JudgeRun:
    api_key(run.judge)
    if JudgeRun.objects.filter(judge=run.judge, state__in=JudgeRun.ACTIVE).exists():
        raise ValidationError({"pool": "The judge is already running; cancel that run first."})
    run.pairs_total = len(_run_pairs(run, texts=False))
    run.save()
    transaction.on_commit(lambda: _schedule(run.id))
    return run


def judge_run_retry(*, run: JudgeRun, failed_only: bool, created_by: User | None) -> JudgeRun:
    """Queue a new run that asks again: the pairs that failed in `run` (`failed_only`), or
    the whole run, when it failed or was cancelled (its answers so far come from the cache).
    Either way an answer that named no grade is asked again, not taken from the cache."""
    if run.state in JudgeRun.ACTIVE:
        raise ValidationError({"run": "The run is still going: wait for it, or cancel it."})
    if failed_only:
        if not run.failures.exists():
            raise ValidationError({"run": "No pair of this run failed: nothing to retry."})
        scope, retried = JudgeRun.FAILED_PAIRS, run
    else:
        if run.state not in (JudgeRun.FAILED, JudgeRun.CANCELLED):
            raise ValidationError(
                {"run": "Only a failed or cancelled run is retried whole; retry its failed "
                 "pairs, or start a new run."}
            )  # fmt: skip
        # A retry of failed pairs, retried whole, asks the same pairs again.
        same = run.scope == JudgeRun.FAILED_PAIRS and run.retry_of_id is not None
        scope, retried = run.scope, (run.retry_of or run if same else run)
    return _queue(
        JudgeRun(
            judge=run.judge, pool=run.pool, scope=scope, retry_of=retried, created_by=created_by
        )
    )


def judge_run_cancel(*, run: JudgeRun) -> None:
    """Ask the run to stop after the pairs in flight (a queued run stops at once)."""
    JudgeRun.objects.filter(id=run.id, state=JudgeRun.QUEUED).update(
        state=JudgeRun.CANCELLED, finished=timezone.now()
    )
    JudgeRun.objects.filter(id=run.id, state=JudgeRun.RUNNING).update(cancel_requested=True)


def _schedule(run_id: int) -> None:
    try:
        publishing.JUDGE_RUN.apply_async((run_id,), retry=False)
    except Exception as error:
        JudgeRun.objects.filter(id=run_id, state=JudgeRun.QUEUED).update(
            state=JudgeRun.FAILED, error=f"could not queue the run ({error!r}); start it again"
        )


# One collection's judges share the outbound worker with every other collection's: at most
# this many of its runs ask at once, the others wait queued. A run whose heartbeat is older
# than RUN_SILENT (its worker stopped) no longer holds a place.
RUNS_PER_COLLECTION = 2
RUN_SILENT = timedelta(minutes=30)
WAITING = "waiting"
WAIT_SECONDS = 30.0
SUPERSEDED = "superseded"
# After this many pairs in a row got no answer from the endpoint the run stops, failed: the
# endpoint is down or refuses every request, and asking the rest would only spend attempts.
# A few slow or refused pairs among answered ones never stop a run.
FAILURES_IN_A_ROW = 10
# Beyond the longest a pair can take (`judge_client.pair_seconds`), how long a running run
# may be silent before the sweep counts its worker as stopped.
SILENT_MARGIN = timedelta(minutes=5)
# A run still queued this long with no worker looking at it is queued again: its task was
# lost with a broker that did not persist it. A waiting run's own task looks every
# WAIT_SECONDS, so only a lost one stays unseen this long.
QUEUED_STALE_SECONDS = 300


def _start(run_id: int) -> str | None:
    """Mark the queued run running if its collection has a place free: None when it
    started, else why not (WAITING, or "not queued"). A start begins the pass afresh: its
    counts and failures are those of this pass (what an earlier one asked is cached)."""
    now = timezone.now()
    with transaction.atomic():
        queued = JudgeRun.objects.filter(id=run_id, state=JudgeRun.QUEUED)
        collection_id = queued.values_list("judge__collection_id", flat=True).first()
        if collection_id is None:
            return "not queued"
        # Two runs of one collection starting at once count each other.
        Collection.objects.select_for_update().filter(id=collection_id).first()
        running = JudgeRun.objects.filter(
            judge__collection_id=collection_id,
            state=JudgeRun.RUNNING,
            heartbeat__gte=now - RUN_SILENT,
        ).count()
        if running >= RUNS_PER_COLLECTION:
            queued.update(heartbeat=now)  # its task is alive, only waiting: not lost
            return WAITING
        started = queued.update(
            state=JudgeRun.RUNNING, started=now, heartbeat=now, starts=F("starts") + 1,
            pairs_done=0, pairs_cached=0, pairs_failed=0, requests=0, error="",
        )  # fmt: skip
        if not started:
            return "not queued"
        JudgeRunFailure.objects.filter(run_id=run_id).delete()
    return None


def judge_run_execute(*, run_id: int) -> str:
    """Run a queued run to its end (a worker's task); WAITING while its collection's other
    runs hold every place."""
    refused = _start(run_id)
    if refused is not None:
        return refused
    run = JudgeRun.objects.select_related("judge__collection", "judge__account", "pool").get(
        id=run_id
    )
    mine = JudgeRun.objects.filter(id=run_id, state=JudgeRun.RUNNING, starts=run.starts)
    try:
        state, why = _execute(run)
    except Exception as error:  # never leave a run running: say what happened
        logger.exception("judge run %s failed", run_id)
        if isinstance(error, EndpointFailed):
            message = str(error)
        elif isinstance(error, ValidationError):
            message = " ".join(error.messages)
        else:
            message = type(error).__name__
        mine.update(state=JudgeRun.FAILED, error=message[:2000], finished=timezone.now())
        return JudgeRun.FAILED
    if state != SUPERSEDED:
        mine.update(state=state, error=why[:2000], finished=timezone.now())
    return state


class _Streak:
    """Pairs in a row without an answer from the endpoint, across a run's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.last = ""

    def failed(self, message: str) -> int:
        with self._lock:
            self.count += 1
            self.last = message
            return self.count

    def answered(self) -> None:
        with self._lock:
            self.count = 0


def _execute(run: JudgeRun) -> tuple[str, str]:
    """The run's end state and, when it stopped early, why."""
    judge = run.judge
    api_key(judge)
    levels = levels_of(judge.collection)
    values = [level.value for level in levels]
    pairs = _run_pairs(run)
    mine = JudgeRun.objects.filter(id=run.id, state=JudgeRun.RUNNING, starts=run.starts)
    mine.update(pairs_total=len(pairs))
    pace = Pace(judge.requests_per_minute)
    stop = threading.Event()
    streak = _Streak()
    fresh = run.retry_of_id is not None

    def one(pair: Pair) -> None:
        if stop.is_set():
            return
        try:
            failure = _grade(run, judge, pair, levels, values, pace, fresh=fresh)
            if failure is None:
                streak.answered()
            elif streak.failed(str(failure)) >= FAILURES_IN_A_ROW:
                stop.set()
        finally:
            connections.close_all()  # this thread's own

    with ThreadPoolExecutor(max_workers=judge.concurrency) as pool:
        for batch in _batches(pairs, max(PROGRESS_EVERY, judge.concurrency)):
            list(pool.map(one, batch))
            if not mine.update(heartbeat=timezone.now(), requests=F("requests") + pace.taken()):
                stop.set()  # the sweep queued the run again and another start took it
                return SUPERSEDED, ""
            if stop.is_set():
                return JudgeRun.FAILED, (
                    f"The endpoint gave no answer for {FAILURES_IN_A_ROW} pairs in a row "
                    f"(the last: {streak.last}); the pairs after them were not asked. "
                    "Retry the run once the endpoint answers again."
                )
            if JudgeRun.objects.filter(id=run.id, cancel_requested=True).exists():
                stop.set()
                return JudgeRun.CANCELLED, ""
    return JudgeRun.DONE, ""


def _batches(pairs: list[Pair], size: int) -> Iterable[list[Pair]]:
    for start in range(0, len(pairs), size):
        yield pairs[start : start + size]


def silent_limit(judge: MachineJudge) -> timedelta:
    """How long a running run of the judge may go without a heartbeat before the sweep
    counts its worker as stopped: the longest one pair can take, waits for the pace
    included, and a margin."""
    paced = judge.attempts * judge.concurrency * 60.0 / max(1, judge.requests_per_minute)
    return timedelta(seconds=pair_seconds(judge) + paced) + SILENT_MARGIN


def judge_runs_sweep() -> int:
    """Queue again the runs whose task was lost: queued with no worker looking at them for
    QUEUED_STALE_SECONDS (a broker that lost the message would leave them queued for
    ever; each queued again at most once per that time), and running with no heartbeat for
    longer than their judge's `silent_limit` (the worker stopped): those go back to queued
    (cancelled, if that was asked), and their next start asks only what the cache does not
    hold. A second delivery of a run
    already started does nothing. The count queued again."""
    now = timezone.now()
    stale = now - timedelta(seconds=QUEUED_STALE_SECONDS)
    requeued: list[int] = []
    for run in JudgeRun.objects.filter(state=JudgeRun.RUNNING).select_related("judge"):
        silent = now - silent_limit(run.judge)
        if run.heartbeat is not None and run.heartbeat >= silent:
            continue
        silent_run = JudgeRun.objects.filter(
            id=run.id, state=JudgeRun.RUNNING, starts=run.starts, heartbeat=run.heartbeat
        )
        if run.cancel_requested:  # it was to stop anyway
            silent_run.update(state=JudgeRun.CANCELLED, finished=now)
            continue
        if silent_run.update(state=JudgeRun.QUEUED, heartbeat=now):
            logger.warning("judge run %s: its worker stopped; queued again", run.id)
            requeued.append(run.id)
    waiting = (
        JudgeRun.objects.alias(since=Coalesce("heartbeat", "created"))
        .filter(state=JudgeRun.QUEUED, since__lt=stale)
        .values_list("id", flat=True)
    )
    for run_id in list(waiting):
        key = f"judge-run-republished:{run_id}"
        if caches["coordination"].add(key, 1, timeout=QUEUED_STALE_SECONDS):
            logger.warning("judge run %s still queued: queued again", run_id)
            requeued.append(run_id)
    for run_id in requeued:
        _schedule(run_id)
    return len(requeued)


def _probabilities(
    tokens: tuple[judge_prompts.Token, ...], grade: int, values: list[int]
) -> dict[str, float] | None:
    """The answer's probability of each grade (JSON keys), when its tokens tell it."""
    found = judge_prompts.grade_probabilities(tokens, grade, values) if tokens else None
    return None if found is None else {str(value): p for value, p in found.items()}


def _asked(
    judge: MachineJudge,
    pair: Pair,
    levels: list[judge_prompts.Level],
    values: list[int],
    pace: Pace,
) -> dict[str, Any]:
    """A new answer's row: the prompt's grade (or why it names none) with its spread over
    the grades, the variant prompt's grade when the judge has one, tokens and time."""
    started = time.monotonic()
    answer = ask(judge, prompt_for(judge, pair, levels), pace=pace)
    reading = judge_prompts.read_answer(answer.text, values)
    second = (
        ask(judge, prompt_for(judge, pair, levels, variant=True), pace=pace)
        if judge.variant_template and reading.grade is not None
        else None
    )
    return {
        "query": pair.query, "document": pair.document, "model": judge.model,
        "prompt_version": judge.prompt_version, "grade": reading.grade,
        "excerpt": judge_prompts.excerpt(answer.text), "failure": reading.failure,
        "grade_probabilities": None if reading.grade is None else _probabilities(
            answer.tokens, reading.grade, values
        ),
        "variant_grade": None if second is None
        else judge_prompts.read_answer(second.text, values).grade,
        "prompt_tokens": answer.prompt_tokens + (second.prompt_tokens if second else 0),
        "completion_tokens": answer.completion_tokens
        + (second.completion_tokens if second else 0),
        "seconds": time.monotonic() - started,
    }  # fmt: skip


def _failed(run: JudgeRun, pair: Pair, kind: str, message: str) -> None:
    JudgeRunFailure.objects.update_or_create(
        run_id=run.id, query=pair.query, document=pair.document,
        defaults={"kind": kind, "message": message[:500]},
    )  # fmt: skip


def _grade(
    run: JudgeRun,
    judge: MachineJudge,
    pair: Pair,
    levels: list[judge_prompts.Level],
    values: list[int],
    pace: Pace,
    *,
    fresh: bool = False,
) -> EndpointFailed | None:
    """Grade one pair (from the cache, or asked; with `fresh` a cached answer that named no
    grade is asked again); a pair without a grade is recorded as the run's failure. Why the
    endpoint gave no answer, or None when it answered."""
    key = _key(judge, pair)
    cached = JudgeAnswer.objects.filter(judge=judge, cache_key=key).first()
    if cached is not None and fresh and cached.grade is None:
        cached.delete()
        cached = None
    counters: dict[str, object] = {"pairs_done": F("pairs_done") + 1}
    mine = JudgeRun.objects.filter(id=run.id, starts=run.starts)
    if cached is not None:
        answer_row = cached
        counters["pairs_cached"] = F("pairs_cached") + 1
    else:
        try:
            defaults = _asked(judge, pair, levels, values, pace)
        except EndpointFailed as error:
            _failed(run, pair, error.kind, str(error))
            counters["pairs_failed"] = F("pairs_failed") + 1
            mine.update(**counters, heartbeat=timezone.now(), requests=F("requests") + pace.taken())
            return error
        answer_row, _ = JudgeAnswer.objects.get_or_create(
            judge=judge, cache_key=key, defaults=defaults
        )
        counters["prompt_tokens"] = F("prompt_tokens") + defaults["prompt_tokens"]
        counters["completion_tokens"] = F("completion_tokens") + defaults["completion_tokens"]
    if answer_row.grade is None:
        counters["pairs_failed"] = F("pairs_failed") + 1
        _failed(run, pair, JudgeRunFailure.NO_GRADE, answer_row.failure or "no grade")
    else:
        pair.query.collection = judge.collection
        note = judge_prompts.provenance(
            model=answer_row.model, prompt_version=answer_row.prompt_version,
            prompt_tokens=answer_row.prompt_tokens,
            completion_tokens=answer_row.completion_tokens, seconds=answer_row.seconds,
            excerpt=answer_row.excerpt,
        )  # fmt: skip
        judgement_record(
            query=pair.query, document=pair.document, assessor=judge.account,
            grade=answer_row.grade, note=note, source="machine",
        )  # fmt: skip
    mine.update(**counters, heartbeat=timezone.now(), requests=F("requests") + pace.taken())
    return None
