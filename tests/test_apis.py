"""REST API v1 through HTTP: every endpoint, every role allowed and refused, bad input as 400."""

import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import scores, services
from annotations.models import (
    Collection,
    Judgement,
    JudgementHistory,
    Membership,
    Query,
    Run,
)
from tests.factories import UserFactory
from tests.stored import query_rows

API = "/api/v1/collections"
DEMO = f"{API}/demo"
QRELS = "q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\n"
RUN_FILE = b"q1 Q0 d2 1 9.5 mine\nq1 Q0 d1 2 8.0 mine\nq2 Q0 d3 1 3.0 mine\n"
ROLES = ("organiser", "assessor", "owner")

Capture = Callable[..., AbstractContextManager[Any]]


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_throttles() -> Iterator[None]:
    cache.clear()  # throttle counters live in the cache; tests must not share them
    yield
    cache.clear()


def _client(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


class World:
    def __init__(self, capture: Capture, write_file: Callable[..., Any]) -> None:
        with capture(execute=True):
            self.collection = services.collection_create(slug="demo", cutoffs=[2, 10])
            self.users = {
                name: UserFactory(username=name) for name in (*ROLES, "owner2", "stranger")
            }
            self.users["staff"] = UserFactory(username="staff", is_staff=True)
            for role in ROLES:
                Membership.objects.create(
                    collection=self.collection, user=self.users[role], role=role
                )
            Membership.objects.create(
                collection=self.collection, user=self.users["owner2"], role="owner"
            )
            services.queries_store(
                collection=self.collection,
                queries=[services.QueryFields("q1", "first"), services.QueryFields("q2", "second")],
            )
            services.documents_store(
                collection=self.collection,
                documents=[services.DocumentFields(f"d{i}", f"doc {i}") for i in range(1, 5)],
            )
            services.judgements_import(
                collection=self.collection,
                source=write_file("q.qrels", QRELS),
                assessor=self.users["assessor"],
            )
            services.run_store(
                collection=self.collection,
                run_name="base",
                results={"q1": [("d1", None, 1), ("d2", None, 2)], "q2": [("d4", None, 1)]},
                owner=self.users["owner"],
            )
            services.run_store(
                collection=self.collection,
                run_name="rival",
                results={"q1": [("d2", None, 1)], "q2": [("d3", None, 1)]},
                owner=self.users["owner2"],
            )

    def client(self, name: str | None) -> APIClient:
        return _client(None if name is None else self.users[name])


@pytest.fixture
def world(
    db: None, django_capture_on_commit_callbacks: Capture, write_file: Callable[..., Any]
) -> World:
    return World(django_capture_on_commit_callbacks, write_file)


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert body["status"] == status and body["detail"]
    return body


# --- access -------------------------------------------------------------------------------

READS = [
    f"{DEMO}/",
    f"{DEMO}/queries/",
    f"{DEMO}/documents/",
    f"{DEMO}/runs/",
    f"{DEMO}/runs/base/",
    f"{DEMO}/runs/base/scores/",
    f"{DEMO}/leaderboard/",
    f"{DEMO}/compare/?a=base&b=rival",
    f"{DEMO}/judgements/",
    f"{DEMO}/judgements/q1/d1/",
    f"{DEMO}/qrels/",
]


def test_anonymous_callers_get_401_on_private_collections(world: World) -> None:
    for path in (f"{API}/", *READS):
        assert _error(world.client(None).get(path), 401)["code"] == "not_authenticated"
    _error(world.client(None).post(f"{DEMO}/judgements/", {}, format="json"), 401)


def test_non_members_get_404_so_private_collections_stay_hidden(world: World) -> None:
    for path in READS:
        assert _error(world.client("stranger").get(path), 404)["code"] == "not_found"
    _error(world.client("stranger").get(f"{API}/ghost/leaderboard/"), 404)


@pytest.mark.parametrize(
    ("path", "allowed", "hidden"),
    [
        (f"{DEMO}/", set(ROLES), set()),
        (f"{DEMO}/queries/", set(ROLES), set()),
        (f"{DEMO}/documents/", set(ROLES), set()),
        # Assessors are blinded to systems and scores: 404, as if the endpoint did not exist.
        (f"{DEMO}/runs/", {"organiser", "owner"}, {"assessor"}),
        (f"{DEMO}/runs/base/", {"organiser", "owner"}, {"assessor"}),
        (f"{DEMO}/runs/base/scores/", {"organiser", "owner"}, {"assessor"}),
        (f"{DEMO}/leaderboard/", {"organiser", "owner"}, {"assessor"}),
        # The owner owns base, not rival: a comparison needs both runs' scores.
        (f"{DEMO}/compare/?a=base&b=rival", {"organiser"}, {"assessor", "owner"}),
        (f"{DEMO}/judgements/", {"organiser", "assessor"}, set()),
        (f"{DEMO}/qrels/", {"organiser"}, set()),
    ],
)
def test_reads_by_role(world: World, path: str, allowed: set[str], hidden: set[str]) -> None:
    for role in ROLES:
        response = world.client(role).get(path)
        if role in allowed:
            assert response.status_code == 200, (role, response.content)
        else:
            _error(response, 404 if role in hidden else 403)
    assert world.client("staff").get(path).status_code == 200  # staff organise everything


def test_public_leaderboard_opens_scores_but_nothing_else_to_anyone(world: World) -> None:
    services.collection_publish(collection=world.collection, public=True)
    anonymous = world.client(None)
    for path in (
        f"{DEMO}/leaderboard/",
        f"{DEMO}/runs/base/scores/",
        f"{DEMO}/compare/?a=base&b=rival",
    ):
        assert anonymous.get(path).status_code == 200
        assert world.client("stranger").get(path).status_code == 200
    _error(anonymous.get(f"{DEMO}/judgements/"), 401)
    _error(anonymous.get(f"{DEMO}/"), 401)
    _error(world.client("stranger").get(f"{DEMO}/queries/"), 404)


# --- collections --------------------------------------------------------------------------


def test_collection_list_shows_visible_collections_with_the_callers_roles(world: World) -> None:
    services.collection_create(slug="hidden")
    body = world.client("owner").get(f"{API}/").json()
    assert [c["slug"] for c in body["results"]] == ["demo"]
    assert body["results"][0]["roles"] == ["owner"]
    assert body["count"] == 1
    assert {c["slug"] for c in world.client("staff").get(f"{API}/").json()["results"]} == {
        "demo",
        "hidden",
    }


@pytest.mark.parametrize(
    ("who", "status"),
    [("staff", 201), ("organiser", 201), ("assessor", 403), ("owner", 403), ("stranger", 403)],
)
def test_who_may_create_a_collection(world: World, who: str, status: int) -> None:
    response = world.client(who).post(
        f"{API}/",
        {
            "slug": f"new-{who}",
            "cutoffs": [3],
            "grades": [{"value": 0, "label": "no"}, {"value": 1, "label": "yes"}],
        },
        format="json",
    )
    assert response.status_code == status, response.content
    if status == 201:
        body = response.json()
        assert body["cutoffs"] == [3] and [g["value"] for g in body["grades"]] == [0, 1]
        created = Collection.objects.get(slug=f"new-{who}")
        assert Membership.objects.filter(
            collection=created, user=world.users[who], role="organiser"
        ).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slug": "has space"}, "slug"),
        ({"slug": "demo"}, "slug"),
        ({"slug": "x", "cutoffs": []}, "cutoffs"),
        ({"slug": "x", "cutoffs": [0]}, "cutoffs[0]"),
        ({"slug": "x", "cutoffs": [5, 5]}, "cutoffs"),
        ({"slug": "x", "gain": "cubic"}, "gain"),
        (
            {"slug": "x", "grades": [{"value": 1, "label": "a"}, {"value": 1, "label": "b"}]},
            "grades",
        ),
        ({}, "slug"),
    ],
)
def test_bad_collection_input_is_a_400_naming_the_field(
    world: World, body: dict[str, Any], field: str
) -> None:
    error = _error(world.client("organiser").post(f"{API}/", body, format="json"), 400)
    assert field in error["fields"], error


