"""The OpenAPI schema is valid and every response of a scripted API session conforms to it."""

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from openapi_core import Config, OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest
from openapi_core.testing import MockRequest, MockResponse
from rest_framework.test import APIClient

from annotations import services
from annotations.models import Collection, MachineJudge, Membership, Run, SearchSystem
from tests.factories import UserFactory
from tests.search_engine import search_engine

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


def test_every_list_is_answered_in_pages_of_one_shape(client: Any, db: None) -> None:
    """A generated client needs no special case: every GET whose answer is a list answers
    `count`, `next`, `previous` and `results`, with `limit` and `offset`."""
    schema = client.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    plain, paged = [], []
    for path, item in schema["paths"].items():
        operation = item.get("get")
        if operation is None:
            continue
        body = operation["responses"].get("200", {}).get("content", {}).get("application/json")
        if body is None:
            continue
        found = body["schema"]
        if "$ref" in found:
            found = components[found["$ref"].rsplit("/", 1)[1]]
        if found.get("type") == "array":
            plain.append(path)
        elif set(found.get("properties", {})) == {"count", "next", "previous", "results"}:
            names = {parameter["name"] for parameter in operation.get("parameters", [])}
            assert {"limit", "offset"} <= names, path
            paged.append(path)
    assert plain == []
    assert len(paged) >= 18  # the lists that were plain arrays among them
    for name in ("assignments", "disagreements", "adjudications", "members", "pools", "versions"):
        assert any(path.endswith(f"/{name}/") for path in paged), name


