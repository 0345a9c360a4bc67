"""The production server's own answers under /api/ (gunicorn with the project's config): a
request line or header fields too long, and request bodies sent in chunks."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from annotations import services
from annotations.models import Membership, Run
from tests.factories import UserFactory
from tests.workers import database_url, gunicorn_serving

MAX_UPLOAD_MB = 1
RUN_FILE = b"q1 Q0 d1 1 9 chunked\nq1 Q0 d2 2 8 chunked\n"


@pytest.fixture(scope="module")
def server(django_db_setup: None, django_db_blocker: Any) -> Iterator[int]:
    """gunicorn as `make serve` runs it, on the test database, uploads limited to 1 MB."""
    with django_db_blocker.unblock():
        database = database_url()
    with gunicorn_serving(database, {"NDCG_MAX_UPLOAD_MB": str(MAX_UPLOAD_MB)}) as port:
        yield port


def _exchange(port: int, request: bytes) -> tuple[int, str, bytes]:
    """Sends raw bytes; the answer's status, Content-Type and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        response = http.client.HTTPResponse(connection)
        response.begin()
        return response.status, response.getheader("Content-Type", ""), response.read()


def _error(answer: tuple[int, str, bytes], status: int) -> dict[str, Any]:
    got, content_type, body = answer
    assert got == status, body[:500]
    assert content_type == "application/json", body[:500]
    error: dict[str, Any] = json.loads(body)["error"]
    assert error["status"] == status and error["fields"] == {}
    return error


def _chunked(body: bytes, size: int = 64 * 1024) -> bytes:
    pieces = [body[start : start + size] for start in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


def _request(method: str, target: str, *headers: str, body: bytes = b"") -> bytes:
    head = "".join(f"{header}\r\n" for header in ("Host: 127.0.0.1", *headers))
    return f"{method} {target} HTTP/1.1\r\n{head}\r\n".encode() + body


def test_a_request_line_over_gunicorns_limit_is_a_414_in_the_error_shape_under_api(
    server: int,
) -> None:
    long = "?title=" + "x" * 5000
    error = _error(_exchange(server, _request("GET", f"/api/v1/collections/{long}")), 414)
    assert error["code"] == "request_target_too_long"
    assert "4,094 bytes" in error["detail"]
    absolute = f"http://127.0.0.1/api/v1/collections/{long}"
    assert _error(_exchange(server, _request("DELETE", absolute)), 414)["code"] == (
        "request_target_too_long"
    )
    # a page keeps gunicorn's own HTML answer
    status, content_type, body = _exchange(server, _request("GET", f"/collections/{long}"))
    assert status == 414 and content_type == "text/html" and b"URI Too Long" in body


def test_header_fields_over_gunicorns_limit_are_a_431_in_the_error_shape_under_api(
    server: int,
) -> None:
    big = "X-Big: " + "y" * 9000
    error = _error(_exchange(server, _request("GET", "/api/v1/collections/", big)), 431)
    assert error["code"] == "request_header_fields_too_large"
    assert "8,190 bytes" in error["detail"]
    status, content_type, _ = _exchange(server, _request("GET", "/", big))
    assert status == 431 and content_type == "text/html"


def _multipart(content: bytes) -> tuple[str, bytes]:
    boundary = "chunked-upload-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.run"\r\n'
            f"Content-Type: text/plain\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return f"Content-Type: multipart/form-data; boundary={boundary}", body


@pytest.fixture
def organiser_token(transactional_db: None) -> str:
    collection = services.collection_create(slug="chunked", cutoffs=[5])
    user = UserFactory(username="organiser")
    Membership.objects.create(collection=collection, user=user, role="organiser")
    return str(Token.objects.create(user=user).key)


def test_a_run_uploaded_in_chunks_is_stored_and_one_over_the_limit_is_a_413(
    server: int, organiser_token: str
) -> None:
    runs = "/api/v1/collections/chunked/runs/"
    auth = f"Authorization: Token {organiser_token}"
    chunked = "Transfer-Encoding: chunked"
    content_type, body = _multipart(RUN_FILE)
    sent = _request("POST", runs, auth, content_type, chunked, body=_chunked(body, size=16))
    status, _, answer = _exchange(server, sent)
    assert status == 201, answer[:500]
    assert Run.objects.get(collection__slug="chunked").name == "chunked"
    # over the limit: refused before a byte of it reaches a view, the limit named
    big = RUN_FILE * (MAX_UPLOAD_MB * 1024 * 1024 // len(RUN_FILE) + 1)
    content_type, body = _multipart(big)
    sent = _request("POST", runs, auth, content_type, chunked, body=_chunked(body))
    error = _error(_exchange(server, sent), 413)
    assert error["code"] == "upload_too_large"
    assert error["detail"] == f"The upload exceeds {MAX_UPLOAD_MB} MB."
    # the same file with its length declared: the view's 413, in the same words
    declared = _request("POST", runs, auth, content_type, f"Content-Length: {len(body)}", body=body)
    assert _error(_exchange(server, declared), 413)["detail"] == error["detail"]


def test_a_json_body_sent_in_chunks_reaches_the_view(server: int, transactional_db: None) -> None:
    UserFactory(username="scripter", password="right-password-1")
    credentials = json.dumps({"username": "scripter", "password": "right-password-1"}).encode()
    headers = ("Content-Type: application/json", "Transfer-Encoding: chunked")
    sent = _request("POST", "/api/v1/token/", *headers, body=_chunked(credentials, size=7))
    status, _, answer = _exchange(server, sent)
    assert status == 200, answer[:500]
    assert json.loads(answer)["token"] == Token.objects.get(user__username="scripter").key
