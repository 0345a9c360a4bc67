"""The README's role table, walked: every page and endpoint for every role, as a status code.

Assessors are blinded to systems and scores unless an organiser opens the leaderboard to
them; system owners see the leaderboard and their own runs; organisers see everything.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from annotations import services
from annotations.models import Collection, Membership
from tests.factories import UserFactory

Capture = Callable[..., AbstractContextManager[Any]]

# Columns of the table: who asks.
WHO = ("anonymous", "stranger", "assessor", "assessor_open", "owner", "organiser", "staff")
C = "/collections/walk"
API = "/api/v1/collections/walk"

# path -> the status each of WHO gets (private collection). 302: to the login page.
PRIVATE: dict[str, tuple[int, ...]] = {
    f"{C}/": (302, 404, 200, 200, 200, 200, 200),
    f"{C}/leaderboard/": (302, 404, 404, 200, 200, 200, 200),
    f"{C}/leaderboard/state/": (302, 404, 404, 200, 200, 200, 200),
    f"{C}/runs/mine/": (302, 404, 404, 404, 200, 200, 200),
    f"{C}/runs/theirs/": (302, 404, 404, 404, 404, 200, 200),
    f"{C}/queries/q1/": (302, 404, 404, 404, 404, 200, 200),
    f"{C}/queries/": (302, 404, 404, 404, 404, 200, 200),
    f"{C}/documents/d1/": (302, 404, 404, 404, 404, 200, 200),
    f"{C}/compare/": (302, 404, 404, 404, 200, 200, 200),
    f"{C}/compare/?a=mine&b=theirs": (302, 404, 404, 404, 404, 200, 200),
    f"{C}/pools/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/agreement/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/disagreements/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/versions/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/import/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/systems/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/runs/": (302, 404, 404, 404, 200, 200, 200),
    f"{C}/runs/mine/download/": (302, 404, 404, 404, 200, 200, 200),
    f"{C}/runs/theirs/download/": (302, 404, 404, 404, 404, 200, 200),
    f"{C}/runs/mine/delete/": (302, 404, 404, 404, 200, 200, 200),
    f"{C}/runs/theirs/replace/": (302, 404, 404, 404, 404, 200, 200),
    f"{C}/members/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/dashboard/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/dashboard/state/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/settings/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/exports/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/exports/qrels/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/exports/history/": (302, 404, 403, 403, 403, 200, 200),
    f"{C}/exports/scores/?scores-format=csv": (302, 404, 403, 403, 403, 200, 200),
    "/create-collection/": (302, 403, 403, 403, 403, 200, 200),
    "/judging/": (302, 200, 200, 200, 200, 200, 200),
    f"{API}/": (401, 404, 200, 200, 200, 200, 200),
    f"{API}/leaderboard/": (401, 404, 404, 200, 200, 200, 200),
    f"{API}/runs/": (401, 404, 404, 404, 200, 200, 200),
    f"{API}/runs/mine/": (401, 404, 404, 404, 200, 200, 200),
    f"{API}/runs/theirs/": (401, 404, 404, 404, 200, 200, 200),
    f"{API}/runs/mine/scores/": (401, 404, 404, 404, 200, 200, 200),
    f"{API}/runs/theirs/scores/": (401, 404, 404, 404, 404, 200, 200),
    f"{API}/compare/?a=mine&b=theirs": (401, 404, 404, 404, 404, 200, 200),
    f"{API}/judgements/": (401, 404, 200, 200, 403, 200, 200),
    f"{API}/qrels/": (401, 404, 403, 403, 403, 200, 200),
    f"{API}/sensitivity/": (401, 404, 403, 403, 403, 200, 200),
    f"{API}/versions/": (401, 404, 403, 403, 403, 200, 200),
    f"{API}/as-of/qrels/?at=2100-01-01T00:00:00Z": (401, 404, 403, 403, 403, 200, 200),
    f"{API}/import-jobs/": (401, 404, 403, 403, 200, 200, 200),
    f"{API}/systems/": (401, 404, 403, 403, 403, 200, 200),
    f"{API}/runs-zip/": (401, 404, 403, 403, 403, 200, 200),
    f"{C}/exports/runs.zip": (302, 404, 403, 403, 403, 200, 200),
}

# With a public leaderboard anyone reads the leaderboard, run pages, run scores and
# comparisons; everything else stays as above.
PUBLIC: dict[str, tuple[int, ...]] = {
    **PRIVATE,
    f"{C}/leaderboard/": (200, 200, 200, 200, 200, 200, 200),
    f"{C}/leaderboard/state/": (200, 200, 200, 200, 200, 200, 200),
    f"{C}/runs/mine/": (200, 200, 200, 200, 200, 200, 200),
    f"{C}/runs/theirs/": (200, 200, 200, 200, 200, 200, 200),
    f"{C}/compare/": (200, 200, 200, 200, 200, 200, 200),
    f"{C}/compare/?a=mine&b=theirs": (200, 200, 200, 200, 200, 200, 200),
    f"{API}/leaderboard/": (200, 200, 200, 200, 200, 200, 200),
    f"{API}/runs/mine/scores/": (200, 200, 200, 200, 200, 200, 200),
    f"{API}/runs/theirs/scores/": (200, 200, 200, 200, 200, 200, 200),
    f"{API}/compare/?a=mine&b=theirs": (200, 200, 200, 200, 200, 200, 200),
}


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def walk(db: None, django_capture_on_commit_callbacks: Capture, write_file: Any) -> Collection:
    cache.clear()  # API throttles count in the cache
    with django_capture_on_commit_callbacks(execute=True):
        collection = services.collection_create(slug="walk", cutoffs=[2])
        users = {name: UserFactory(username=name) for name in WHO[1:-1]}
        UserFactory(username="staff", is_staff=True)
        for name, role in (
            ("assessor", "assessor"),
            ("assessor_open", "assessor"),
            ("owner", "owner"),
            ("organiser", "organiser"),
        ):
            Membership.objects.create(collection=collection, user=users[name], role=role)
        services.judgements_import(
            collection=collection,
            source=write_file("w.qrels", "q1 0 d1 2\n"),
            assessor=users["assessor"],
        )
        for name, owner in (("mine", users["owner"]), ("theirs", None)):
            services.run_store(
                collection=collection,
                run_name=name,
                owner=owner,
                results={"q1": [("d1", 2.0, 1), ("d2", 1.0, 2)]},
            )
    return collection


def _client(who: str) -> Client:
    client = Client()
    if who != "anonymous":
        from django.contrib.auth import get_user_model

        client.force_login(get_user_model().objects.get(username=who))
    return client


def _walk(collection: Collection, who: str, table: dict[str, tuple[int, ...]]) -> None:
    """Every path of the table as `who`; all mismatches are reported at once."""
    # "assessor_open" is an assessor of a collection whose leaderboard is open to assessors.
    services.collection_update(
        collection=collection, assessors_see_leaderboard=(who == "assessor_open")
    )
    client = _client(who)
    expected = {path: statuses[WHO.index(who)] for path, statuses in table.items()}
    assert {path: client.get(path).status_code for path in table} == expected


@pytest.mark.parametrize("who", WHO)
def test_private_collection_role_table(walk: Collection, who: str) -> None:
    _walk(walk, who, PRIVATE)


@pytest.mark.parametrize("who", WHO)
def test_public_leaderboard_role_table(walk: Collection, who: str) -> None:
    services.collection_publish(collection=walk, public=True)
    _walk(walk, who, PUBLIC)


def test_an_assessor_sees_the_scale_and_assignments_but_no_scores_on_the_overview(
    walk: Collection,
) -> None:
    html = _client("assessor").get(f"{C}/").content.decode()
    assert "Perfectly relevant" in html  # the grade scale is the assessors' guideline
    assert 'id="leaderboard"' not in html and "mine" not in html and "theirs" not in html
    services.collection_update(collection=walk, assessors_see_leaderboard=True)
    html = _client("assessor").get(f"{C}/").content.decode()
    assert 'id="leaderboard"' in html and "mine" in html


def test_a_leaderboard_links_only_the_run_pages_its_reader_may_open(walk: Collection) -> None:
    owner = _client("owner").get(f"{C}/leaderboard/").content.decode()
    assert f'href="{C}/runs/mine/' in owner and f'href="{C}/runs/theirs/' not in owner
    organiser = _client("organiser").get(f"{C}/leaderboard/").content.decode()
    assert f'href="{C}/runs/mine/' in organiser and f'href="{C}/runs/theirs/' in organiser


MENUS = {
    "organiser": [
        "Overview",
        "Dashboard",
        "Leaderboard",
        "Runs",
        "Compare",
        "Queries",
        "Judging",
        "Agreement",
        "Machine judges",
        "Search systems",
        "Versions",
        "Import",
        "Members",
        "Export",
        "Webhooks",
        "Settings",
        "API docs",
    ],
    "owner": ["Overview", "Leaderboard", "Runs", "Compare", "API docs"],
    "assessor": ["Overview", "My judging", "API docs"],
    "assessor_open": ["Overview", "Leaderboard", "My judging", "API docs"],
}


@pytest.mark.parametrize("who", list(MENUS))
def test_the_collection_menu_shows_what_the_role_may_open(walk: Collection, who: str) -> None:
    import re

    services.collection_update(collection=walk, assessors_see_leaderboard=(who == "assessor_open"))
    client = _client(who)
    html = client.get(f"{C}/").content.decode()
    menu = html[
        html.index('<nav class="collection-menu"') : html.index(
            "</nav>", html.index('<nav class="collection-menu"')
        )
    ]
    labels = re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', menu)
    assert [label for _, label in labels] == MENUS[who]
    for url, _ in labels:  # every entry opens
        assert client.get(url).status_code == 200, url


def test_an_organiser_opens_the_leaderboard_to_assessors_through_the_api(walk: Collection) -> None:
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    users = get_user_model().objects
    organiser, assessor = APIClient(), APIClient()
    organiser.force_authenticate(users.get(username="organiser"))
    assessor.force_authenticate(users.get(username="assessor"))
    assert assessor.get(f"{API}/leaderboard/").status_code == 404
    body = {"assessors_see_leaderboard": True}
    response = organiser.patch(f"{API}/", body, format="json")
    assert response.status_code == 200 and response.json()["assessors_see_leaderboard"] is True
    assert assessor.get(f"{API}/leaderboard/").status_code == 200
    assert assessor.get(f"{API}/runs/mine/scores/").status_code == 404  # the leaderboard only
    assert (
        assessor.patch(f"{API}/", {"assessors_see_leaderboard": False}, format="json").status_code
        == 403
    )