def test_every_response_of_a_scripted_session_matches_the_schema(
    client: Any,
    db: None,
    django_capture_on_commit_callbacks: Capture,
    write_file: Callable[..., Any],
    settings: Any,
    tmp_path: Path,
    local_dataset: str,
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
        measures = {"measures": ["AP", "P@2"]}
        call(organiser, "patch", f"{DEMO}/", 200, data=measures, format="json")
        call(organiser, "patch", f"{DEMO}/", 400, data={"measures": ["P@x"]}, format="json")
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
        settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
        job_upload = {"kind": "run", "file": SimpleUploadedFile("job.run", trec), "name": "job"}
        job = call(owner, "post", f"{DEMO}/import-jobs/", 202, data=job_upload, format="multipart")
        call(owner, "get", job["Location"], 200)
        call(organiser, "get", f"{DEMO}/import-jobs/?state=done&limit=1", 200)
        bare = {"kind": "topics", "file": SimpleUploadedFile("t.tsv", b"q9\tnine\n")}
        call(owner, "post", f"{DEMO}/import-jobs/", 403, data=bare, format="multipart")
        call(assessor, "get", f"{DEMO}/import-jobs/", 403)
        standard = f"{DEMO}/imports/ir-datasets/"
        topics_only = {"dataset": local_dataset, "parts": ["queries"]}
        job = call(organiser, "post", standard, 202, data=topics_only, format="json")
        call(organiser, "get", job["Location"], 200)
        call(organiser, "post", standard, 400, data={"dataset": "no-such/set"}, format="json")
        call(owner, "post", standard, 403, data=topics_only, format="json")
        call(organiser, "get", f"{DEMO}/runs-zip/", 200)
        call(owner, "get", f"{DEMO}/runs-zip/", 403)

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
    call(owner, "get", f"{DEMO}/runs/sys/scores/?measure=AP", 200)
    call(owner, "get", f"{DEMO}/runs/sys/scores/?measure=RR", 400)
    call(owner, "get", f"{DEMO}/leaderboard/?k=2&measure=P@2", 200)
    call(owner, "get", f"{DEMO}/leaderboard/?measure=nope", 400)
    call(owner, "get", f"{DEMO}/runs/ghost/scores/", 404)
    call(organiser, "get", f"{DEMO}/compare/?a=sys&b=org&k=2", 200)
    call(owner, "get", f"{DEMO}/compare/?a=sys&b=org&k=2", 404)  # not the owner of org
    call(owner, "get", f"{DEMO}/compare/?a=sys", 400)
    call(organiser, "get", f"{DEMO}/sensitivity/?k=2", 200)
    assert call(organiser, "get", f"{DEMO}/machine-grades/?k=2", 200).json()["rules"] == []
    tag = {"name": "round-1", "note": "first"}
    call(organiser, "post", f"{DEMO}/versions/", 201, data=tag, format="json")
    call(organiser, "post", f"{DEMO}/versions/", 400, data=tag, format="json")
    call(assessor, "post", f"{DEMO}/versions/", 403, data=tag, format="json")
    call(organiser, "get", f"{DEMO}/versions/", 200)
    call(organiser, "get", f"{DEMO}/versions/round-1/", 200)
    call(assessor, "get", f"{DEMO}/versions/round-1/", 403)
    call(organiser, "get", f"{DEMO}/versions/ghost/", 404)
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
    # The judging campaign: pools, assignments, members and accounts, adjudication, history.
    pool = {"name": "main", "depth": 2}
    built = call(organiser, "post", f"{DEMO}/pools/", 201, data=pool, format="json").json()
    call(organiser, "post", f"{DEMO}/pools/", 400, data=pool, format="json")
    call(assessor, "post", f"{DEMO}/pools/", 403, data=pool, format="json")
    call(organiser, "get", f"{DEMO}/pools/", 200)
    call(organiser, "get", f"{DEMO}/pools/{built['id']}/", 200)
    call(organiser, "get", f"{DEMO}/pools/0/", 404)
    extend = {"depth": 3, "runs": ["sys"]}
    call(organiser, "post", f"{DEMO}/pools/{built['id']}/extend/", 200, data=extend, format="json")
    assign = {"assessors": ["ann"], "overlap": 1}
    call(organiser, "post", f"{DEMO}/pools/{built['id']}/assign/", 200, data=assign, format="json")
    too_many = {"assessors": ["ann"], "overlap": 2}
    call(
        organiser, "post", f"{DEMO}/pools/{built['id']}/assign/", 400, data=too_many,
        format="json",
    )  # fmt: skip
    mine = call(assessor, "get", f"{DEMO}/assignments/", 200).json()["results"]
    call(assessor, "get", f"{DEMO}/assignments/{mine[0]['id']}/items/", 200)
    call(owner, "get", f"{DEMO}/assignments/", 403)
    release = f"{DEMO}/assignments/{mine[0]['id']}/release/"
    call(organiser, "post", release, 200, data={"to": "org"}, format="json")
    call(organiser, "post", release, 400, data={"to": "ghost"}, format="json")
    call(organiser, "get", f"{DEMO}/members/", 200)
    call(owner, "get", f"{DEMO}/members/", 403)
    account = {"username": "newbie", "email": "n@example.org"}
    made = call(organiser, "post", f"{DEMO}/accounts/", 201, data=account, format="json").json()
    call(organiser, "post", f"{DEMO}/accounts/", 400, data=account, format="json")
    member = f"{DEMO}/members/{made['member']['id']}/"
    call(organiser, "post", f"{member}password-link/", 200)
    call(organiser, "patch", member, 200, data={"role": "owner"}, format="json")
    call(organiser, "patch", member, 400, data={"role": "boss"}, format="json")
    call(organiser, "delete", member, 204)
    added = {"username": "nobody", "role": "owner"}
    call(organiser, "post", f"{DEMO}/members/", 201, data=added, format="json")
    call(organiser, "get", f"{DEMO}/agreement/", 200)
    call(organiser, "get", f"{DEMO}/disagreements/?min=1", 200)
    call(organiser, "get", f"{DEMO}/disagreements/?min=5", 400)
    verdict = {"qid": "q1", "docno": "d1", "grade": 1, "note": "settled"}
    call(organiser, "post", f"{DEMO}/adjudications/", 200, data=verdict, format="json")
    call(organiser, "post", f"{DEMO}/adjudications/", 400, data={"qid": "q1"}, format="json")
    call(organiser, "get", f"{DEMO}/adjudications/", 200)
    call(organiser, "get", f"{DEMO}/history/?since=2000-01-01T00:00:00Z&limit=2", 200)
    call(organiser, "get", f"{DEMO}/history/?since=soon", 400)
    call(organiser, "get", f"{DEMO}/assessor-qrels/?assessor=ann", 200)
    call(organiser, "get", f"{DEMO}/assessor-qrels/?assessor=ghost", 404)
    call(owner, "get", f"{DEMO}/runs/sys/download/", 200)
    call(owner, "get", f"{DEMO}/runs/org/download/", 404)
    call(organiser, "get", f"{DEMO}/scores/export/trec/?run=sys&k=2", 200)
    call(organiser, "get", f"{DEMO}/scores/export/csv/", 200)
    call(organiser, "get", f"{DEMO}/scores/export/json/?k=10", 200)
    call(organiser, "get", f"{DEMO}/scores/export/trec/", 400)
    UserFactory(username="scripter", password="right-password-1")
    credentials = {"username": "scripter", "password": "right-password-1"}
    call(None, "post", "/api/v1/token/", 200, data=credentials, format="json")
    wrong = {**credentials, "password": "wrong"}
    call(None, "post", "/api/v1/token/", 401, data=wrong, format="json")
    call(None, "post", "/api/v1/token/", 400, data={}, format="json")
    call(stranger, "delete", "/api/v1/token/", 204)
    call(None, "delete", "/api/v1/token/", 401)
    # Webhooks
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = False
    hooks = f"{DEMO}/webhooks/"
    made = call(
        organiser, "post", hooks, 201, data={"url": "http://93.184.216.34/h"}, format="json"
    )
    hook = f"{hooks}{made.json()['id']}/"
    call(organiser, "post", hooks, 400, data={"url": "http://127.0.0.1/h"}, format="json")
    call(assessor, "get", hooks, 403)
    call(organiser, "get", hooks, 200)
    call(organiser, "get", hook, 200)
    call(organiser, "post", f"{hook}test/", 202)
    call(organiser, "get", f"{hook}deliveries/", 200)
    call(organiser, "delete", hook, 204)
    call(organiser, "get", hook, 404)
    # Search systems: described, tried on a real engine, a fetch queued, cancelled, retried
    systems = f"{DEMO}/systems/"
    with search_engine() as engine:
        body = '{"size": "{{depth}}", "query": {"multi_match": {"query": "{{title}}"}}}'
        system = {
            "name": "bm25", "method": "POST", "url_template": f"{engine.url}/docs/_search",
            "body_template": body, "headers": [{"name": "X-Team", "value": "a"}],
        }  # fmt: skip
        call(organiser, "post", systems, 201, data=system, format="json")
        call(organiser, "post", systems, 400, data=system, format="json")
        call(assessor, "get", systems, 403)
        call(organiser, "get", systems, 200)
        call(organiser, "get", f"{systems}bm25/", 200)
        call(organiser, "patch", f"{systems}bm25/", 200, data={"depth": 5}, format="json")
        call(organiser, "patch", f"{systems}bm25/", 400, data={"id_path": "a["}, format="json")
        tried = call(organiser, "post", f"{systems}bm25/try/", 200).json()
        first = collection.queries.order_by("qid").values_list("qid", flat=True)[:3]
        assert [item["qid"] for item in tried] == list(first)
        fetches = f"{systems}bm25/fetches/"
        queued = call(organiser, "post", fetches, 202, data={"run": "b1"}, format="json")
        fetch = f"{fetches}{queued.json()['id']}/"
        call(organiser, "post", fetches, 400, data={"run": "b 1"}, format="json")
        call(organiser, "get", fetches, 200)
        call(organiser, "get", fetch, 200)
        call(organiser, "get", f"{fetch}failures/", 200)
        call(organiser, "post", f"{fetch}cancel/", 200)
        call(organiser, "post", f"{fetch}retry/", 202)
        call(organiser, "post", f"{fetch}retry/", 400)
        call(assessor, "get", fetch, 403)
        call(organiser, "get", f"{fetches}999999/", 404)
        # Its history and what changed, over two runs of the collection made its own.
        two = list(collection.runs.order_by("id").values_list("id", flat=True)[:2])
        Run.objects.filter(id__in=two).update(system=SearchSystem.objects.get(name="bm25"))
        call(organiser, "get", f"{systems}bm25/history/", 200)
        call(organiser, "get", f"{systems}bm25/history/?k=3&measure=AP", 400)
        call(organiser, "get", f"{systems}bm25/history/?version=round-1", 200)
        call(organiser, "get", f"{systems}bm25/history/?version=ghost", 400)
        call(assessor, "get", f"{systems}bm25/history/", 403)
        call(organiser, "get", f"{systems}bm25/changes/", 200)
        call(organiser, "get", f"{systems}bm25/changes/?run=no-such-run", 404)
    # Machine judges (no pool yet: trying and running are refused)
    judges = f"{DEMO}/judges/"
    judge = {"name": "j1", "base_url": "http://127.0.0.1:9/v1", "model": "m",
             "api_key_env": "NDCG_JUDGE_KEY_NO_SUCH"}  # fmt: skip
    call(organiser, "post", judges, 201, data=judge, format="json")
    call(organiser, "post", judges, 400, data=judge, format="json")
    call(assessor, "get", judges, 403)
    call(organiser, "get", judges, 200)
    call(organiser, "get", f"{judges}j1/", 200)
    call(organiser, "patch", f"{judges}j1/", 200, data={"temperature": 0.5}, format="json")
    call(organiser, "post", f"{judges}j1/try/", 400)
    call(organiser, "get", f"{judges}j1/runs/", 200)
    call(organiser, "post", f"{judges}j1/runs/", 400, data={"pool": 1}, format="json")
    call(organiser, "post", f"{judges}j1/runs/1/cancel/", 404)
    call(organiser, "get", f"{judges}j1/runs/1/", 404)
    call(organiser, "get", f"{judges}j1/runs/1/failures/", 404)
    call(organiser, "post", f"{judges}j1/runs/1/retry/", 400, data={"pairs": "x"}, format="json")
    call(organiser, "post", f"{judges}j1/runs/1/retry/", 404, data={}, format="json")
    # The judge beside a person, first on a pair nobody adjudicated, then on one adjudicated:
    # the agreement's calibration matches the schema without and with adjudicated grades.
    machine = MachineJudge.objects.get(name="j1").account
    for qid, docno, settled in (("q2", "d2", 0), ("q1", "d1", 1)):
        services.judgement_upsert(
            query=collection.queries.get(qid=qid), document=collection.documents.get(docno=docno),
            assessor=machine, grade=0, source="machine",
        )  # fmt: skip
        (calibrated,) = call(organiser, "get", f"{DEMO}/agreement/", 200).json()["machine_judges"]
        assert calibrated["people"] and calibrated["adjudicated"]["items"] == settled
    # The ranking under each rule for machine grades, now that a machine has graded.
    body = call(organiser, "get", f"{DEMO}/machine-grades/?k=2", 200).json()
    assert [row["rule"] for row in body["rules"]] == ["people", "fill", "assessor"]
    call(assessor, "get", f"{DEMO}/machine-grades/", 403)
    call(organiser, "get", f"{DEMO}/machine-grades/?k=3", 400)
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
