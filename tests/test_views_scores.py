"""Score pages through the test client: access, the state document, grades only for organisers."""

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.test import Client

from annotations import services
from annotations.models import Collection, Membership
from tests.factories import UserFactory, grade_pair

Capture = Callable[..., AbstractContextManager[Any]]


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def scored(db: None, django_capture_on_commit_callbacks: Capture, write_file: Any) -> Collection:
    with django_capture_on_commit_callbacks(execute=True):
        collection = services.collection_create(slug="pages", cutoffs=[3])
        judge = UserFactory(username="judge")
        services.judgements_import(
            collection=collection, source=write_file("p.qrels", "q1 0 d1 2\n"), assessor=judge
        )
        for name, docs in (("alpha", ("d1", "d2")), ("beta", ("d3", "d1"))):
            services.run_store(
                collection=collection,
                run_name=name,
                results={"q1": [(doc, None, i) for i, doc in enumerate(docs, 1)]},
            )
    for role in ("organiser", "owner"):
        Membership.objects.create(collection=collection, user=UserFactory(username=role), role=role)
    return collection


def _as(username: str | None) -> Client:
    client = Client()
    if username:
        client.force_login(UserFactory(username=username))
    return client


def test_leaderboard_page_shows_ci_groups_judged_and_best_case(scored: Collection) -> None:
    html = _as("owner").get("/collections/pages/leaderboard/").content.decode()
    assert 'data-run="alpha"' in html and "95% CI" in html and "judged@3" in html
    assert "10000 resamples" in html and "Last recomputed" in html
    assert 'id="leaderboard-live" data-stamp="' in html
    assert "Tier" not in html and "randomised Tukey HSD" in html and "Best case" in html
    assert 'id="forest-plot"' in html and 'id="report-latex"' in html


def test_state_document_carries_the_stamp_and_pending(scored: Collection) -> None:
    state = _as("owner").get("/collections/pages/leaderboard/state/").json()
    fields = {"stamp", "table", "pending", "pending_queries", "pending_runs", "last_recomputed"}
    assert set(state) == fields
    assert state["pending"] is False and len(state["stamp"]) == 16
    assert state["table"] == state["stamp"]  # no leaderboard stored yet: a read computes it


def test_private_pages_need_a_member_and_public_leaderboards_open_to_all(
    scored: Collection,
) -> None:
    assert _as(None).get("/collections/pages/leaderboard/").status_code == 302
    assert _as("stranger").get("/collections/pages/leaderboard/").status_code == 404
    assert _as("stranger").get("/collections/pages/runs/alpha/").status_code == 404
    services.collection_publish(collection=scored, public=True)
    for path in ("leaderboard/", "leaderboard/state/", "runs/alpha/"):
        assert _as(None).get(f"/collections/pages/{path}").status_code == 200
    assert _as(None).get("/collections/pages/queries/q1/").status_code == 302
    assert _as("stranger").get("/collections/pages/queries/q1/").status_code == 404


def test_run_page_has_chart_data_and_a_sortable_table(scored: Collection) -> None:
    response = _as("organiser").get("/collections/pages/runs/beta/")
    html = response.content.decode()
    assert 'id="run-chart-data"' in html and "vendor/chart.umd.js" in html
    assert 'class="data sortable" id="per-query"' in html
    assert response.context["chart"]()["labels"] == ["q1"]  # read only if the page renders it
    assert _as("organiser").get("/collections/pages/runs/ghost/").status_code == 404


def test_query_page_shows_grades_and_badges_to_organisers_only(scored: Collection) -> None:
    organiser = _as("organiser").get("/collections/pages/queries/q1/?a=alpha&b=beta")
    html = organiser.content.decode()
    assert "grade 2" in html and html.count("badge unjudged") == 2  # d2 in alpha, d3 in beta
    assert 'id="judged-documents"' in html
    assert "2 documents in the runs' top 3 for this query are not judged yet" in html
    # Every run's ranking of the query is on the page: system owners are not shown it.
    assert _as("owner").get("/collections/pages/queries/q1/").status_code == 404
    assert _as("organiser").get("/collections/pages/queries/nope/").status_code == 404


def test_shade_steps_a_confusion_matrix_by_its_largest_count() -> None:
    from annotations.templatetags.score_format import shade

    rows = [(0, [4, 0]), (1, [1, 8])]
    assert [shade(count, rows) for count in (0, 1, 4, 8)] == [0, 1, 3, 5]
    assert shade(3, [(0, [0, 0])]) == 0 and shade("x", rows) == 0


def _body(response: Any) -> bytes:
    """The page between its cutoff links and its scripts (the head carries per-request
    nonces and tokens)."""
    return bytes(response.content).split(b'<nav class="cutoffs">')[1].split(b"<script")[0]


def test_a_stored_leaderboard_page_is_served_without_reading_its_rows(
    scored: Collection, django_capture_on_commit_callbacks: Capture
) -> None:
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = "/collections/pages/leaderboard/?k=3"
    organiser, owner = _as("organiser"), _as("owner")
    for _ in range(3):  # the rows, then their significance pass (inline), then stored
        first = _body(organiser.get(url))
    with CaptureQueriesContext(connection) as fast:
        again = _body(organiser.get(url))
    assert again == first
    assert not [q for q in fast.captured_queries if "rows" in q["sql"].split("FROM")[0]]
    cache.clear()  # the body kept for the stored board is gone: the full read, the same page
    with CaptureQueriesContext(connection) as full:
        assert _body(organiser.get(url)) == first
    assert len(fast) < len(full)

    # Viewers who may open different runs get their own body; each kept apart.
    mine = _body(owner.get(url))
    assert _body(owner.get(url)) == mine and _body(organiser.get(url)) == first

    # A judgement moves the stamp: the page shows the new scores, not the kept body.
    with django_capture_on_commit_callbacks(execute=True):
        grade_pair(scored, "q1", "d3", "judge", 3)
    for _ in range(2):
        changed = _body(organiser.get(url))
    assert changed != first
    assert b"beta" in changed


def test_query_page_takes_any_run_name_asked_for(scored: Collection) -> None:
    """The side-by-side runs come from the query string: a name no run has (slashes, percent
    signs, 5,000 characters) shows nothing for it; a NUL byte is refused at the door."""
    organiser = _as("organiser")
    for asked in ("no-such-run", "%2F%3F%23%25", "x" * 5000):
        page = organiser.get(f"/collections/pages/queries/q1/?a={asked}&b=beta")
        assert page.status_code == 200, asked
        assert "beta" in page.content.decode()
    assert organiser.get("/collections/pages/queries/q1/?a=a%00b").status_code == 400
