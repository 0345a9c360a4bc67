"""Webhooks in production mode: a real Celery worker on Redis sends the deliveries a
judgement's transaction wrote, retries a failed one, and the request never waits for them."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.models import Collection, WebhookDelivery
from annotations.services.webhooks import subscription_create
from tests.conftest import celery_broker, require_component
from tests.factories import MembershipFactory, UserFactory
from tests.waiting import wait_until
from tests.webhook_receiver import Receiver, receiving
from tests.workers import BROKER, redis_reachable, worker_start

pytestmark = pytest.mark.celery


@pytest.fixture
def worker(transactional_db: None, settings) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    if not redis_reachable():
        require_component(f"Redis is not reachable at {BROKER}")
    queue = f"ndcg-test-webhooks-{os.getpid()}"
    process = worker_start(
        queue,
        # The worker's own retries go to the queue it reads, as a webhooks worker's do.
        {
            "NDCG_WEBHOOK_ALLOW_PRIVATE": "true",
            "TEST_WORKER_CONSTANTS": json.dumps(
                {"annotations.services.webhooks.RETRY_SECONDS": [0.3, 0.3, 0.3]}
            ),
            "TEST_WORKER_QUEUE": queue,
        },
        without=["DJANGO_CACHE_URL"],
    )
    settings.CELERY_BROKER_URL = BROKER
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    try:
        with celery_broker(BROKER, task_default_queue=queue):
            yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_worker_delivers_what_judgements_wrote_and_retries_a_failure(
    trial: Collection, worker: subprocess.Popen[bytes]
) -> None:
    first_fails = Receiver(answer=lambda count, wid: (500, {}) if count == 0 else (204, {}))
    with receiving(first_fails) as receiver:
        subscription = subscription_create(
            collection=trial, url=receiver.url, events=["judgement.created"], created_by=None
        )
        token, _ = Token.objects.get_or_create(user=UserFactory(username="api-olga"))
        MembershipFactory(collection=trial, user=token.user, role="organiser")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        for docno in ("d1", "d2", "d3"):
            response = client.post(
                "/api/v1/collections/trial/judgements/",
                {"qid": "q2", "docno": docno, "grade": 1},
                format="json",
            )
            assert response.status_code == 201, response.content
        wait_until(
            lambda: (
                subscription.deliveries.count() == 3
                and not WebhookDelivery.objects.exclude(state="delivered").exists()
            ),
            "the worker delivered every judgement",
            seconds=60,
        )
        events = receiver.verified(subscription.secret)
    assert sorted(item.event["data"]["docno"] for item in receiver.delivered()) == [
        "d1",
        "d2",
        "d3",
    ]
    assert len(events) == 4  # one retry, after the 500
    delivered = [item.webhook_id for item in receiver.delivered()]
    assert len(set(delivered)) == 3 and receiver.received[0].webhook_id in delivered