def test_organiser_changes_settings_and_publishes(world: World) -> None:
    client = world.client("organiser")
    response = client.patch(f"{DEMO}/", {"name": "Demo", "public_leaderboard": True}, format="json")
    assert response.status_code == 200
    assert response.json()["name"] == "Demo" and response.json()["public_leaderboard"] is True
    error = _error(client.patch(f"{DEMO}/", {"cutoffs": "ten"}, format="json"), 400)
    assert "cutoffs" in error["fields"]
    error = _error(client.patch(f"{DEMO}/", {"cutoffs": [1001]}, format="json"), 400)
    assert "cutoffs[0]" in error["fields"]
    for role in ("assessor", "owner"):
        _error(world.client(role).patch(f"{DEMO}/", {"name": "x"}, format="json"), 403)


def test_scoring_setting_change_marks_scores_pending_then_rescore(
    world: World, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        world.client("organiser").patch(f"{DEMO}/", {"gain": "exponential"}, format="json")
        pending = world.client("owner").get(f"{DEMO}/leaderboard/?k=2").json()
    assert pending["pending"] is True
    assert pending["pending_runs"] == 2


# --- queries and documents ----------------------------------------------------------------


def test_queries_bulk_create_update_and_filter(world: World) -> None:
    client = world.client("organiser")
    body = [{"qid": "q2", "title": "renamed"}, {"qid": "q3", "title": "third"}]
    response = client.post(f"{DEMO}/queries/", body, format="json")
    assert response.status_code == 201
    assert response.json() == {"created": 1, "updated": 1, "unchanged": 0}
    listing = client.get(f"{DEMO}/queries/?judged=true").json()
    assert [q["qid"] for q in listing["results"]] == ["q1", "q2"]
    assert client.get(f"{DEMO}/queries/?title=third").json()["results"][0]["qid"] == "q3"
    for role in ("assessor", "owner"):
        _error(world.client(role).post(f"{DEMO}/queries/", body, format="json"), 403)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([{"qid": "has space"}], "[0].qid"),
        ([{"title": "no id"}], "[0].qid"),
        ([{"qid": "a"}, {"qid": "a"}], "qid"),
        ({"qid": "a"}, "non_field_errors"),
    ],
)
def test_bad_query_input_is_a_400(world: World, body: Any, field: str) -> None:
    error = _error(world.client("organiser").post(f"{DEMO}/queries/", body, format="json"), 400)
    assert field in error["fields"], error


