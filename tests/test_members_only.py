"""Work and judgements go only to a collection's own organisers and assessors: assigning,
handing over and importing qrels make nobody a member, and answer alike for every other name
(another collection's pending account, a system account, a superuser, no account at all)."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from rest_framework.test import APIClient

from annotations import services
from annotations.apis import import_jobs
from annotations.models import (
    Assignment,
    AssignmentItem,
    Collection,
    ImportJob,
    Judgement,
    Membership,
    Pool,
)
from annotations.services.assignments import assignment_release
from annotations.services.jobs import import_job_create
from tests.factories import CollectionFactory, UserFactory

API = "/api/v1/collections/trial"
# Accounts outside "trial" (and one name no account has) that an organiser of "trial" might
# name: the same refusal for each, so naming one tells nothing about it.
OUTSIDERS = ["pat", "rita", "trec", "root", "nosuch"]
# The import account `trec` is the qrels imports' own default, so an import may name it.
IMPORT_OUTSIDERS = ["pat", "rita", "root", "nosuch"]
CHOSEN = (
    "The account chosen is not an assessor or organiser of this collection: add them on the "
    "Members page (/collections/trial/members/) or with POST /api/v1/collections/trial/members/ "
    "first."
)


def refusal(name: str) -> str:
    return (
        f"'{name}' is not an assessor or organiser of this collection: add them on the Members "
        "page (/collections/trial/members/) or with POST /api/v1/collections/trial/members/ first."
    )


def user(name: str) -> Any:
    return get_user_model().objects.get(username=name)


@pytest.fixture(autouse=True)
def _fresh(settings: Any, tmp_path: Path) -> Iterator[None]:
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    settings.CELERY_BROKER_URL = ""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def theirs(trial: Collection) -> Collection:
    """Beside "trial" (organiser olga, assessors alice and bob): collection "theirs", whose
    organiser rita has just created the account pat (no password yet); the import account
    trec; a superuser root."""
    other = CollectionFactory(slug="theirs")
    rita = UserFactory(username="rita")
    Membership.objects.create(collection=other, user=rita, role=Membership.ORGANISER)
    services.account_create(collection=other, username="pat", role="assessor", actor=rita)
    services.import_assessor()
    get_user_model().objects.create_superuser("root", "root@example.org", "pass-word-123")
    return other


@pytest.fixture
def pool(theirs: Collection, trial: Collection) -> Pool:
    return services.pool_build(collection=trial, name="main", depth=2)[0]


@pytest.fixture
def alices(pool: Pool) -> Assignment:
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    return assignment


def api(name: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(user(name))
    return client


def page(name: str) -> Client:
    client = Client()
    client.force_login(user(name))
    return client


def nobody_joined(trial: Collection) -> None:
    """No outsider holds a role in "trial", and pat's own organiser can still hand pat a
    set-password link (a role elsewhere would block it)."""
    members = set(trial.memberships.values_list("user__username", flat=True))
    assert members == {"olga", "alice", "bob"}
    pat = Membership.objects.get(user__username="pat")
    link = api("rita").post(f"/api/v1/collections/theirs/members/{pat.id}/password-link/")
    assert link.status_code == 200, link.content


# --- assigning --------------------------------------------------------------------------


@pytest.mark.parametrize("name", OUTSIDERS)
def test_the_api_assigns_no_outsider_and_answers_alike(
    trial: Collection, pool: Pool, name: str
) -> None:
    response = api("olga").post(
        f"{API}/pools/{pool.id}/assign/", {"assessors": ["alice", name]}, format="json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {"assessors": [refusal(name)]}
    assert not Assignment.objects.exists()
    nobody_joined(trial)


@pytest.mark.parametrize("name", OUTSIDERS)
def test_the_api_hands_nothing_over_to_an_outsider_and_answers_alike(
    trial: Collection, alices: Assignment, name: str
) -> None:
    left = alices.items.count()
    response = api("olga").post(
        f"{API}/assignments/{alices.id}/release/", {"to": name}, format="json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {"to": [refusal(name)]}
    assert alices.items.count() == left
    assert Assignment.objects.count() == 1
    nobody_joined(trial)


@pytest.mark.parametrize("name", ["pat", "rita", "trec", "root"])
def test_the_services_refuse_an_outsider_handed_to_them_as_an_account(
    trial: Collection, alices: Assignment, name: str
) -> None:
    outsider = user(name)
    with pytest.raises(ValidationError) as caught:
        services.assignment_create(pool=alices.pool, assessors=[outsider])
    assert caught.value.message_dict == {"assessors": [refusal(name)]}
    with pytest.raises(ValidationError) as caught:
        assignment_release(assignment=alices, actor=user("olga"), to=outsider)
    assert caught.value.message_dict == {"to": [refusal(name)]}
    assert Assignment.objects.count() == 1
    nobody_joined(trial)


def test_a_system_owner_only_is_not_given_work(trial: Collection, pool: Pool) -> None:
    owner = UserFactory(username="owen")
    Membership.objects.create(collection=trial, user=owner, role=Membership.OWNER)
    response = api("olga").post(
        f"{API}/pools/{pool.id}/assign/", {"assessors": ["owen"]}, format="json"
    )
    assert response.json()["error"]["fields"] == {"assessors": [refusal("owen")]}


@pytest.mark.parametrize("name", ["pat", "root"])
def test_the_pool_page_assigns_no_outsider_and_answers_alike(
    trial: Collection, pool: Pool, name: str
) -> None:
    url = f"/collections/trial/pools/{pool.id}/assign/"
    olga = page("olga")
    for chosen in (user(name).pk, 999_999):  # an account, and an id no account has
        response = olga.post(url, {"assessors": [user("alice").pk, chosen], "overlap": "1"})
        assert response.status_code == 200
        assert escape(CHOSEN) in response.content.decode()
    assert not Assignment.objects.exists()
    nobody_joined(trial)


@pytest.mark.parametrize("name", OUTSIDERS)
def test_the_pool_page_hands_nothing_over_to_an_outsider_and_answers_alike(
    trial: Collection, alices: Assignment, name: str
) -> None:
    left = alices.items.count()
    url = f"/collections/trial/pools/{alices.pool_id}/assignments/{alices.id}/release/"
    response = page("olga").post(url, {"to": name}, follow=True)
    assert escape(f"Not released: {refusal(name)}") in response.content.decode()
    assert alices.items.count() == left
    nobody_joined(trial)


@pytest.mark.parametrize("name", OUTSIDERS)
def test_the_assign_command_assigns_no_outsider_and_answers_alike(
    trial: Collection, pool: Pool, name: str
) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("assign", "trial", "main", "--assessors", f"alice,{name}")
    assert str(caught.value) == f"assessors: {refusal(name)} (nothing was changed)"
    assert not Assignment.objects.exists()
    nobody_joined(trial)


def test_members_are_assigned_and_handed_work_as_before(trial: Collection, pool: Pool) -> None:
    olga = api("olga")
    response = olga.post(
        f"{API}/pools/{pool.id}/assign/", {"assessors": ["alice", "olga"]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert {body["assignment"]["assessor"] for body in response.json()} == {"alice", "olga"}
    alices = Assignment.objects.get(assessor__username="alice")
    left = alices.items.count()
    response = olga.post(f"{API}/assignments/{alices.id}/release/", {"to": "bob"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["handed_over"] == left
    bobs = Assignment.objects.get(assessor__username="bob")
    assert bobs.items.count() == left
    url = f"/collections/trial/pools/{pool.id}/assignments/{bobs.id}/release/"
    response = page("olga").post(url, {"to": "alice"}, follow=True)
    assert f"{left} pairs bob had left are handed to alice." in response.content.decode()
    call_command("assign", "trial", "main", "--assessors", "bob,alice", "--overlap", "2")
    assert AssignmentItem.objects.filter(assignment__assessor__username="bob").exists()
    nobody_joined(trial)


# --- importing qrels --------------------------------------------------------------------


def _qrels(**fields: Any) -> dict[str, Any]:
    return {"file": SimpleUploadedFile("a.qrels", b"q1 0 d1 2\n"), **fields}


@pytest.mark.parametrize("name", IMPORT_OUTSIDERS)
def test_the_qrels_api_imports_as_no_outsider_and_answers_alike(
    trial: Collection, theirs: Collection, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    olga = api("olga")
    response = olga.post(f"{API}/imports/qrels/", _qrels(assessor=name), format="multipart")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {"assessor": [refusal(name)]}
    response = olga.post(
        f"{API}/import-jobs/", _qrels(kind="qrels", assessor=name), format="multipart"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {"assessor": [refusal(name)]}
    # every file a job: the synchronous endpoint's job path
    monkeypatch.setattr(import_jobs, "JOB_MB", 0)
    response = olga.post(f"{API}/imports/qrels/", _qrels(assessor=name), format="multipart")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {"assessor": [refusal(name)]}
    assert not Judgement.objects.exists() and not ImportJob.objects.exists()
    nobody_joined(trial)


@pytest.mark.parametrize("name", ["pat", "root"])
def test_an_import_job_is_not_recorded_for_an_outsider(
    trial: Collection, theirs: Collection, name: str
) -> None:
    upload = SimpleUploadedFile("a.qrels", b"q1 0 d1 2\n")
    with pytest.raises(ValidationError) as caught:
        import_job_create(
            collection=trial,
            kind=ImportJob.QRELS,
            upload=upload,
            created_by=user("olga"),
            assessor=user(name),
        )
    assert caught.value.message_dict == {"assessor": [refusal(name)]}
    assert not ImportJob.objects.exists()


@pytest.mark.parametrize("name", ["pat", "root"])
def test_the_import_page_imports_as_no_outsider_and_answers_alike(
    trial: Collection, theirs: Collection, name: str
) -> None:
    url = reverse("collection-import-upload", args=["trial", "qrels"])
    olga = page("olga")
    for chosen in (user(name).pk, 999_999):
        file = SimpleUploadedFile("a.qrels", b"q1 0 d1 2\n")
        response = olga.post(url, {"qrels-file": file, "qrels-assessor": chosen})
        assert response.status_code == 400
        assert escape(CHOSEN) in response.content.decode()
    assert not Judgement.objects.exists() and not ImportJob.objects.exists()
    nobody_joined(trial)


@pytest.mark.parametrize("name", IMPORT_OUTSIDERS)
def test_the_import_qrels_command_imports_as_no_outsider_and_answers_alike(
    trial: Collection, theirs: Collection, write_file: Any, name: str
) -> None:
    path = write_file("a.qrels", "q1 0 d1 2\n")
    with pytest.raises(CommandError) as caught:
        call_command("import_qrels", "trial", str(path), "--assessor", name)
    assert str(caught.value) == f"assessor: {refusal(name)} (nothing was changed)"
    assert not Judgement.objects.exists()
    nobody_joined(trial)


def test_qrels_are_still_imported_as_a_member_the_caller_or_the_import_account(
    trial: Collection, theirs: Collection, write_file: Any
) -> None:
    olga = api("olga")
    for fields in ({"assessor": "alice"}, {}, {"assessor": "trec"}):
        response = olga.post(f"{API}/imports/qrels/", _qrels(**fields), format="multipart")
        assert response.status_code == 200, response.content
    call_command("import_qrels", "trial", str(write_file("b.qrels", "q1 0 d2 1\n")))
    call_command(
        "import_qrels", "trial", str(write_file("c.qrels", "q1 0 d3 1\n")), "--assessor", "bob"
    )
    judged = set(Judgement.objects.values_list("assessor__username", "document__docno"))
    assert judged == {
        ("alice", "d1"),
        ("olga", "d1"),
        ("trec", "d1"),
        ("trec", "d2"),
        ("bob", "d3"),
    }
    nobody_joined(trial)


def test_the_command_line_adds_members_by_the_members_rules_and_then_assigns(
    trial: Collection,
) -> None:
    """What the members page does, the command line does: accounts that log in become
    assessors (one refused name adds nobody), and `assign` then hands them pairs."""
    UserFactory(username="newcomer")
    UserFactory(username="second")
    with pytest.raises(CommandError, match="cannot be added"):
        call_command("add_member", "trial", "second,nosuch", stdout=StringIO())
    assert not Membership.objects.filter(user__username="second").exists()
    out = StringIO()
    call_command("add_member", "trial", "newcomer,second", stdout=out)
    assert "newcomer: assessor of trial" in out.getvalue()
    services.pool_build(collection=trial, name="main", depth=2)
    call_command("assign", "trial", "main", "--assessors", "newcomer", stdout=out)
    assert "newcomer: +" in out.getvalue()
