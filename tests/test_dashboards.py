"""The collection dashboard: progress, coverage, agreement, pending scores, recent activity."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotations import services
from annotations.models import AssignmentItem, Collection
from annotations.selectors import dashboards
from tests.stored import run_rows

Capture = Callable[..., AbstractContextManager[Any]]


def _user(name: str) -> Any:
    return get_user_model().objects.get(username=name)


def _client(username: str) -> Client:
    client = Client()
    client.force_login(_user(username))
    return client


@pytest.fixture
def campaign(trial: Collection, django_capture_on_commit_callbacks: Capture) -> Collection:
    """A pool of 7 pairs assigned to alice and bob with overlap 2; alice grades two pairs
    and skips one, bob grades one of the pairs alice graded."""
    with django_capture_on_commit_callbacks(execute=True):
        pool, _ = services.pool_build(collection=trial, name="main", depth=2)
        services.assignment_create(pool=pool, assessors=[_user("alice"), _user("bob")], overlap=2)
        alice = list(
            AssignmentItem.objects.filter(assignment__assessor__username="alice").order_by(
                "position"
            )
        )
        bob = AssignmentItem.objects.filter(
            assignment__assessor__username="bob", entry=alice[0].entry
        ).get()
        services.assignment_item_grade(item=alice[0], assessor=_user("alice"), grade=3)
        services.assignment_item_grade(item=alice[1], assessor=_user("alice"), grade=0)
        services.assignment_item_skip(item=alice[2], assessor=_user("alice"), note="unsure")
        services.assignment_item_grade(item=bob, assessor=_user("bob"), grade=2)
    return trial


def test_the_dashboard_counts_judged_skipped_and_left_apart(campaign: Collection) -> None:
    html = _client("olga").get("/collections/trial/dashboard/?k=5").content.decode()
    assert 'id="d-pooled">7<' in html and 'id="d-pooled-people">2<' in html
    assert 'id="d-pooled-machine">0<' in html and 'id="d-pooled-machine-only">0<' in html
    assert 'id="d-assigned">14<' in html
    assert 'id="d-judged">3<' in html and 'id="d-skipped">1<' in html
    assert 'id="d-left">10<' in html
    alice = html[html.index('data-assessor="alice"') :]
    cells = re.findall(r'<td class="num[^"]*">(\d+)</td>', alice[: alice.index("</tr>")])
    assert cells == ["7", "2", "1", "4"]
    assert "over 1 pair judged by two or more assessors" in html


def test_the_dashboard_charts_coverage_from_the_stored_run_scores(campaign: Collection) -> None:
    html = _client("olga").get("/collections/trial/dashboard/?k=5").content.decode()
    data = json.loads(
        re.search(r'id="dashboard-chart-data" type="application/json">(.*?)</script>', html)[1]
    )
    stored = {name: means.judged for name, means in run_rows() if means.k == 5}
    assert dict(zip(data["runs"], data["coverage"], strict=True)) == stored
    assert sum(data["per_day"]) == 3  # three grades recorded today
    assert len(data["imported_per_day"]) == len(data["per_day"])
    assert "unsure" not in html  # a skip is no judgement


def test_the_dashboard_is_computed_once_per_stamp(
    campaign: Collection, django_assert_max_num_queries: Any
) -> None:
    client = _client("olga")
    client.get("/collections/trial/dashboard/")
    with django_assert_max_num_queries(12):  # session, user, collection, stamp; no recompute
        assert client.get("/collections/trial/dashboard/").status_code == 200
    state = client.get("/collections/trial/dashboard/state/").json()
    assert state == {"stamp": dashboards.dashboard_stamp(collection=campaign)}


def test_the_stamp_moves_with_a_skip_and_with_a_judgement(
    campaign: Collection, django_capture_on_commit_callbacks: Capture
) -> None:
    before = dashboards.dashboard_stamp(collection=campaign)
    item = AssignmentItem.objects.filter(assignment__assessor__username="bob").last()
    assert item is not None
    services.assignment_item_skip(item=item, assessor=_user("bob"))
    skipped = dashboards.dashboard_stamp(collection=campaign)
    assert skipped != before
    with django_capture_on_commit_callbacks(execute=True):
        services.assignment_item_grade(item=item, assessor=_user("bob"), grade=1)
    assert dashboards.dashboard_stamp(collection=campaign) != skipped


def test_the_dashboard_is_the_organisers(campaign: Collection) -> None:
    for path in ("/collections/trial/dashboard/", "/collections/trial/dashboard/state/"):
        assert _client("alice").get(path).status_code == 403
        assert _client("eve").get(path).status_code == 404
        assert Client().get(path).status_code == 302


def test_imported_qrels_are_counted_apart_from_judging_per_day(
    campaign: Collection, write_file: Any
) -> None:
    services.judgements_import(
        collection=campaign,
        source=write_file("old.qrels", "q1 0 d5 1\nq2 0 d4 2\n"),
        assessor=get_user_model().objects.get(username="olga"),
    )
    html = _client("olga").get("/collections/trial/dashboard/?k=5").content.decode()
    data = json.loads(
        re.search(r'id="dashboard-chart-data" type="application/json">(.*?)</script>', html)[1]
    )
    assert (sum(data["per_day"]), sum(data["imported_per_day"])) == (3, 2)
