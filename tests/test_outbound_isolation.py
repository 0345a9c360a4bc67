"""One collection's outbound work cannot hold another's: machine judges' runs take at most a
few places per collection, the places of runs whose worker stopped are freed, and a *Try*
ends within its bound however slow the endpoint."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from annotations import services
from annotations.models import Collection, JudgeRun, Pool, WebhookDelivery
from annotations.services import judges, webhooks
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


def test_a_collection_with_slow_receivers_delays_anothers_deliveries_by_at_most_its_turn(
    trial: Collection, settings, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Twenty deliveries of one collection, each running to the timeout, are due before one
    of another collection: the other's goes second, and the slow collection stops after two
    attempts' time in this call (the rest stay due for the next)."""
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    monkeypatch.setattr(webhooks, "TIMEOUT_SECONDS", 0.1)
    other = CollectionFactory(slug="other")
    slow = webhooks.subscription_create(
        collection=trial, url="http://127.0.0.1:9/slow", events=[], created_by=None
    )
    fast = webhooks.subscription_create(
        collection=other, url="http://127.0.0.1:9/fast", events=[], created_by=None
    )
    earlier = timezone.now() - timedelta(minutes=1)
    WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(subscription=slow, event_type="webhook.test", body="{}",
                            next_attempt=earlier)
            for _ in range(20)
        ]
        + [WebhookDelivery(subscription=fast, event_type="webhook.test", body="{}",
                           next_attempt=timezone.now())]
    )  # fmt: skip
    sent: list[str] = []

    def send(delivery: WebhookDelivery) -> None:
        sent.append(delivery.subscription.url.rsplit("/", 1)[1])
        if delivery.subscription_id == slow.id:
            time.sleep(webhooks.TIMEOUT_SECONDS)  # as an attempt timing out
        WebhookDelivery.objects.filter(id=delivery.id).update(
            state=WebhookDelivery.DELIVERED, claimed=None
        )

    monkeypatch.setattr(webhooks, "_send", send)
    assert webhooks.deliveries_send_due() == 0.0  # more are due: sent in the next call
    assert sent[:2] == ["slow", "fast"] and sent.count("fast") == 1
    assert 2 <= sent.count("slow") <= 3