def test_documents_bulk_create_paginate_and_refuse_bad_urls(world: World) -> None:
    client = world.client("organiser")
    response = client.post(
        f"{DEMO}/documents/",
        [{"docno": "d9", "title": "nine", "url": "https://example.org/9"}],
        format="json",
    )
    assert response.json() == {"created": 1, "updated": 0, "unchanged": 0}
    page = client.get(f"{DEMO}/documents/?limit=2&offset=1").json()
    assert page["count"] == 5 and [d["docno"] for d in page["results"]] == ["d2", "d3"]
    assert page["next"] and page["previous"]
    assert client.get(f"{DEMO}/documents/?docno=d9").json()["results"][0]["title"] == "nine"
    error = _error(
        client.post(f"{DEMO}/documents/", [{"docno": "x", "url": "nope"}], format="json"), 400
    )
    assert "[0].url" in error["fields"]
    _error(world.client("owner").post(f"{DEMO}/documents/", [{"docno": "y"}], format="json"), 403)


# --- runs ---------------------------------------------------------------------------------


def _upload(content: bytes, name: str = "mine.run", **extra: str) -> dict[str, Any]:
    return {"file": SimpleUploadedFile(name, content, content_type="text/plain"), **extra}


def test_owner_uploads_a_trec_run_file_and_owns_it(
    world: World, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("owner").post(
            f"{DEMO}/runs/", _upload(RUN_FILE), format="multipart"
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (
        body["results"] == 3 and body["run"]["name"] == "mine" and body["run"]["owner"] == "owner"
    )
    run = Run.objects.get(name="mine")
    assert run.owner == world.users["owner"]
    assert run.scored_at is not None  # scored after the commit


def test_json_run_without_scores_keeps_the_given_order(
    world: World, django_capture_on_commit_callbacks: Capture
) -> None:
    results = [{"qid": "q1", "docno": "d2"}, {"qid": "q1", "docno": "d1"}]
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("organiser").put(
            f"{DEMO}/runs/ordered/results/", {"results": results}, format="json"
        )
    assert response.status_code == 201, response.content
    scores = world.client("organiser").get(f"{DEMO}/runs/ordered/scores/?k=2").json()
    q1 = scores["per_query"][0]
    assert q1["qid"] == "q1" and q1["dcg"] == 1 + 3 / 1.584962500721156


def test_run_list_filters_by_owner(world: World) -> None:
    body = world.client("owner").get(f"{DEMO}/runs/?owner=owner2").json()
    assert [run["name"] for run in body["results"]] == ["rival"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"results": []}, "results"),
        ({}, "results"),
        (
            {"results": [{"qid": "q1", "docno": "d1", "score": 1}, {"qid": "q1", "docno": "d2"}]},
            "results",
        ),
        ({"results": [{"qid": "q1", "docno": "d1"}, {"qid": "q1", "docno": "d1"}]}, "results"),
        ({"results": [{"qid": "q1", "docno": "d1", "score": "high"}]}, "results[0].score"),
        ({"results": [{"qid": "q1", "docno": "d 1"}]}, "results[0].docno"),
    ],
)
def test_bad_json_runs_are_a_400_naming_the_field(
    world: World, body: dict[str, Any], field: str
) -> None:
    response = world.client("organiser").put(f"{DEMO}/runs/x/results/", body, format="json")
    assert field in _error(response, 400)["fields"]
    assert not Run.objects.filter(name="x").exists()


