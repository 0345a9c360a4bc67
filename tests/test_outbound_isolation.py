"""One collection's outbound work cannot hold another's: machine judges' runs take at most a
few places per collection, and the places of runs whose worker stopped are freed."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotations.models import Collection, JudgeRun, Pool
from annotations.services import judges
from tests.factories import CollectionFactory, machine_judge


def _run(collection: Collection, name: str, state: str = JudgeRun.QUEUED) -> JudgeRun:
    pool = collection.pools.first() or Pool.objects.create(
        collection=collection, name="main", depth=2
    )
    now = timezone.now()
    return JudgeRun.objects.create(
        judge=machine_judge(collection, name), pool=pool, state=state,
        started=now if state == JudgeRun.RUNNING else None,
        heartbeat=now if state == JudgeRun.RUNNING else None,
    )  # fmt: skip


def test_a_collection_running_its_share_of_judges_waits_and_another_starts(
    trial: Collection,
) -> None:
    busy = [_run(trial, f"busy-{number}", JudgeRun.RUNNING) for number in range(2)]
    waiting = _run(trial, "third")
    assert judges._start(waiting.id) == judges.WAITING
    waiting.refresh_from_db()
    assert waiting.state == JudgeRun.QUEUED
    other = CollectionFactory(slug="other")
    other_run = _run(other, "theirs")
    assert judges._start(other_run.id) is None
    assert JudgeRun.objects.get(id=other_run.id).state == JudgeRun.RUNNING
    # a run whose worker stopped (no heartbeat for long) holds no place
    JudgeRun.objects.filter(id=busy[0].id).update(
        heartbeat=timezone.now() - judges.RUN_SILENT - timedelta(seconds=1)
    )
    assert judges._start(waiting.id) is None
    assert JudgeRun.objects.get(id=waiting.id).state == JudgeRun.RUNNING


def test_a_cancelled_waiting_run_is_not_started(trial: Collection) -> None:
    for number in range(2):
        _run(trial, f"busy-{number}", JudgeRun.RUNNING)
    waiting = _run(trial, "third")
    judges.judge_run_cancel(run=waiting)
    assert judges._start(waiting.id) == "not queued"
    assert JudgeRun.objects.get(id=waiting.id).state == JudgeRun.CANCELLED
