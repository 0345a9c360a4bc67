"""One collection's outbound work cannot hold another's: machine judges' runs take at most a
few places per collection, the places of runs whose worker stopped are freed, and a *Try*
ends within its bound however slow the endpoint."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from annotations import services
from annotations.models import Collection, JudgeRun, Pool
from annotations.services import judges
from tests.factories import CollectionFactory, machine_judge
from tests.fake_llm import FakeLlm, Reply, fake_llm, says


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


def test_a_try_against_a_slow_endpoint_ends_within_its_time_and_shows_what_it_got(
    transactional_db: None, trial: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Try runs in a web request: one attempt per prompt and a bound on the whole, far
    under the server's request timeout; the pairs left are shown as not answered."""
    monkeypatch.setattr(judges, "TRY_SECONDS", 3.0)
    services.pool_build(collection=trial, name="main", depth=2)

    def slow_after_the_first(prompt: str, number: int) -> Reply:
        if number > 1:
            time.sleep(5)
        return says("##final score: 2")

    with fake_llm(FakeLlm(slow_after_the_first)) as llm:
        judge = machine_judge(trial, base_url=llm.url, api_key_env="")
        started = time.monotonic()
        tried = judges.judge_try(judge=judge)
        took = time.monotonic() - started
    assert took < 4.5
    assert tried[0].grade == 2 and len(tried) == judges.TRY_PAIRS
    assert all(item.grade is None and "within the try's" in item.failure for item in tried[1:])