def test_a_run_body_in_the_other_content_type_is_a_415(world: World) -> None:
    """One content type per operation: TREC files are multipart, JSON results go to
    runs/{name}/results/."""
    results = {"results": [{"qid": "q1", "docno": "d1"}]}
    client = world.client("organiser")
    assert client.post(f"{DEMO}/runs/", {"name": "x", **results}, format="json").status_code == 415
    assert client.put(f"{DEMO}/runs/x/", results, format="json").status_code == 415
    upload = client.put(f"{DEMO}/runs/x/results/", _upload(RUN_FILE), format="multipart")
    assert _error(upload, 415)["code"] == "unsupported_media_type"
    assert not Run.objects.filter(name="x").exists()


def test_a_broken_trec_file_is_a_400_naming_file_line_and_field(world: World) -> None:
    broken = b"q1 Q0 d1 1 9 mine\nq1 Q0 d2 2 eight mine\n"
    response = world.client("owner").post(
        f"{DEMO}/runs/", _upload(broken, "broken.run"), format="multipart"
    )
    error = _error(response, 400)
    assert error["location"] == {"file": "broken.run", "line": 2, "field": "score"}
    assert "broken.run:2" in error["fields"]["file"][0]
    assert not Run.objects.filter(name="mine").exists()
    _error(world.client("owner").post(f"{DEMO}/runs/", _upload(b""), format="multipart"), 400)
    _error(world.client("owner").post(f"{DEMO}/runs/", {"name": "nofile"}, format="multipart"), 400)


