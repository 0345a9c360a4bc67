"""Idempotency-Key on API writes: a retry answers the first answer and changes nothing more."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import services
from annotations.idempotency import KEEP_HOURS
from annotations.models import (
    Collection,
    IdempotentResponse,
    Judgement,
    JudgementHistory,
    Membership,
    Run,
)
from tests.factories import UserFactory

API = "/api/v1/collections/idem"


def _client(user: Any) -> APIClient:
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _collection() -> tuple[Collection, dict[str, Any]]:
    cache.clear()  # throttle counters
    collection = services.collection_create(slug="idem", cutoffs=[10])
    users = {name: UserFactory(username=name) for name in ("olga", "alice", "bob")}
    for name, role in (("olga", "organiser"), ("alice", "assessor"), ("bob", "assessor")):
        Membership.objects.create(collection=collection, user=users[name], role=role)
    services.queries_store(collection=collection, queries=[services.QueryFields("q1", "first")])
    services.documents_store(
        collection=collection,
        documents=[services.DocumentFields(f"d{i}", f"doc {i}") for i in (1, 2)],
    )
    return collection, users


@pytest.fixture
def idem(db: None) -> tuple[Collection, dict[str, Any]]:
    return _collection()


def _judge(client: APIClient, key: str | None, grade: int, docno: str = "d1") -> Any:
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    body = {"qid": "q1", "docno": docno, "grade": grade}
    return client.post(f"{API}/judgements/", body, format="json", **headers)


def test_a_retried_judgement_answers_the_same_and_writes_once(idem: Any) -> None:
    _, users = idem
    alice = _client(users["alice"])
    first = _judge(alice, "grade-1", 2)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first
    retry = _judge(alice, "grade-1", 2)
    assert retry.status_code == 201 and retry["Idempotent-Replayed"] == "true"
    assert retry.content == first.content and retry["Content-Type"] == first["Content-Type"]
    assert JudgementHistory.objects.count() == 1  # one effect, not two
    # without the key the same body is a second write (an update, 200)
    assert _judge(alice, None, 2).status_code == 200


def test_the_same_key_for_another_request_is_a_422_and_changes_nothing(idem: Any) -> None:
    _, users = idem
    alice = _client(users["alice"])
    assert _judge(alice, "k", 2).status_code == 201
    reused = _judge(alice, "k", 3)
    assert reused.status_code == 422
    assert reused.json()["error"]["code"] == "idempotency_key_reused"
    assert Judgement.objects.get().grade == 2
    other_path = alice.delete(f"{API}/judgements/q1/d1/", HTTP_IDEMPOTENCY_KEY="k")
    assert other_path.status_code == 422 and Judgement.objects.count() == 1


def test_keys_are_per_caller(idem: Any) -> None:
    _, users = idem
    assert _judge(_client(users["alice"]), "shared", 1).status_code == 201
    bob = _judge(_client(users["bob"]), "shared", 1)
    assert bob.status_code == 201 and "Idempotent-Replayed" not in bob
    assert Judgement.objects.count() == 2


def test_an_error_is_not_kept_so_a_corrected_retry_runs(idem: Any) -> None:
    _, users = idem
    alice = _client(users["alice"])
    wrong = _judge(alice, "k2", 2, docno="missing")
    assert wrong.status_code == 400 and not IdempotentResponse.objects.exists()
    assert _judge(alice, "k2", 2).status_code == 201  # a different body: nothing was stored


def test_a_retried_delete_answers_204_again_not_404(idem: Any) -> None:
    _, users = idem
    alice = _client(users["alice"])
    _judge(alice, None, 1)
    for _ in range(2):
        gone = alice.delete(f"{API}/judgements/q1/d1/", HTTP_IDEMPOTENCY_KEY="del-1")
        assert gone.status_code == 204
    assert gone["Idempotent-Replayed"] == "true"
    assert alice.delete(f"{API}/judgements/q1/d1/").status_code == 404


def test_a_retried_run_upload_creates_one_run(idem: Any) -> None:
    _, users = idem
    olga = _client(users["olga"])

    def upload() -> Any:
        run = SimpleUploadedFile("r.txt", b"q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 1.0 mine\n")
        return olga.post(
            f"{API}/runs/", {"file": run}, format="multipart", HTTP_IDEMPOTENCY_KEY="upload-7"
        )

    first, retry = upload(), upload()
    assert first.status_code == 201, first.content
    assert retry.status_code == 201 and retry.json() == first.json()
    assert retry["Idempotent-Replayed"] == "true"
    assert list(Run.objects.values_list("name", flat=True)) == ["mine"]
    assert "Location" not in first or retry["Location"] == first["Location"]


def test_bad_keys_are_a_400_and_expired_keys_are_forgotten(idem: Any, settings: Any) -> None:
    _, users = idem
    alice = _client(users["alice"])
    for bad in ("with space", "x" * 256, "é"):
        response = alice.post(
            f"{API}/judgements/",
            {"qid": "q1", "docno": "d1", "grade": 1},
            format="json",
            HTTP_IDEMPOTENCY_KEY=bad,
        )
        assert response.status_code == 400, bad
        assert "Idempotency-Key" in response.json()["error"]["fields"]
    assert _judge(alice, "old", 1).status_code == 201
    IdempotentResponse.objects.update(created=timezone.now() - timedelta(hours=KEEP_HOURS + 1))
    again = _judge(alice, "old", 1)
    assert again.status_code == 200 and "Idempotent-Replayed" not in again  # ran again
    from annotations.idempotency import purge_expired

    IdempotentResponse.objects.update(created=timezone.now() - timedelta(hours=25))
    assert purge_expired() == 1 and not IdempotentResponse.objects.exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="terminates a PostgreSQL backend")
def test_a_judgement_whose_connection_died_after_commit_is_retried_to_its_answer(
    transactional_db: None, monkeypatch: Any
) -> None:
    """The judgement commits, then the server's database connection is terminated (as by
    pg_terminate_backend) before the answer is made: the client gets a 500 and cannot tell
    whether its write happened. The retry with the same key answers the committed write's
    own 201, and the judgement exists once."""
    import psycopg
    from django.db import connection as django_connection

    from annotations.scores import scheduling

    _, users = _collection()
    settings_dict = django_connection.settings_dict

    def terminate_own_backend(*args: Any, **options: Any) -> None:
        pid = django_connection.connection.info.backend_pid
        conninfo = psycopg.conninfo.make_conninfo(
            host=settings_dict["HOST"] or "127.0.0.1",
            port=settings_dict["PORT"] or 5432,
            user=settings_dict["USER"],
            dbname=settings_dict["NAME"],
        )
        with psycopg.connect(conninfo, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])
        with django_connection.cursor() as cursor:
            cursor.execute("SELECT 1")  # the dead connection: OperationalError

    monkeypatch.setattr(scheduling, "_publish", terminate_own_backend)
    alice = _client(users["alice"])
    alice.raise_request_exception = False
    cut = _judge(alice, "after-commit", 3)
    assert cut.status_code == 500
    django_connection.close()  # the test client keeps the broken connection; a server does not
    monkeypatch.setattr(scheduling, "_publish", lambda *args, **options: None)
    retry = _judge(alice, "after-commit", 3)
    assert retry.status_code == 201 and retry["Idempotent-Replayed"] == "true"
    assert retry.json()["grade"] == 3
    assert Judgement.objects.count() == 1 and JudgementHistory.objects.count() == 1


def test_a_201_names_the_created_resource_in_location_and_a_retry_repeats_it(idem: Any) -> None:
    _, users = idem
    alice = _client(users["alice"])
    first = _judge(alice, "located", 2)
    assert first.status_code == 201
    assert first["Location"] == "http://testserver/api/v1/collections/idem/judgements/q1/d1/"
    assert alice.get(first["Location"]).status_code == 200
    assert _judge(alice, "located", 2)["Location"] == first["Location"]  # the replay's too
    olga = _client(users["olga"])
    run = olga.put(
        f"{API}/runs/manual~2Fv1/results/",
        {"results": [{"qid": "q1", "docno": "d1", "rank": 1}]},
        format="json",
    )
    assert run.status_code == 201, run.content
    assert run["Location"].endswith("/api/v1/collections/idem/runs/manual~2Fv1/")
    assert olga.get(run["Location"]).status_code == 200
    made = olga.post("/api/v1/collections/", {"slug": "made", "cutoffs": [10]}, format="json")
    assert made.status_code == 201 and made["Location"].endswith("/api/v1/collections/made/")


def test_every_so_many_keys_claimed_forget_the_expired_ones_of_everybody(
    idem: Any, monkeypatch: Any
) -> None:
    from annotations import idempotency

    _, users = idem
    monkeypatch.setattr(idempotency, "SWEEP_EVERY", 1)
    assert _judge(_client(users["bob"]), "bob-old", 1).status_code == 201
    IdempotentResponse.objects.update(created=timezone.now() - timedelta(hours=25))
    assert _judge(_client(users["alice"]), "alice-new", 2).status_code == 201
    assert list(IdempotentResponse.objects.values_list("key", flat=True)) == ["alice-new"]
