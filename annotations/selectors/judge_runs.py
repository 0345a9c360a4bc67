"""Judge runs as their page and the API show them: progress, the time left, the pace that
limits them, cost in the judge's currency, and the pairs that failed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from annotations.models import JudgeRun, JudgeRunFailure, MachineJudge

RUNS_SHOWN = 50
FAILURES_SHOWN = 500
# A run sending at least this share of its judge's requests per minute is held by the pace:
# the pace lets through at most that many, so a run close to it could go faster only with
# a higher one.
PACE_SHARE = 0.9


@dataclass(frozen=True)
class RunProgress:
    """One run as shown: the stored row, and what its counts say while it is active."""

    run: JudgeRun
    active: bool
    percent: int
    eta_seconds: int | None  # None: not active, or nothing to tell it from yet
    sent_per_minute: float | None  # requests sent per minute since it started
    pace_limited: bool
    pace: int  # the judge's requests per minute
    currency: str
    cost: float

    @property
    def eta(self) -> str:
        return duration(self.eta_seconds) if self.eta_seconds is not None else ""

    @property
    def retryable_whole(self) -> bool:
        return self.run.state in (JudgeRun.FAILED, JudgeRun.CANCELLED)

    @property
    def retryable_failed(self) -> bool:
        return not self.active and self.run.pairs_failed > 0


def duration(seconds: float) -> str:
    """A time left as people read it: 45 s, 12 min, 2 h 05 min."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _prompts_per_pair(judge: MachineJudge) -> int:
    return 2 if judge.variant_template else 1


def run_progress(run: JudgeRun, *, now: datetime | None = None) -> RunProgress:
    """The run's progress and, while it runs, the time left at the rate it went so far (at
    its judge's pace before the first pair), and whether that pace is what holds it."""
    judge = run.judge
    active = run.state in JudgeRun.ACTIVE
    total = run.pairs_total
    percent = 100 if not total else min(100, round(100 * run.pairs_done / total))
    left = max(0, total - run.pairs_done)
    pace = judge.requests_per_minute
    at_pace = left * _prompts_per_pair(judge) * 60.0 / max(1, pace)
    eta: float | None = None
    sent: float | None = None
    limited = False
    if active and run.state == JudgeRun.RUNNING and run.started is not None:
        seen = run.heartbeat or now or timezone.now()
        elapsed = (seen - run.started).total_seconds()
        if elapsed > 0 and run.requests:
            sent = run.requests * 60.0 / elapsed
            limited = sent >= PACE_SHARE * pace
        # The cached pairs cost no time: the rate is that of the pairs asked.
        asked = run.pairs_done - run.pairs_cached
        eta = left * elapsed / asked if asked > 0 and elapsed > 0 else at_pace
        eta = max(eta, at_pace)
    elif run.state == JudgeRun.QUEUED:
        eta = at_pace
    return RunProgress(
        run=run, active=active, percent=percent,
        eta_seconds=None if eta is None else round(eta), sent_per_minute=sent,
        pace_limited=limited, pace=pace, currency=judge.currency, cost=run.cost,
    )  # fmt: skip


def judge_runs_read(judge: MachineJudge, *, limit: int = RUNS_SHOWN) -> list[RunProgress]:
    """The judge's latest runs, newest first, with their progress."""
    runs = JudgeRun.objects.filter(judge=judge).select_related("pool", "judge")[:limit]
    now = timezone.now()
    return [run_progress(run, now=now) for run in runs]


def run_failures(run: JudgeRun) -> QuerySet[JudgeRunFailure]:
    """The run's failed pairs in asking order, with their query and document ids."""
    return (
        JudgeRunFailure.objects.filter(run=run)
        .select_related("query", "document")
        .defer("document__text")
        .order_by("query__qid", "document__docno")
    )
