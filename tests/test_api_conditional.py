"""Conditional GET on the reads that follow the scores stamp: leaderboard, run scores, qrels,
versions and as-of reads answer 304 to the validator they gave, and 200 with a new one
after a judgement."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import services
from annotations.models import Membership
from annotations.services.versions import qrels_version_tag
from tests.factories import UserFactory

DEMO = "/api/v1/collections/demo"
READS = [
    "leaderboard/?k=5",
    "runs/run-00/scores/?k=5",
    "qrels/",
    "as-of/qrels/?at=2999-01-01T00:00:00Z",
    "as-of/leaderboard/?at=2999-01-01T00:00:00Z&k=5",
    "versions/v1/leaderboard/?k=5",
]


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def setup(db: None, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    with django_capture_on_commit_callbacks(execute=True):
        collection = services.collection_create(slug="demo", cutoffs=[5, 10])
        organiser = UserFactory(username="organiser")
        Membership.objects.create(collection=collection, user=organiser, role="organiser")
        qids = [f"q{i}" for i in range(1, 9)]
        services.queries_store(
            collection=collection, queries=[services.QueryFields(q, q) for q in qids]
        )
        for r in range(12):
            services.run_store(
                collection=collection,
                run_name=f"run-{r:02d}",
                results={q: [(f"d{(r + i) % 6}", None, i + 1) for i in range(4)] for q in qids},
            )
        for q in qids[:4]:
            services.judgement_upsert(
                query=collection.queries.get(qid=q),
                document=collection.documents.get(docno="d1"),
                assessor=organiser,
                grade=1,
                source="api",
            )
        qrels_version_tag(collection=collection, name="v1", created_by=organiser)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=organiser).key}")
    return {"collection": collection, "organiser": organiser, "client": client}


def _body(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.mark.parametrize("path", READS)
def test_the_same_validator_gets_a_304_and_a_judgement_a_new_200(
    setup: dict[str, Any], path: str, django_capture_on_commit_callbacks: Any
) -> None:
    client = setup["client"]
    # Inline, the leaderboard's significance pass runs on the read after its rows: the body
    # is stable from the third read on.
    for _ in range(2):
        client.get(f"{DEMO}/{path}")
    first = client.get(f"{DEMO}/{path}")
    assert first.status_code == 200 and first["ETag"].startswith('"')
    body = _body(first)
    again = client.get(f"{DEMO}/{path}")
    assert again["ETag"] == first["ETag"] and _body(again) == body  # strong: same bytes
    cached = client.get(f"{DEMO}/{path}", HTTP_IF_NONE_MATCH=first["ETag"])
    assert cached.status_code == 304 and cached["ETag"] == first["ETag"] and not cached.content
    assert client.get(f"{DEMO}/{path}", HTTP_IF_NONE_MATCH='"other"').status_code == 200
    if first.has_header("Last-Modified"):
        since = client.get(f"{DEMO}/{path}", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
        assert since.status_code == 304
    collection = setup["collection"]
    with django_capture_on_commit_callbacks(execute=True):
        services.judgement_upsert(
            query=collection.queries.get(qid="q5"),
            document=collection.documents.get(docno="d2"),
            assessor=setup["organiser"],
            grade=1,
            source="api",
        )
    after = client.get(f"{DEMO}/{path}", HTTP_IF_NONE_MATCH=first["ETag"])
    assert after.status_code == 200 and after["ETag"] != first["ETag"]


def test_a_leaderboard_served_as_stored_answers_without_reading_its_rows(
    setup: dict[str, Any],
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotations.models import ImpactSnapshot, LeaderboardSnapshot

    client = setup["client"]
    url = f"{DEMO}/leaderboard/?k=5"
    for _ in range(3):  # the rows, then their significance pass (inline), then stored
        first = client.get(url)
    with CaptureQueriesContext(connection) as fast:
        again = client.get(url)
    cache.clear()  # the rendering kept for the stored board is gone: the full read
    with CaptureQueriesContext(connection) as full:
        assert client.get(url).content == first.content
    assert len(fast) < len(full)
    assert not [q for q in fast.captured_queries if "rows" in q["sql"].split("FROM")[0]]
    assert again.status_code == 200 and again.content == first.content
    assert (again["ETag"], again["Content-Type"]) == (first["ETag"], first["Content-Type"])
    assert again["Last-Modified"] == first["Last-Modified"]
    assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304

    # Flip marks rewritten under the same rows (queued counts follow assignments): the body
    # follows them, not the rendering kept for the marks before.
    board = LeaderboardSnapshot.objects.get(collection=setup["collection"], k=5)
    marks = [{"upper": "run-00", "lower": "run-01", "can_flip": True, "queued": 7}]
    stored = {"adjacent": marks, "leaderboard_stamp": board.stamp, "computed_at": board.computed_at}
    ImpactSnapshot.objects.update_or_create(collection=setup["collection"], k=5, defaults=stored)
    changed = client.get(url)
    assert changed.content != first.content and changed["ETag"] != first["ETag"]
    assert client.get(url).content == changed.content

    services.judgement_upsert(
        query=setup["collection"].queries.get(qid="q5"),
        document=setup["collection"].documents.get(docno="d1"),
        assessor=setup["organiser"],
        grade=2,
        source="api",
    )
    scores_run = client.get(url)
    assert scores_run.status_code == 200 and scores_run["ETag"] != changed["ETag"]


def test_a_tagged_versions_qrels_keep_their_validator(
    setup: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    client = setup["client"]
    first = client.get(f"{DEMO}/versions/v1/qrels/")
    collection = setup["collection"]
    with django_capture_on_commit_callbacks(execute=True):
        services.judgement_upsert(
            query=collection.queries.get(qid="q6"),
            document=collection.documents.get(docno="d3"),
            assessor=setup["organiser"],
            grade=1,
            source="api",
        )
    assert (
        client.get(f"{DEMO}/versions/v1/qrels/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code
        == 304
    )
    current = client.get(f"{DEMO}/qrels/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert current.status_code == 200 and b"q6 0 d3 1" in _body(current)


def test_pending_scores_leave_last_modified_out(setup: dict[str, Any]) -> None:
    collection = setup["collection"]
    services.judgement_upsert(  # not run on commit: the query's scores stay pending
        query=collection.queries.get(qid="q7"),
        document=collection.documents.get(docno="d4"),
        assessor=setup["organiser"],
        grade=1,
        source="api",
    )
    response = setup["client"].get(f"{DEMO}/leaderboard/?k=5")
    assert response.status_code == 200 and response.json()["pending"]
    assert not response.has_header("Last-Modified") and response.has_header("ETag")


# --- OPTIONS and query parameters ---------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "path", "status", "writes"),
    [
        ("superuser", "judgements/", 200, {"POST"}),
        ("organiser", "judgements/", 200, {"POST"}),
        ("assessor", "judgements/", 200, {"POST"}),
        ("owner", "judgements/", 200, set()),
        ("anonymous", "judgements/", 401, set()),
        ("superuser", "pools/", 200, {"POST"}),
        ("assessor", "pools/", 200, set()),
        ("owner", "runs/run-00/", 200, {"PUT"}),
        ("assessor", "runs/run-00/", 404, set()),  # blinded: as a GET would be
        ("stranger", "judgements/", 404, set()),
        ("organiser", "members/1/", 200, {"PATCH"}),
    ],
)
def test_options_answers_every_role_with_the_writes_it_may_make(
    setup: dict[str, Any], who: str, path: str, status: int, writes: set[str]
) -> None:
    collection = setup["collection"]
    users = {
        "superuser": UserFactory(username="root", is_staff=True, is_superuser=True),
        "organiser": setup["organiser"],
        "stranger": UserFactory(username="stranger"),
    }
    for role in ("assessor", "owner"):
        users[role] = UserFactory(username=role)
        Membership.objects.create(collection=collection, user=users[role], role=role)
    collection.runs.filter(name="run-00").update(owner=users["owner"])
    client = APIClient()
    if who != "anonymous":
        client.force_authenticate(users[who])
    response = client.options(f"{DEMO}/{path}")
    assert response.status_code == status, response.content
    if status == 200:
        assert set(response.json().get("actions", {})) == writes


def test_options_describes_the_body_a_write_takes_not_the_one_it_answers(
    setup: dict[str, Any],
) -> None:
    client = APIClient()
    client.force_authenticate(UserFactory(username="root", is_staff=True))
    fields = client.options("/api/v1/collections/").json()["actions"]["POST"]
    assert fields["slug"]["read_only"] is False and fields["slug"]["required"] is True
    assert "roles" not in fields  # reported, never sent
    assessor = UserFactory(username="ann")
    Membership.objects.create(collection=setup["collection"], user=assessor, role="assessor")
    client.force_authenticate(assessor)  # may not create collections: no POST to describe
    assert "actions" not in client.options("/api/v1/collections/").json()


@pytest.mark.parametrize(
    ("path", "unknown"),
    [
        ("judgements/?qid=q1&quid=q2", ["quid"]),
        ("runs/?ordering=name&page=2", ["ordering", "page"]),
        ("leaderboard/?k=5&cutoff=5", ["cutoff"]),
        ("qrels/?assessor=ann", ["assessor"]),
        ("history/?after=2020-01-01T00:00:00Z", ["after"]),
    ],
)
def test_unknown_query_parameters_are_a_400_naming_them(
    setup: dict[str, Any], path: str, unknown: list[str]
) -> None:
    response = setup["client"].get(f"{DEMO}/{path}")
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert sorted(fields) == unknown and "this operation takes" in fields[unknown[0]][0]
    base = path.split("?")[0]
    assert setup["client"].get(f"{DEMO}/{base}?format=json").status_code == 200


def test_the_schema_states_the_largest_limit(client: Any, db: None) -> None:
    schema = client.get("/api/schema/?format=json").json()
    parameters = schema["paths"]["/api/v1/collections/{slug}/judgements/"]["get"]["parameters"]
    limit = next(p for p in parameters if p["name"] == "limit")
    assert limit["schema"]["maximum"] == 10_000 and limit["schema"]["minimum"] == 1
