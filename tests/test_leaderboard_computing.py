"""No cold reads: a cutoff whose first leaderboard snapshot a worker has not stored yet
answers "being computed" at once (API 202, the page a notice it replaces by itself); the
read computes and queues nothing (the write that moved the scores queued the refresh)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import caches
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import publishing, services
from annotations.models import Collection, LeaderboardSnapshot
from annotations.scores import refresh_work


@pytest.fixture
def judged(trial: Collection, settings: Any, django_capture_on_commit_callbacks: Any) -> Collection:
    """The trial collection with judgements, scored (eagerly), its snapshots removed."""
    alice = trial.memberships.get(user__username="alice").user
    with django_capture_on_commit_callbacks(execute=True):
        for qid, docno, grade in [("q1", "d1", 3), ("q1", "d6", 1), ("q2", "d5", 2)]:
            services.judgement_record(
                query=trial.queries.get(qid=qid),
                document=trial.documents.get(docno=docno),
                assessor=alice,
                grade=grade,
                source="form",
            )
    LeaderboardSnapshot.objects.filter(collection=trial).delete()
    return trial


@pytest.fixture
def queued(
    judged: Collection, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> list[dict[str, Any]]:
    """The refreshes published, not run."""
    settings.NDCG_COORDINATION_SHARED = True
    caches["coordination"].clear()
    calls: list[dict[str, Any]] = []

    def record(args: tuple[Any, ...], **options: Any) -> None:
        calls.append({"collection": args[0], **options})

    monkeypatch.setattr(publishing.REFRESH_LEADERBOARDS, "apply_async", record)
    return calls


def _api(trial: Collection, username: str) -> APIClient:
    client = APIClient()
    user = trial.memberships.get(user__username=username).user
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_the_api_answers_202_while_the_first_snapshot_is_computed_then_the_leaderboard(
    trial: Collection, queued: list[dict[str, Any]]
) -> None:
    client = _api(trial, "olga")
    k = trial.sorted_cutoffs[-1]
    for _ in range(3):  # however many ask: nothing computed or queued here
        answer = client.get(f"/api/v1/collections/trial/leaderboard/?k={k}")
        assert answer.status_code == 202
        assert answer["Retry-After"] == "2"
        assert answer.json() == {
            "collection": "trial",
            "k": k,
            "computing": True,
            "retry_after": 2,
            "detail": f"The leaderboard at k={k} is being computed; ask again in 2 s.",
        }
    assert not LeaderboardSnapshot.objects.filter(collection=trial).exists()
    assert queued == []
    # the worker's refresh stores every cutoff's snapshot; then the leaderboard is served
    assert refresh_work.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)
    stored = set(LeaderboardSnapshot.objects.filter(collection=trial).values_list("k", flat=True))
    assert stored == set(trial.sorted_cutoffs)
    board = client.get(f"/api/v1/collections/trial/leaderboard/?k={k}")
    assert board.status_code == 200
    assert {row["name"] for row in board.json()["runs"]} == {"bm25", "dense"}


def test_the_page_says_being_computed_and_serves_the_table_once_stored(
    trial: Collection, queued: list[dict[str, Any]]
) -> None:
    client = Client()
    client.force_login(trial.memberships.get(user__username="olga").user)
    page = client.get("/collections/trial/leaderboard/?k=5")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="leaderboard-computing"' in html and "being computed" in html
    assert 'data-stamp="computing"' in html  # the page's poll reloads it until it is there
    assert 'id="leaderboard"' not in html
    assert queued == []
    refresh_work.leaderboards_refresh_task(collection_id=trial.id)
    html = client.get("/collections/trial/leaderboard/?k=5").content.decode()
    assert 'id="leaderboard-computing"' not in html
    assert '<tr data-run="bm25"' in html and '<tr data-run="dense"' in html


@pytest.mark.browser
def test_in_a_browser_the_notice_gives_way_to_the_table_by_itself(  # type: ignore[no-untyped-def]
    queued: list[dict[str, Any]],
    settings: Any,
    browser,
    live_server,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At a phone's width, axe clean, then replaced by the table without a reload."""
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import expect

    from tests.conftest import browser_page

    trial = Collection.objects.get(slug="trial")
    monkeypatch.setattr("annotations.views.scores.POLL_MS", 250)
    with browser_page(browser, live_server, viewport={"width": 390, "height": 844}) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", "pass-word-123")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.goto("/collections/trial/leaderboard/?k=5")
        expect(page.locator("#leaderboard-computing")).to_contain_text("being computed")
        serious = [
            violation["id"]
            for violation in Axe().run(page).response["violations"]
            if violation["impact"] in ("serious", "critical")
        ]
        assert serious == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        refresh_work.leaderboards_refresh_task(collection_id=trial.id)  # the worker's refresh
        expect(page.locator("#leaderboard tr[data-run='bm25']")).to_be_visible()
        expect(page.locator("#leaderboard-computing")).to_have_count(0)
