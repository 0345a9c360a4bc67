"""The judging campaign through the API: pools, assignments, members and accounts,
adjudication, agreement, history and downloads; every operation per role, with the pages'
services, rules and errors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import services
from annotations.models import (
    AccountAudit,
    Adjudication,
    Assignment,
    AssignmentItem,
    Collection,
    Judgement,
    JudgementHistory,
    Membership,
    Pool,
)
from tests.factories import UserFactory

API = "/api/v1/collections"
DEMO = f"{API}/demo"


@pytest.fixture(autouse=True)
def _fresh(settings: Any) -> Iterator[None]:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


def _client(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


class Campaign:
    """A collection with 12 queries, 30 runs of long names, two assessors, one owner."""

    def __init__(self) -> None:
        self.collection = services.collection_create(slug="demo", cutoffs=[5, 10])
        self.users = {
            name: UserFactory(username=name)
            for name in ("organiser", "ann", "bob", "owner", "stranger")
        }
        self.users["staff"] = UserFactory(username="staff", is_staff=True)
        for name, role in (
            ("organiser", "organiser"),
            ("ann", "assessor"),
            ("bob", "assessor"),
            ("owner", "owner"),
        ):
            Membership.objects.create(collection=self.collection, user=self.users[name], role=role)
        qids = [f"q{i}" for i in range(1, 13)]
        services.queries_store(
            collection=self.collection, queries=[services.QueryFields(q, f"t {q}") for q in qids]
        )
        for r in range(30):
            name = f"run-{r:02d}-" + "x" * 140
            services.run_store(
                collection=self.collection,
                run_name=name,
                results={q: [(f"d{(r + i) % 8}", None, i + 1) for i in range(3)] for q in qids},
                owner=self.users["owner"] if r == 0 else self.users["organiser"],
            )
        self.run_names = sorted(self.collection.runs.values_list("name", flat=True))

    def client(self, name: str | None) -> APIClient:
        return _client(None if name is None else self.users[name])


@pytest.fixture
def campaign(db: None, django_capture_on_commit_callbacks: Any) -> Campaign:
    with django_capture_on_commit_callbacks(execute=True):
        return Campaign()


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json() if response["Content-Type"].startswith("application/json") else None


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content[:500]
    return response.json()["error"]


def _pool(campaign: Campaign, **body: Any) -> dict[str, Any]:
    body = {"name": "main", "depth": 2, **body}
    return _ok(campaign.client("organiser").post(f"{DEMO}/pools/", body, format="json"), 201)


ORGANISER_READS = [
    "pools/",
    "members/",
    "agreement/",
    "disagreements/",
    "adjudications/",
    "history/",
    "assessor-qrels/?assessor=ann",
    "scores/export/json/",
]


@pytest.mark.parametrize("path", ORGANISER_READS)
def test_organiser_reads_answer_by_role(campaign: Campaign, path: str) -> None:
    services.judgement_upsert(
        query=campaign.collection.queries.get(qid="q1"),
        document=campaign.collection.documents.get(docno="d1"),
        assessor=campaign.users["ann"],
        grade=1,
        source="api",
    )
    for who in ("organiser", "staff"):
        assert campaign.client(who).get(f"{DEMO}/{path}").status_code == 200, who
    for who in ("ann", "owner"):
        assert _error(campaign.client(who).get(f"{DEMO}/{path}"), 403)["code"] == (
            "permission_denied"
        )
    assert _error(campaign.client("stranger").get(f"{DEMO}/{path}"), 404)
    assert _error(campaign.client(None).get(f"{DEMO}/{path}"), 401)


def test_a_pool_by_depth_is_built_extended_assigned_with_overlap_and_reported(
    campaign: Campaign,
) -> None:
    org = campaign.client("organiser")
    pool = _pool(campaign, runs=campaign.run_names[:3], queries=["q1", "q2"])
    assert (pool["entries"], pool["unassigned"], pool["order"]) == (8, 8, "depth")
    assert pool["queries"] == ["q1", "q2"] and len(pool["runs"]) == 3
    response = org.get(f"{DEMO}/pools/{pool['id']}/")
    assert _ok(response)["assignments"] == []
    extended = _ok(
        org.post(
            f"{DEMO}/pools/{pool['id']}/extend/",
            {"depth": 3, "runs": campaign.run_names[:3]},
            format="json",
        )
    )
    assert extended["added"] == 2 and extended["pool"]["entries"] == 10
    assigned = _ok(
        org.post(
            f"{DEMO}/pools/{pool['id']}/assign/",
            {"assessors": ["ann", "bob"], "overlap": 2},
            format="json",
        )
    )
    assert [(a["assignment"]["assessor"], a["added"]) for a in assigned] == [
        ("ann", 10),
        ("bob", 10),
    ]
    status = _ok(org.get(f"{DEMO}/pools/{pool['id']}/"))
    assert status["unassigned"] == 0 and status["overlap"] == 2
    assert [a["progress"]["total"] for a in status["assignments"]] == [10, 10]
    # The same service's refusals: an overlap larger than the assessors, unknown names.
    error = _error(
        org.post(
            f"{DEMO}/pools/{pool['id']}/assign/",
            {"assessors": ["ann"], "overlap": 2},
            format="json",
        ),
        400,
    )
    assert "overlap" in error["fields"]
    error = _error(
        org.post(f"{DEMO}/pools/", {"name": "x", "depth": 2, "runs": ["nope"]}, format="json"),
        400,
    )
    assert "nope" in error["fields"]["runs"][0]
    error = _error(org.post(f"{DEMO}/pools/", {"name": "main", "depth": 2}, format="json"), 400)
    assert "exists" in error["fields"]["name"][0]


def test_a_pool_by_impact_needs_a_budget_and_keeps_it(campaign: Campaign) -> None:
    org = campaign.client("organiser")
    error = _error(
        org.post(f"{DEMO}/pools/", {"name": "i", "depth": 5, "order": "impact"}, format="json"),
        400,
    )
    assert "budget" in error["fields"]
    pool = _pool(campaign, name="i", depth=5, order="impact", budget=7)
    assert pool["order"] == "impact" and pool["budget"] == 7 and 0 < pool["entries"] <= 7


def test_assessors_see_their_own_assignments_and_judge_them_others_are_hidden(
    campaign: Campaign,
) -> None:
    org = campaign.client("organiser")
    pool = _pool(campaign, queries=["q1"])
    org.post(f"{DEMO}/pools/{pool['id']}/assign/", {"assessors": ["ann", "bob"]}, format="json")
    ann, bob = campaign.client("ann"), campaign.client("bob")
    mine = _ok(ann.get(f"{DEMO}/assignments/"))["results"]
    assert [a["assessor"] for a in mine] == ["ann"]
    items = _ok(ann.get(f"{DEMO}/assignments/{mine[0]['id']}/items/"))["results"]
    assert items and not any(item["judged"] for item in items)
    first = items[0]
    ann.post(
        f"{DEMO}/judgements/",
        {"qid": first["qid"], "docno": first["docno"], "grade": 1},
        format="json",
    )
    items = _ok(ann.get(f"{DEMO}/assignments/{mine[0]['id']}/items/"))["results"]
    assert (items[0]["judged"], items[0]["grade"]) == (True, 1)
    assert _error(bob.get(f"{DEMO}/assignments/{mine[0]['id']}/items/"), 404)
    assert _ok(org.get(f"{DEMO}/assignments/"))["count"] == 2
    assert _error(campaign.client("owner").get(f"{DEMO}/assignments/"), 403)
    assert _error(ann.get(f"{DEMO}/pools/{pool['id']}/"), 403)


def test_release_and_hand_over_what_is_left_keeping_grades(campaign: Campaign) -> None:
    org = campaign.client("organiser")
    pool = _pool(campaign, queries=["q1", "q2"])
    org.post(f"{DEMO}/pools/{pool['id']}/assign/", {"assessors": ["ann"]}, format="json")
    assignment = Assignment.objects.get(assessor=campaign.users["ann"])
    item = assignment.items.order_by("position").first()
    assert item is not None
    services.judgement_upsert(
        query=item.entry.query,
        document=item.entry.document,
        assessor=campaign.users["ann"],
        grade=2,
        source="api",
    )
    total = assignment.items.count()
    url = f"{DEMO}/assignments/{assignment.id}/release/"
    assert _error(campaign.client("ann").post(url, {}, format="json"), 403)
    body = _ok(org.post(url, {"to": "bob"}, format="json"))
    assert (body["released"], body["handed_over"]) == (total - 1, total - 1)
    assert body["assignment"]["progress"] == {
        "judged": 1, "skipped": 0, "left": 0, "total": 1, "percent": 100,
    }  # fmt: skip
    assert body["to"]["assessor"] == "bob" and body["to"]["progress"]["total"] == total - 1
    bobs = Assignment.objects.get(assessor=campaign.users["bob"])
    assert sorted(bobs.items.values_list("position", flat=True)) == list(range(1, total))
    # Released to the pool: the pairs are short of the overlap and the next assignment takes them.
    body = _ok(org.post(f"{DEMO}/assignments/{bobs.id}/release/", {}, format="json"))
    assert (body["released"], body["handed_over"], body["to"]) == (total - 1, 0, None)
    assert _ok(org.get(f"{DEMO}/pools/{pool['id']}/"))["unassigned"] == total - 1
    assert _error(org.post(url, {"to": "ann"}, format="json"), 400)["fields"]["to"]
    assert _error(org.post(url, {"to": "nobody"}, format="json"), 400)["fields"]["to"]
    assert AssignmentItem.objects.filter(assignment=assignment).count() == 1


def test_accounts_are_created_with_a_one_time_link_and_the_origin_rules_hold(
    campaign: Campaign,
) -> None:
    org = campaign.client("organiser")
    response = org.post(
        f"{DEMO}/accounts/", {"username": "carol", "role": "assessor"}, format="json"
    )
    body = _ok(response, 201)
    assert body["member"]["username"] == "carol" and body["member"]["link_available"]
    assert "/reset/" in body["link"]["url"] or body["link"]["url"].startswith("http")
    assert response["Location"].endswith(f"/members/{body['member']['id']}/")
    carol = get_user_model().objects.get(username="carol")
    assert not carol.has_usable_password()
    # The members page's rules: a username taken in any case, a malformed one.
    for username in ("Carol", "a b"):
        error = _error(
            org.post(
                f"{DEMO}/accounts/", {"username": username, "role": "assessor"}, format="json"
            ),
            400,
        )
        assert "username" in error["fields"]
    # A fresh link for carol; none for an account with a password of its own.
    member = Membership.objects.get(user=carol)
    _ok(org.post(f"{DEMO}/members/{member.id}/password-link/"))
    ann = Membership.objects.get(user=campaign.users["ann"])
    error = _error(org.post(f"{DEMO}/members/{ann.id}/password-link/"), 400)
    assert "has set a password" in error["detail"]
    # Another collection's organiser cannot take carol over: no role, no link.
    other = services.collection_create(slug="other", cutoffs=[5])
    rival = UserFactory(username="rival")
    Membership.objects.create(collection=other, user=rival, role="organiser")
    error = _error(
        _client(rival).post(
            f"{API}/other/members/", {"username": "carol", "role": "assessor"}, format="json"
        ),
        400,
    )
    assert "cannot be added" in error["fields"]["username"][0]
    assert AccountAudit.objects.filter(target=carol, action=AccountAudit.LINK).count() == 2


def test_roles_change_and_members_leave_but_the_last_organiser_stays(campaign: Campaign) -> None:
    org = campaign.client("organiser")
    added = _ok(
        org.post(f"{DEMO}/members/", {"username": "stranger", "role": "owner"}, format="json"),
        201,
    )
    changed = _ok(org.patch(f"{DEMO}/members/{added['id']}/", {"role": "assessor"}, format="json"))
    assert changed["role"] == "assessor"
    assert org.delete(f"{DEMO}/members/{added['id']}/").status_code == 204
    assert not Membership.objects.filter(user=campaign.users["stranger"]).exists()
    mine = Membership.objects.get(user=campaign.users["organiser"])
    error = _error(org.patch(f"{DEMO}/members/{mine.id}/", {"role": "owner"}, format="json"), 400)
    assert "last organiser" in error["fields"]["role"][0]
    assert "last organiser" in _error(org.delete(f"{DEMO}/members/{mine.id}/"), 400)["detail"]
    ann = Membership.objects.get(user=campaign.users["ann"])
    assert _error(
        campaign.client("ann").patch(
            f"{DEMO}/members/{ann.id}/", {"role": "organiser"}, format="json"
        ),
        403,
    )
    assert Membership.objects.get(id=ann.id).role == "assessor"


def test_disagreements_are_adjudicated_and_agreement_reported(campaign: Campaign) -> None:
    q1 = campaign.collection.queries.get(qid="q1")
    d1 = campaign.collection.documents.get(docno="d1")
    for name, grade in (("ann", 0), ("bob", 2)):
        services.judgement_upsert(
            query=q1, document=d1, assessor=campaign.users[name], grade=grade, source="api"
        )
    org = campaign.client("organiser")
    rows = _ok(org.get(f"{DEMO}/disagreements/"))["results"]
    assert [(r["qid"], r["docno"], r["spread"], r["adjudicated"]) for r in rows] == [
        ("q1", "d1", 2, None)
    ]
    assert _error(org.get(f"{DEMO}/disagreements/?min=3"), 400)["fields"]["min"]
    body = _ok(
        org.post(f"{DEMO}/adjudications/", {"qid": "q1", "docno": "d1", "grade": 1}, format="json")
    )
    assert (body["grade"], body["organiser"]) == (1, "organiser")
    assert Adjudication.objects.get(query=q1, document=d1).grade == 1
    assert _ok(org.get(f"{DEMO}/disagreements/"))["results"][0]["adjudicated"] == 1
    error = _error(
        org.post(f"{DEMO}/adjudications/", {"qid": "q2", "docno": "d1", "grade": 1}, format="json"),
        400,
    )
    assert "judged pair" in str(error["fields"])
    assert _error(
        org.post(f"{DEMO}/adjudications/", {"qid": "q1", "docno": "d1", "grade": 7}, format="json"),
        400,
    )
    agreement = _ok(org.get(f"{DEMO}/agreement/"))
    assert agreement["units"] == 1 and agreement["pairs"][0]["first"] == "ann"
    assert _error(
        campaign.client("ann").post(
            f"{DEMO}/adjudications/", {"qid": "q1", "docno": "d1", "grade": 2}, format="json"
        ),
        403,
    )


def test_history_is_paged_and_filtered_by_time_assessor_and_source(campaign: Campaign) -> None:
    queries = list(campaign.collection.queries.order_by("qid")[:3])
    d1 = campaign.collection.documents.get(docno="d1")
    for query in queries:
        services.judgement_upsert(
            query=query, document=d1, assessor=campaign.users["ann"], grade=1, source="api"
        )
    services.judgement_upsert(
        query=queries[0], document=d1, assessor=campaign.users["bob"], grade=2, source="api"
    )
    middle = timezone.now()
    JudgementHistory.objects.filter(assessor=campaign.users["ann"]).update(
        changed_at=middle - timedelta(hours=1)
    )
    org = campaign.client("organiser")
    page = _ok(org.get(f"{DEMO}/history/?limit=2"))
    assert page["count"] == 4 and len(page["results"]) == 2 and page["next"]
    since = (middle - timedelta(minutes=30)).isoformat().replace("+00:00", "Z")
    after = _ok(org.get(f"{DEMO}/history/", {"since": since}))
    assert [row["assessor"] for row in after["results"]] == ["bob"]
    before = _ok(org.get(f"{DEMO}/history/", {"until": since, "assessor": "ann"}))
    assert before["count"] == 3 and {row["new_grade"] for row in before["results"]} == {1}
    assert _ok(org.get(f"{DEMO}/history/?source=import"))["count"] == 0
    assert _error(org.get(f"{DEMO}/history/?since=yesterday"), 400)["fields"]["since"]
    assert _error(org.get(f"{DEMO}/history/?source=nope"), 400)["fields"]["source"]


def test_downloads_assessor_qrels_runs_and_score_exports(campaign: Campaign) -> None:
    q1 = campaign.collection.queries.get(qid="q1")
    for docno, grade in (("d1", 2), ("d2", 0)):
        services.judgement_upsert(
            query=q1,
            document=campaign.collection.documents.get(docno=docno),
            assessor=campaign.users["ann"],
            grade=grade,
            source="api",
        )
    org = campaign.client("organiser")
    response = org.get(f"{DEMO}/assessor-qrels/?assessor=ann")
    assert b"".join(response.streaming_content).decode() == "q1 0 d1 2\nq1 0 d2 0\n"
    assert _error(org.get(f"{DEMO}/assessor-qrels/?assessor=bob"), 404)
    assert _error(org.get(f"{DEMO}/assessor-qrels/"), 400)["fields"]["assessor"]
    own, other = campaign.run_names[0], campaign.run_names[1]
    owner = campaign.client("owner")
    text = b"".join(owner.get(f"{DEMO}/runs/{own}/download/").streaming_content).decode()
    assert text.count("\n") == 36 and text.split()[:3] == ["q1", "Q0", "d0"]
    assert _error(owner.get(f"{DEMO}/runs/{other}/download/"), 404)
    assert _error(campaign.client("ann").get(f"{DEMO}/runs/{own}/download/"), 404)
    assert org.get(f"{DEMO}/runs/{other}/download/").status_code == 200
    trec = org.get(f"{DEMO}/scores/export/trec/", {"run": own, "k": 5})
    assert trec.status_code == 200 and "ndcg_cut_5" in b"".join(trec.streaming_content).decode()
    csv = org.get(f"{DEMO}/scores/export/csv/")
    assert b"".join(csv.streaming_content).decode().startswith("run,qid,k,ndcg")
    document = org.get(f"{DEMO}/scores/export/json/?k=10")
    assert document["Content-Type"] == "application/json"
    assert _error(org.get(f"{DEMO}/scores/export/trec/"), 400)["fields"]["run"]
    assert _error(org.get(f"{DEMO}/scores/export/json/?k=3"), 400)["fields"]["k"]


def test_the_members_page_and_the_api_refuse_a_taken_username_alike(
    campaign: Campaign, client: Any
) -> None:
    client.force_login(campaign.users["organiser"])
    response = client.post(
        "/collections/demo/members/", {"action": "create", "username": "ANN", "role": "owner"}
    )
    assert response.status_code == 400 and "This username is taken" in response.content.decode()
    assert get_user_model().objects.filter(username="ANN").count() == 0
    assert isinstance(campaign.collection, Collection) and Pool.objects.count() == 0
    assert Judgement.objects.count() == 0
