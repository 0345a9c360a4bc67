"""The OpenAPI schema is valid and every response of a scripted API session conforms to it."""

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from openapi_core import Config, OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest
from openapi_core.testing import MockRequest, MockResponse
from rest_framework.test import APIClient

from annotations.models import Collection, Membership
from tests.factories import UserFactory

Capture = Callable[..., AbstractContextManager[Any]]
DEMO = "/api/v1/collections/demo"


@pytest.fixture(autouse=True)
def _fast(settings: Any) -> Iterator[None]:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


class Session:
    """An API client that checks every response against the schema and notes what it hit."""

    def __init__(self, spec: OpenAPI) -> None:
        self.spec = spec
        self.seen: set[tuple[str, str, int]] = set()

    def call(self, user: Any, method: str, path: str, status: int, **kwargs: Any) -> Any:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        response = getattr(client, method)(path, **kwargs)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert response.status_code == status, (method, path, body)
        request = response.wsgi_request
        route = DjangoOpenAPIRequest(request).path_pattern
        content_type = response.get("Content-Type", "").split(";")[0] or "application/json"
        self.spec.validate_response(
            MockRequest("http://testserver", method, request.path, args=dict(request.GET.items())),
            MockResponse(
                body,
                status_code=response.status_code,
                content_type=content_type,
                headers=dict(response.headers),
            ),
        )
        self.seen.add((route or "", method, status))
        return response


def test_schema_is_valid_openapi_3(client: Any, db: None) -> None:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    spec = OpenAPI.from_dict(response.json())  # validates the document itself
    assert spec is not None
    assert client.get("/api/docs/").status_code == 200