def test_uploads_above_the_limit_are_refused_with_413(world: World, settings: Any) -> None:
    settings.NDCG_MAX_UPLOAD_MB = 1
    big = RUN_FILE * (1024 * 1024 // len(RUN_FILE) + 1)
    response = world.client("owner").post(f"{DEMO}/runs/", _upload(big), format="multipart")
    assert _error(response, 413)["code"] == "upload_too_large"


def test_assessors_may_not_submit_runs(world: World) -> None:
    _error(
        world.client("assessor").post(f"{DEMO}/runs/", _upload(RUN_FILE), format="multipart"), 403
    )


@pytest.mark.parametrize(
    ("who", "status"), [("owner", 200), ("organiser", 200), ("owner2", 403), ("assessor", 403)]
)
def test_only_organisers_and_the_runs_owner_replace_it(world: World, who: str, status: int) -> None:
    response = world.client(who).put(f"{DEMO}/runs/base/", _upload(RUN_FILE), format="multipart")
    assert response.status_code == status, response.content
    if status == 200:
        run = Run.objects.get(name="base")
        assert sum(r.size for r in run.rankings.all()) == 3 and run.owner == world.users["owner"]


def test_put_creates_a_missing_run_for_its_caller(world: World) -> None:
    body = {"results": [{"qid": "q1", "docno": "d1", "score": 2.5}]}
    response = world.client("owner2").put(f"{DEMO}/runs/newer/results/", body, format="json")
    assert response.status_code == 201
    assert response.json()["run"]["owner"] == "owner2"
    response = world.client("owner2").put(f"{DEMO}/runs/newer/results/", body, format="json")
    assert response.status_code == 200
    refused = world.client("owner").put(f"{DEMO}/runs/newer/results/", body, format="json")
    assert _error(refused, 403)
    response = world.client("owner2").put(
        f"{DEMO}/runs/newest/", _upload(RUN_FILE), format="multipart"
    )
    assert response.status_code == 201
    assert response.json()["run"]["owner"] == "owner2"


@pytest.mark.parametrize(
    ("who", "status"), [("owner", 204), ("organiser", 204), ("owner2", 403), ("assessor", 403)]
)
def test_only_organisers_and_the_runs_owner_delete_it(world: World, who: str, status: int) -> None:
    response = world.client(who).delete(f"{DEMO}/runs/base/")
    assert response.status_code == status
    assert Run.objects.filter(name="base").exists() == (status != 204)


def test_unknown_runs_are_404(world: World) -> None:
    client = world.client("organiser")
    for response in (
        client.get(f"{DEMO}/runs/nope/"),
        client.delete(f"{DEMO}/runs/nope/"),
        client.get(f"{DEMO}/runs/nope/scores/"),
    ):
        _error(response, 404)


# --- judgements ---------------------------------------------------------------------------


def test_assessor_records_changes_and_deletes_own_judgement_through_the_service(
    world: World,
) -> None:
    client = world.client("assessor")
    created = client.post(
        f"{DEMO}/judgements/", {"qid": "q2", "docno": "d4", "grade": 1}, format="json"
    )
    assert created.status_code == 201 and created.json()["assessor"] == "assessor"
    changed = client.post(
        f"{DEMO}/judgements/",
        {"qid": "q2", "docno": "d4", "grade": 2, "note": "better"},
        format="json",
    )
    assert changed.status_code == 200 and changed.json()["grade"] == 2
    assert client.get(f"{DEMO}/judgements/q2/d4/").json()["note"] == "better"
    history = JudgementHistory.objects.filter(query__qid="q2", document__docno="d4")
    assert [(h.old_grade, h.new_grade, h.source) for h in history] == [
        (None, 1, "api"),
        (1, 2, "api"),
    ]
    assert client.delete(f"{DEMO}/judgements/q2/d4/").status_code == 204
    assert history.last().new_grade is None
    _error(client.delete(f"{DEMO}/judgements/q2/d4/"), 404)


def test_a_judgements_answer_is_what_was_stored_and_costs_few_statements(
    world: World, django_capture_on_commit_callbacks: Capture
) -> None:
    """The write's own statements plus the authentication and role lookups every API call
    makes: the pair without the document's text, no savepoint of the service's own, no
    re-reading of the judgement and its pair for the answer, only the query's versions."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = world.client("assessor")
    client.post(f"{DEMO}/judgements/", {"qid": "q1", "docno": "d3", "grade": 1}, format="json")
    scores.scores_recompute_query(
        query_id=Query.objects.get(collection=world.collection, qid="q1").id
    )
    with CaptureQueriesContext(connection) as statements:
        answer = client.post(
            f"{DEMO}/judgements/", {"qid": "q1", "docno": "d3", "grade": 2}, format="json"
        )
    assert answer.status_code == 200
    stored = Judgement.objects.get(
        query__qid="q1", document__docno="d3", assessor=world.users["assessor"]
    )
    body = answer.json()
    assert (body["qid"], body["docno"], body["assessor"], body["grade"]) == (
        "q1", "d3", "assessor", 2
    )  # fmt: skip
    assert body["updated"] == serializers.DateTimeField().to_representation(stored.updated)
    assert body["created"] == serializers.DateTimeField().to_representation(stored.created)
    assert body["pending"] is True  # the query's versions after the write, not before
    sql = [entry["sql"] for entry in statements.captured_queries]
    # the view's transaction (a savepoint inside the test's own), none of the service's
    assert sum(line.startswith("SAVEPOINT") for line in sql) <= 1
    assert not any('"annotations_document"."text"' in line for line in sql)
    assert len(sql) <= 14, "\n".join(sql)  # 13, and the read of webhook subscriptions
    # scored again: an unchanged grade answers not pending
    scores.scores_recompute_query(query_id=stored.query_id)
    same = client.post(
        f"{DEMO}/judgements/", {"qid": "q1", "docno": "d3", "grade": 2}, format="json"
    )
    assert same.status_code == 200 and same.json()["pending"] is False


def test_judgement_lists_are_filtered_and_assessors_see_only_their_own(world: World) -> None:
    organiser = world.client("organiser")
    organiser.post(f"{DEMO}/judgements/", {"qid": "q1", "docno": "d4", "grade": 0}, format="json")
    everything = organiser.get(f"{DEMO}/judgements/").json()
    assert everything["count"] == 4
    assert {j["assessor"] for j in everything["results"]} == {"assessor", "organiser"}
    mine = world.client("assessor").get(f"{DEMO}/judgements/").json()
    assert {j["assessor"] for j in mine["results"]} == {"assessor"} and mine["count"] == 3
    high = organiser.get(f"{DEMO}/judgements/?qid=q1&grade_min=2").json()["results"]
    assert [(j["docno"], j["grade"]) for j in high] == [("d1", 3)]
    by = organiser.get(f"{DEMO}/judgements/?assessor=organiser").json()["results"]
    assert [j["docno"] for j in by] == ["d4"]
    error = _error(organiser.get(f"{DEMO}/judgements/?grade=high"), 400)
    assert "grade" in error["fields"]


def test_organisers_may_delete_another_assessors_judgement_assessors_may_not(world: World) -> None:
    _error(
        world.client("owner").post(
            f"{DEMO}/judgements/", {"qid": "q1", "docno": "d1", "grade": 1}, format="json"
        ),
        403,
    )
    world.client("organiser").post(
        f"{DEMO}/judgements/", {"qid": "q1", "docno": "d4", "grade": 0}, format="json"
    )
    _error(world.client("assessor").delete(f"{DEMO}/judgements/q1/d4/?assessor=organiser"), 403)
    response = world.client("organiser").delete(f"{DEMO}/judgements/q1/d1/?assessor=assessor")
    assert response.status_code == 204
    assert not Judgement.objects.filter(document__docno="d1").exists()


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"qid": "nope", "docno": "d1", "grade": 1}, {"qid"}),
        ({"qid": "q1", "docno": "nope", "grade": 1}, {"docno"}),
        ({"qid": "q1", "docno": "d1", "grade": 7}, {"grade"}),
        ({"qid": "q1", "docno": "d1", "grade": "x"}, {"grade"}),
        ({"docno": "d1"}, {"qid", "grade"}),
    ],
)
def test_bad_judgements_are_a_400_naming_the_fields(
    world: World, body: dict[str, Any], fields: set[str]
) -> None:
    error = _error(world.client("assessor").post(f"{DEMO}/judgements/", body, format="json"), 400)
    assert fields <= set(error["fields"]), error


def test_qrels_export_is_trec_text(world: World) -> None:
    response = world.client("organiser").get(f"{DEMO}/qrels/")
    assert response["Content-Type"].startswith("text/plain")
    assert response.streaming  # sent as it is read, never held whole in memory
    assert b"".join(response.streaming_content).decode() == "q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\n"


def test_malformed_json_is_a_400_not_a_500(world: World) -> None:
    response = world.client("organiser").generic(
        "POST", f"{DEMO}/queries/", "[{", content_type="application/json"
    )
    assert _error(response, 400)["code"] == "parse_error"


# --- scores -------------------------------------------------------------------------------


def test_leaderboard_has_cis_letters_judged_bounds_and_pending(world: World) -> None:
    body = world.client("owner").get(f"{DEMO}/leaderboard/?k=2").json()
    assert body["pending"] is False and body["k"] == 2 and body["cutoffs"] == [2, 10]
    assert body["bootstrap"] == {"resamples": 10000, "seed": 0, "confidence": 0.95}
    assert [run["name"] for run in body["runs"]] == ["rival", "base"]
    for run in body["runs"]:
        assert run["ci"]["low"] <= run["ndcg"] <= run["ci"]["high"]
        assert "tier" not in run and "p_next" not in run and 0.0 <= run["judged"] <= 1.0
        assert isinstance(run["letters"], str) and run["below_best"] in (True, False)
        assert set(run["bounds"]) == {"unjudged_nonrelevant", "unjudged_top_grade"}
    base = body["runs"][1]
    assert base["bounds"]["unjudged_top_grade"] > base["bounds"]["unjudged_nonrelevant"]
    assert world.client("owner").get(f"{DEMO}/leaderboard/").json()["k"] == 10  # default


@pytest.mark.parametrize("k", ["7", "abc", "-2"])
def test_a_cutoff_outside_the_collections_is_a_400(world: World, k: str) -> None:
    for path in ("leaderboard/", "runs/base/scores/", "compare/?a=base&b=rival&"):
        sep = "" if path.endswith("&") else "?"
        error = _error(world.client("owner").get(f"{DEMO}/{path}{sep}k={k}"), 400)
        assert "k" in error["fields"]


def test_run_scores_give_full_precision_per_query_values(world: World) -> None:
    body = world.client("owner").get(f"{DEMO}/runs/base/scores/?k=2").json()
    stored = {qid: values.ndcg for _, qid, values in query_rows(run__name="base") if values.k == 2}
    assert {row["qid"]: row["ndcg"] for row in body["per_query"]} == stored  # bit for bit
    assert body["pending"] is False and body["queries"] == 2


def test_compare_reports_differences_p_value_and_wins(world: World) -> None:
    body = world.client("organiser").get(f"{DEMO}/compare/?a=rival&b=base&k=2").json()
    assert body["queries"] == 2 and body["wins"] + body["ties"] + body["losses"] == 2
    assert 0.0 < body["p_value"] <= 1.0
    assert [row["difference"] for row in body["per_query"]] == [
        row["a"] - row["b"] for row in body["per_query"]
    ]
    error = _error(world.client("organiser").get(f"{DEMO}/compare/?a=rival"), 400)
    assert set(error["fields"]) == {"b"}
    error = _error(world.client("organiser").get(f"{DEMO}/compare/?a=rival&b=ghost"), 400)
    assert "ghost" in error["fields"]["b"][0]


def test_compare_follows_a_judgement_although_it_is_cached(
    world: World, django_capture_on_commit_callbacks: Capture
) -> None:
    organiser = world.client("organiser")
    path = f"{DEMO}/compare/?a=rival&b=base&k=2"
    before = organiser.get(path).json()
    assert organiser.get(path).json() == before  # served again under the same stamp
    with django_capture_on_commit_callbacks(execute=True):  # the inline recomputation
        response = organiser.post(
            f"{DEMO}/judgements/", {"qid": "q1", "docno": "d-unseen", "grade": 3}, format="json"
        )
    assert response.status_code in (200, 201), response.content
    after = organiser.get(path).json()
    stored = {qid: v.ndcg for _, qid, v in query_rows(run__name="rival") if v.k == 2}
    assert {row["qid"]: row["a"] for row in after["per_query"]} == stored
    assert after["per_query"] != before["per_query"]


@pytest.mark.django_db(transaction=True)
def test_done_when_owner_uploads_with_a_token_and_an_assessors_judgement_moves_the_score(
    write_file: Callable[..., Any],
) -> None:
    """The issue's 'done when', with real commits: inline scoring runs after each write."""
    collection = services.collection_create(slug="live", cutoffs=[2])
    owner, assessor = UserFactory(username="sys"), UserFactory(username="ann")
    Membership.objects.create(collection=collection, user=owner, role="owner")
    Membership.objects.create(collection=collection, user=assessor, role="assessor")
    services.documents_store(
        collection=collection, documents=[services.DocumentFields(d) for d in ("d1", "d2", "d3")]
    )
    services.judgements_import(
        collection=collection, source=write_file("l.qrels", "q1 0 d2 2\n"), assessor=assessor
    )
    run = b"q1 Q0 d1 1 2.0 sys-run\nq1 Q0 d2 2 1.0 sys-run\n"
    upload = _client(owner).post(
        "/api/v1/collections/live/runs/", _upload(run, "sys.run"), format="multipart"
    )
    assert upload.status_code == 201, upload.content
    before = _client(owner).get("/api/v1/collections/live/leaderboard/?k=2").json()
    assert before["runs"][0]["ndcg"] == pytest.approx((2 / 1.584962500721156) / 2)
    assert before["runs"][0]["judged"] == 0.5

    judged = _client(assessor).post(
        "/api/v1/collections/live/judgements/",
        {"qid": "q1", "docno": "d1", "grade": 2},
        format="json",
    )
    assert judged.status_code == 201

    after = _client(owner).get("/api/v1/collections/live/leaderboard/?k=2").json()
    row = after["runs"][0]
    assert after["pending"] is False
    assert row["name"] == "sys-run" and row["ndcg"] == 1.0 and row["judged"] == 1.0
    assert row["ci"] == {"low": 1.0, "high": 1.0} and row["below_best"] is False
    scores = _client(owner).get("/api/v1/collections/live/runs/sys-run/scores/?k=2").json()
    assert scores["per_query"][0]["ndcg"] == 1.0 and scores["pending"] is False


def test_an_organisers_judgement_of_unknown_ids_creates_them_as_the_import_does(
    world: World, django_capture_on_commit_callbacks: Capture
) -> None:
    from annotations.models import Document, IdealScore, Query

    body = {"qid": "q-new", "docno": "d-new", "grade": 3}
    with django_capture_on_commit_callbacks(execute=True):  # the inline recomputation
        response = world.client("organiser").post(f"{DEMO}/judgements/", body, format="json")
    assert response.status_code == 201, response.content
    query = Query.objects.get(collection=world.collection, qid="q-new")
    assert Document.objects.filter(collection=world.collection, docno="d-new").exists()
    # the new relevant document counts in the query's ideal list, as after an import
    assert IdealScore.objects.get(query=query, k=2).idcg == 3.0
    relevant = {"qid": "q1", "docno": "d-unretrieved", "grade": 2}
    assert (
        world.client("organiser").post(f"{DEMO}/judgements/", relevant, format="json").status_code
        == 201
    )


def test_a_refused_judgement_of_unknown_ids_creates_nothing(world: World) -> None:
    from annotations.models import Document, Query

    body = {"qid": "q-off", "docno": "d-off", "grade": 7}  # off the 0-3 scale
    _error(world.client("organiser").post(f"{DEMO}/judgements/", body, format="json"), 400)
    assert not Query.objects.filter(collection=world.collection, qid="q-off").exists()
    assert not Document.objects.filter(collection=world.collection, docno="d-off").exists()


def test_an_assessor_judges_known_pairs_only(world: World) -> None:
    body = {"qid": "q1", "docno": "d-unknown", "grade": 1}
    error = _error(world.client("assessor").post(f"{DEMO}/judgements/", body, format="json"), 400)
    assert set(error["fields"]) == {"docno"}


def test_run_scores_give_another_librarys_ndcg_on_request(
    world: World, django_capture_on_commit_callbacks: Capture
) -> None:
    results = [
        {"qid": "q1", "docno": "d1", "score": 1.0},
        {"qid": "q1", "docno": "d2", "score": 1.0},
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("organiser").put(
            f"{DEMO}/runs/tied/results/", {"results": results}, format="json"
        )
    assert response.status_code == 201, response.content
    client = world.client("organiser")
    url = f"{DEMO}/runs/tied/scores/?k=2"
    ideal = 3 + 1 / math.log2(3)
    # trec_eval (stored, the default): the tie goes to the docno descending, d2 (1) first.
    stored = client.get(url).json()
    assert stored["convention"] == "trec_eval"
    assert stored["per_query"][0]["ndcg"] == (1 + 3 / math.log2(3)) / ideal
    # scikit-learn: both ranks get the tied pair's mean gain, 2.
    response = client.get(f"{url}&convention=sklearn")
    body = response.json()
    assert body["convention"] == "sklearn"
    q1 = body["per_query"][0]
    assert q1["qid"] == "q1" and q1["answered"] is True
    assert q1["ndcg"] == pytest.approx((2 + 2 / math.log2(3)) / ideal, abs=1e-12)
    assert q1["dcg"] == stored["per_query"][0]["dcg"]  # the platform's own, as stored
    values = [row["ndcg"] for row in body["per_query"]]
    assert body["queries"] == len(values) == 2 and body["ndcg"] == sum(values) / 2
    assert response["ETag"] != client.get(url)["ETag"]
    # ranx keeps the given order of two tied documents: trec_eval's here.
    ranx = client.get(f"{url}&convention=ranx").json()
    assert ranx["per_query"][0]["ndcg"] == stored["per_query"][0]["ndcg"]
    error = _error(client.get(f"{url}&convention=trec"), 400)
    assert "convention" in str(error)
