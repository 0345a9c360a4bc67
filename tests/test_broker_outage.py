"""A broker outage: writes that committed answer 2xx at their normal speed, their scores stay
pending, and the sweep heals them once the broker is back."""

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import scores, services
from annotations.models import Collection, Judgement, Membership, Query
from tests.conftest import celery_broker, require_component
from tests.factories import CollectionFactory, UserFactory

QRELS = "q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\n"
RUN = "q1 Q0 d2 1 9 sys\nq1 Q0 d1 2 8 sys\nq2 Q0 d3 1 3 sys\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def own_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Redis of this test's own (never the shared one), to be stopped by the test."""
    executable = shutil.which("redis-server")
    if executable is None:
        require_component("redis-server is not installed")
    port = _free_port()
    server = subprocess.Popen(
        [
            str(executable),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0", server
    server.kill()
    server.wait()


@pytest.fixture
def collection(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    collection = CollectionFactory(slug="outage", cutoffs=[2])
    services.judgements_import(
        collection=collection, source=write_file("o.qrels", QRELS), assessor=UserFactory()
    )
    services.run_import(collection=collection, source=write_file("o.run", RUN))
    return collection


def test_a_judgement_answers_201_at_once_with_the_broker_down_and_the_sweep_heals_it(
    collection: Collection, own_redis: tuple[str, subprocess.Popen[bytes]], settings: Any
) -> None:
    url, server = own_redis
    assessor = UserFactory()
    Membership.objects.create(collection=collection, user=assessor, role="assessor")
    token, _ = Token.objects.get_or_create(user=assessor)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    settings.CELERY_BROKER_URL = url
    with celery_broker(url):
        server.kill()
        server.wait()
        started = time.monotonic()
        response = client.post(
            "/api/v1/collections/outage/judgements/",
            {"qid": "q1", "docno": "d2", "grade": 0},
            format="json",
        )
        elapsed = time.monotonic() - started
    assert response.status_code == 201, response.content
    assert response.json()["pending"] is True  # the API says the scores are not stored yet
    # Before: about 20 s of connection retries, then a 500 for a committed write.
    assert elapsed < 5.0, elapsed
    assert Judgement.objects.filter(assessor=assessor, grade=0).exists()
    query = Query.objects.get(collection=collection, qid="q1")
    assert query.scores_pending
    # the broker is back (here: the sweep runs in this process) and heals what was left
    assert scores.scores_sweep_stale(collection=collection) == 1
    query.refresh_from_db()
    assert not query.scores_pending