def test_every_response_of_a_scripted_session_matches_the_schema(
    client: Any,
    db: None,
    django_capture_on_commit_callbacks: Capture,
    write_file: Callable[..., Any],
    settings: Any,
) -> None:
    schema = client.get("/api/schema/?format=json").json()

    # The reports are text (CSV, LaTeX): read as text, as text/plain is, not as bytes.
    def as_text(data: bytes, **_: Any) -> str:
        return data.decode("utf-8")

    text = dict.fromkeys(("text/csv", "application/x-tex"), as_text)
    session = Session(OpenAPI.from_dict(schema, config=Config(extra_media_type_deserializers=text)))
    call = session.call
    staff = UserFactory(username="staff", is_staff=True)
    organiser, assessor, owner, stranger = (
        UserFactory(username=name) for name in ("org", "ann", "sys", "nobody")
    )
    with django_capture_on_commit_callbacks(execute=True):
        call(
            staff,
            "post",
            "/api/v1/collections/",
            201,
            data={"slug": "demo", "cutoffs": [2, 10]},
            format="json",
        )
        call(staff, "post", "/api/v1/collections/", 400, data={"slug": "demo"}, format="json")
        call(owner, "post", "/api/v1/collections/", 403, data={"slug": "x"}, format="json")
        call(None, "get", "/api/v1/collections/", 401)
        collection = Collection.objects.get(slug="demo")
        for user, role in ((organiser, "organiser"), (assessor, "assessor"), (owner, "owner")):
            Membership.objects.create(collection=collection, user=user, role=role)
        call(organiser, "get", "/api/v1/collections/", 200)
        call(assessor, "get", f"{DEMO}/", 200)
        call(stranger, "get", f"{DEMO}/", 404)
        call(organiser, "patch", f"{DEMO}/", 200, data={"description": "d"}, format="json")
        call(organiser, "patch", f"{DEMO}/", 400, data={"cutoffs": []}, format="json")
        call(assessor, "patch", f"{DEMO}/", 403, data={"description": "d"}, format="json")

        queries = [{"qid": "q1", "title": "one"}, {"qid": "q2"}]
        call(organiser, "post", f"{DEMO}/queries/", 201, data=queries, format="json")
        call(organiser, "post", f"{DEMO}/queries/", 400, data=[{"qid": "a b"}], format="json")
        call(owner, "post", f"{DEMO}/queries/", 403, data=queries, format="json")
        call(owner, "get", f"{DEMO}/queries/?judged=false&limit=1", 200)
        docs = [{"docno": f"d{i}", "title": f"doc {i}"} for i in range(1, 5)]
        call(organiser, "post", f"{DEMO}/documents/", 201, data=docs, format="json")
        call(organiser, "post", f"{DEMO}/documents/", 400, data=[{"docno": ""}], format="json")
        call(assessor, "get", f"{DEMO}/documents/?docno=d1", 200)

        trec = b"q1 Q0 d1 1 2.0 sys\nq1 Q0 d3 2 1.0 sys\nq2 Q0 d2 1 1.0 sys\n"
        upload = {"file": SimpleUploadedFile("sys.run", trec)}
        call(owner, "post", f"{DEMO}/runs/", 201, data=upload, format="multipart")
        bad = {"file": SimpleUploadedFile("bad.run", b"q1 Q0 d1 x 2.0 sys\n")}
        call(owner, "post", f"{DEMO}/runs/", 400, data=bad, format="multipart")
        results = [
            {"qid": "q1", "docno": "d2", "score": 3.5},
            {"qid": "q2", "docno": "d2", "score": 1},
        ]
        json_run = {"results": results}
        call(organiser, "put", f"{DEMO}/runs/org/results/", 201, data=json_run, format="json")
        call(assessor, "put", f"{DEMO}/runs/x/results/", 403, data=json_run, format="json")
        call(owner, "put", f"{DEMO}/runs/sys/results/", 200, data=json_run, format="json")
        call(owner, "put", f"{DEMO}/runs/new/results/", 201, data=json_run, format="json")
        call(owner, "put", f"{DEMO}/runs/org/results/", 403, data=json_run, format="json")
        call(owner, "put", f"{DEMO}/runs/sys/results/", 400, data={"results": []}, format="json")
        upload = {"file": SimpleUploadedFile("sys.run", trec)}
        call(owner, "put", f"{DEMO}/runs/sys/", 200, data=upload, format="multipart")
        call(owner, "post", f"{DEMO}/runs/", 415, data=json_run, format="json")
        call(owner, "get", f"{DEMO}/runs/?owner=sys", 200)
        call(owner, "get", f"{DEMO}/runs/sys/", 200)
        call(owner, "get", f"{DEMO}/runs/ghost/", 404)
        call(assessor, "get", f"{DEMO}/runs/?owner=sys", 404)  # assessors are blinded
        call(owner, "delete", f"{DEMO}/runs/new/", 204)
        call(owner, "delete", f"{DEMO}/runs/org/", 403)

        judgement = {"qid": "q1", "docno": "d1", "grade": 2}
        call(assessor, "post", f"{DEMO}/judgements/", 201, data=judgement, format="json")
        call(
            assessor,
            "post",
            f"{DEMO}/judgements/",
            200,
            data={**judgement, "grade": 3},
            format="json",
        )
        call(
            assessor,
            "post",
            f"{DEMO}/judgements/",
            400,
            data={**judgement, "grade": 9},
            format="json",
        )
        call(owner, "post", f"{DEMO}/judgements/", 403, data=judgement, format="json")
        call(
            assessor,
            "post",
            f"{DEMO}/judgements/",
            201,
            data={"qid": "q2", "docno": "d2", "grade": 1},
            format="json",
        )
        call(organiser, "get", f"{DEMO}/judgements/?qid=q1&grade_min=1", 200)
        call(assessor, "get", f"{DEMO}/judgements/q1/d1/", 200)
        call(assessor, "get", f"{DEMO}/judgements/q1/d4/", 404)
        call(assessor, "get", f"{DEMO}/judgements/q1/d1/?assessor=org", 403)
        call(
            assessor,
            "post",
            f"{DEMO}/judgements/",
            201,
            data={"qid": "q1", "docno": "d4", "grade": 0},
            format="json",
        )
        call(assessor, "delete", f"{DEMO}/judgements/q1/d4/", 204)
        call(organiser, "get", f"{DEMO}/qrels/", 200)
        topics = {"file": SimpleUploadedFile("t.tsv", b"q3\tthird\n")}
        call(organiser, "post", f"{DEMO}/imports/topics/", 200, data=topics, format="multipart")
        docs = {"file": SimpleUploadedFile("d.jsonl", b'{"docno": "d9", "text": "nine"}\n')}
        call(organiser, "post", f"{DEMO}/imports/documents/", 200, data=docs, format="multipart")
        qrels = {"file": SimpleUploadedFile("x.qrels", b"q3 0 d9 1\n")}
        call(organiser, "post", f"{DEMO}/imports/qrels/", 200, data=qrels, format="multipart")
        bad = {"file": SimpleUploadedFile("x.qrels", b"q3 0 d9 one\n")}
        call(organiser, "post", f"{DEMO}/imports/qrels/", 400, data=bad, format="multipart")
        qrels = {"file": SimpleUploadedFile("x.qrels", b"q3 0 d9 1\n")}
        call(assessor, "post", f"{DEMO}/imports/qrels/", 403, data=qrels, format="multipart")
        call(owner, "get", f"{DEMO}/qrels/", 403)

    call(owner, "get", f"{DEMO}/leaderboard/?k=2", 200)
    call(owner, "get", f"{DEMO}/leaderboard/?k=3", 400)
    call(None, "get", f"{DEMO}/leaderboard/", 401)
    call(owner, "get", f"{DEMO}/leaderboard/report/?k=2&as=csv", 200)
    call(owner, "get", f"{DEMO}/leaderboard/report/?as=latex", 200)
    call(owner, "get", f"{DEMO}/leaderboard/report/?as=pdf", 400)
    call(None, "get", f"{DEMO}/leaderboard/report/?as=csv", 401)
    call(owner, "get", f"{DEMO}/runs/sys/scores/?k=10", 200)
    call(owner, "get", f"{DEMO}/runs/ghost/scores/", 404)
    call(organiser, "get", f"{DEMO}/compare/?a=sys&b=org&k=2", 200)
    call(owner, "get", f"{DEMO}/compare/?a=sys&b=org&k=2", 404)  # not the owner of org
    call(owner, "get", f"{DEMO}/compare/?a=sys", 400)
    call(organiser, "get", f"{DEMO}/sensitivity/?k=2", 200)
    tag = {"name": "round-1", "note": "first"}
    call(organiser, "post", f"{DEMO}/versions/", 201, data=tag, format="json")
    call(organiser, "post", f"{DEMO}/versions/", 400, data=tag, format="json")
    call(assessor, "post", f"{DEMO}/versions/", 403, data=tag, format="json")
    call(organiser, "get", f"{DEMO}/versions/", 200)
    call(organiser, "get", f"{DEMO}/versions/round-1/qrels/", 200)
    call(organiser, "get", f"{DEMO}/versions/ghost/qrels/", 404)
    call(organiser, "get", f"{DEMO}/versions/round-1/leaderboard/?k=2", 200)
    call(organiser, "get", f"{DEMO}/versions/round-1/leaderboard/?k=3", 400)
    call(organiser, "get", f"{DEMO}/versions-diff/?a=round-1&b=round-1&k=2", 200)
    call(organiser, "get", f"{DEMO}/versions-diff/?a=round-1", 400)
    call(organiser, "get", f"{DEMO}/as-of/qrels/?at=2100-01-01T00:00:00Z", 200)
    call(organiser, "get", f"{DEMO}/as-of/qrels/?at=yesterday", 400)
    call(organiser, "get", f"{DEMO}/as-of/leaderboard/?at=2100-01-01T00:00:00Z&k=2", 200)
    call(assessor, "get", f"{DEMO}/as-of/leaderboard/?at=2100-01-01T00:00:00Z", 403)
    call(assessor, "get", f"{DEMO}/sensitivity/", 403)
    UserFactory(username="scripter", password="right-password-1")
    credentials = {"username": "scripter", "password": "right-password-1"}
    call(None, "post", "/api/v1/token/", 200, data=credentials, format="json")
    wrong = {**credentials, "password": "wrong"}
    call(None, "post", "/api/v1/token/", 401, data=wrong, format="json")
    call(None, "post", "/api/v1/token/", 400, data={}, format="json")
    call(stranger, "delete", "/api/v1/token/", 204)
    call(None, "delete", "/api/v1/token/", 401)
    settings.NDCG_MAX_UPLOAD_MB = 1
    big = {"file": SimpleUploadedFile("big.run", trec * 80_000)}
    call(owner, "post", f"{DEMO}/runs/", 413, data=big, format="multipart")

    operations = {
        (path, method)
        for path, item in schema["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }
    hit = {(path, method) for path, method, _ in session.seen}
    assert operations <= hit, f"never called: {sorted(operations - hit)}"


def test_interactive_docs_are_served_from_this_server(client: Any, db: None) -> None:
    """The docs page loads Swagger UI from our static files: it works with no network."""
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert (
        client.get(
            "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"
        ).status_code
        == 200
    )
