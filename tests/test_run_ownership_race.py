"""Two real concurrent requests: a system owner's slow PUT never replaces a run that another
owner created meanwhile (ownership is decided on the locked row, inside the transaction)."""

import http.client
import threading
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest
from rest_framework.authtoken.models import Token

from annotations import serializers as api_serializers
from annotations.models import Membership, Ranking, Run
from tests.factories import CollectionFactory, UserFactory


def _multipart(name: str, content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: text/plain\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def _put(base: str, token: str, path: str, content: bytes) -> tuple[int, bytes]:
    parts = urlsplit(base)
    body, content_type = _multipart("run.txt", content)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request(
            "PUT",
            path,
            body=body,
            headers={"Authorization": f"Token {token}", "Content-Type": content_type},
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_slow_put_by_another_owner_is_refused_not_a_replacement(
    live_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    collection = CollectionFactory(slug="race")
    owner_a, owner_b = UserFactory(username="owner-a"), UserFactory(username="owner-b")
    tokens = {}
    for user in (owner_a, owner_b):
        Membership.objects.create(collection=collection, user=user, role="owner")
        tokens[user.username] = Token.objects.create(user=user).key
    path = "/api/v1/collections/race/runs/shared/"

    # B's request pauses once it is past every check made before its body is read.
    reading, release = threading.Event(), threading.Event()
    real = api_serializers.RunUploadSerializer.is_valid

    def paused(self: Any, *args: Any, **kwargs: Any) -> bool:
        upload = self.initial_data["file"]
        is_b = b" B\n" in upload.read()
        upload.seek(0)
        if is_b:
            reading.set()
            release.wait(timeout=30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(api_serializers.RunUploadSerializer, "is_valid", paused)
    result_b: dict[str, Any] = {}

    def request_b() -> None:
        result_b["response"] = _put(live_server.url, tokens["owner-b"], path, b"q1 Q0 dB 1 1.0 B\n")

    thread = threading.Thread(target=request_b)
    thread.start()
    try:
        assert reading.wait(timeout=30)
        status_a, body_a = _put(live_server.url, tokens["owner-a"], path, b"q1 Q0 dA 1 1.0 A\n")
        assert status_a == 201, body_a
    finally:
        release.set()
        thread.join(timeout=60)
    status_b, body_b = result_b["response"]
    assert status_b == 403, body_b
    run = Run.objects.get(collection=collection, name="shared")
    assert run.owner == owner_a
    ranking = Ranking.objects.get(run=run)
    assert ranking.size == 1
    assert collection.documents.get(id=ranking.document_ids()[0]).docno == "dA"
