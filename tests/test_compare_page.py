"""The compare page: two runs at k, from the leaderboard's picks or the run page's link."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.test import Client

from annotations import services
from annotations.models import Collection, Membership
from annotations.selectors.comparisons import runs_compare
from tests.factories import UserFactory

Capture = Callable[..., AbstractContextManager[Any]]


@pytest.fixture
def judged(trial: Collection, django_capture_on_commit_callbacks: Capture) -> Collection:
    alice = trial.memberships.get(user__username="alice").user
    pairs = [("q1", "d1", 3), ("q1", "d6", 1), ("q2", "d5", 2), ("q2", "d3", 0)]
    with django_capture_on_commit_callbacks(execute=True):
        for qid, docno, grade in pairs:
            services.judgement_record(
                query=trial.queries.get(qid=qid),
                document=trial.documents.get(docno=docno),
                assessor=alice,
                grade=grade,
                source="form",
            )
    return trial


def _client(username: str) -> Client:
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def test_the_page_shows_what_the_api_compare_computes(judged: Collection) -> None:
    html = _client("olga").get("/collections/trial/compare/?a=bm25&b=dense&k=5").content.decode()
    expected = runs_compare(a=judged.runs.get(name="bm25"), b=judged.runs.get(name="dense"), k=5)
    assert expected.mean_difference is not None and expected.p_value is not None
    assert f'id="compare-difference">{expected.mean_difference:.4f}<' in html
    assert f'id="compare-p">{expected.p_value:.4f}<' in html
    assert f'id="compare-wins">{expected.wins}<' in html
    assert f'id="compare-losses">{expected.losses}<' in html
    data = json.loads(
        re.search(r'id="compare-chart-data" type="application/json">(.*?)</script>', html)[1]
    )
    assert data["differences"] == sorted((row.difference for row in expected.rows), reverse=True)
    assert sorted(data["labels"]) == ["q1", "q2"]
    # organisers may open the query pages, linked with both runs chosen
    assert 'href="/collections/trial/queries/q1/?k=5&amp;a=bm25&amp;b=dense"' in html


def test_two_runs_picked_on_the_leaderboard_are_compared(judged: Collection) -> None:
    client = _client("olga")
    board = client.get("/collections/trial/leaderboard/?k=5").content.decode()
    assert 'form="compare-pick"' in board and 'value="bm25"' in board
    assert 'action="/collections/trial/compare/"' in board
    html = client.get("/collections/trial/compare/?k=5&run=bm25&run=dense").content.decode()
    assert "bm25 vs dense at nDCG@5" in html


def test_a_wrong_pick_is_explained_on_the_page_not_an_error(judged: Collection) -> None:
    client = _client("olga")
    one = client.get("/collections/trial/compare/?run=bm25")
    assert one.status_code == 200 and "Pick two runs to compare (1 picked)." in one.content.decode()
    missing = client.get("/collections/trial/compare/?a=bm25&b=nope")
    assert missing.status_code == 200
    assert "No run named &#x27;nope&#x27;." in missing.content.decode()
    same = client.get("/collections/trial/compare/?a=bm25&b=bm25")
    assert "Pick two different runs." in same.content.decode()
    bad_k = client.get("/collections/trial/compare/?a=bm25&b=dense&k=banana")
    assert bad_k.status_code == 200


def test_the_run_page_links_to_the_compare_page(judged: Collection) -> None:
    html = _client("olga").get("/collections/trial/runs/bm25/?k=5").content.decode()
    assert 'href="/collections/trial/compare/?a=bm25&amp;k=5"' in html


def test_a_system_owner_compares_only_their_own_runs(
    judged: Collection, django_capture_on_commit_callbacks: Capture
) -> None:
    owner = UserFactory(username="omar")
    Membership.objects.create(collection=judged, user=owner, role="owner")
    judged.runs.filter(name="bm25").update(owner=owner)
    with django_capture_on_commit_callbacks(execute=True):
        services.run_store(
            collection=judged,
            run_name="mine2",
            owner=owner,
            results={"q1": [("d1", 2.0, 1)], "q2": [("d5", 1.0, 1)]},
        )
    client = _client("omar")
    assert client.get("/collections/trial/compare/?a=bm25&b=dense").status_code == 404
    html = client.get("/collections/trial/compare/?a=bm25&b=mine2").content.decode()
    assert "bm25 vs mine2" in html
    assert '<option value="dense"' not in html
    assert "/queries/q1/" not in html  # query pages are the organisers'


def test_assessors_do_not_see_the_compare_page(judged: Collection) -> None:
    assert _client("alice").get("/collections/trial/compare/?a=bm25&b=dense").status_code == 404


def test_the_page_shows_titles_judged_at_k_per_query_and_an_a_vs_b_scatter(
    judged: Collection,
) -> None:
    html = _client("olga").get("/collections/trial/compare/?a=bm25&b=dense&k=5").content.decode()
    comparison = runs_compare(a=judged.runs.get(name="bm25"), b=judged.runs.get(name="dense"), k=5)
    by_qid = {row.qid: row for row in comparison.rows}
    assert by_qid["q1"].title == "solar energy storage" and "solar energy storage" in html
    # bm25's top 5 of q1: d1 d2 d6 d4, of which d1 and d6 are judged; dense: d6 d3 d1 d5
    assert by_qid["q1"].judged_a == 2 / 5 and by_qid["q1"].judged_b == 2 / 5
    assert "judged@5 A" in html and f">{by_qid['q1'].judged_a:.3f}<" in html
    scatter = html[html.index('id="compare-scatter"') :]
    scatter = scatter[: scatter.index("</svg>")]
    assert scatter.count("<circle") == len(comparison.rows) == 2
    assert 'role="img"' in scatter and "q1: A " in scatter
