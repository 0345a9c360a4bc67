"""Assessors' pace on the dashboard: dwell medians, pairs per hour, ETA, today's hours."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotations import services
from annotations.models import AssignmentItem, Collection, JudgementHistory
from annotations.selectors.pace import PACE_WINDOW, assessor_pace, changes_per_hour_today


def _user(name: str):  # type: ignore[no-untyped-def]
    return get_user_model().objects.get(username=name)


@pytest.fixture
def graded(trial: Collection) -> Collection:
    """Alice's 7 pairs: three graded with dwell 10 s, 20 s and 60 s, one by the API (no
    dwell), three left; bob is assigned nothing."""
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    services.assignment_create(pool=pool, assessors=[_user("alice")])
    items = list(AssignmentItem.objects.order_by("position").select_related("entry"))
    for item, dwell in zip(items, (10_000, 20_000, 60_000), strict=False):
        services.assignment_item_grade(item=item, assessor=_user("alice"), grade=1, dwell_ms=dwell)
    services.judgement_record(
        query=items[3].entry.query, document=items[3].entry.document,
        assessor=_user("alice"), grade=2, source="api",
    )  # fmt: skip
    return trial


def test_pace_is_the_median_and_the_rate_of_the_timed_grades(graded: Collection) -> None:
    pace = assessor_pace(collection=graded, assessor_id=_user("alice").pk, left=3)
    assert (pace.timed, pace.median_seconds) == (3, 20.0)
    assert pace.per_hour == pytest.approx(3600 / 30)  # 3 pairs in 90 s on screen
    assert pace.eta_seconds == pytest.approx(90) and pace.eta == "2 min"
    nobody = assessor_pace(collection=graded, assessor_id=_user("bob").pk, left=0)
    assert (nobody.timed, nobody.per_hour, nobody.eta) == (0, None, "")


def test_pace_reads_only_the_latest_window_of_grades(graded: Collection) -> None:
    row = JudgementHistory.objects.filter(dwell_ms=10_000).get()
    JudgementHistory.objects.bulk_create(
        [
            JudgementHistory(
                query_id=row.query_id,
                document_id=row.document_id,
                assessor_id=row.assessor_id,
                changed_by_id=row.assessor_id,
                old_grade=1,
                new_grade=1,
                source="form",
                dwell_ms=5_000,
            )
            for _ in range(PACE_WINDOW)
        ]
    )
    pace = assessor_pace(collection=graded, assessor_id=_user("alice").pk, left=3)
    assert (pace.timed, pace.median_seconds) == (PACE_WINDOW, 5.0)


def test_todays_hours_count_judging_and_imports_apart(graded: Collection, write_file) -> None:  # type: ignore[no-untyped-def]
    services.judgements_import(
        collection=graded, source=write_file("old.qrels", "q1 0 d5 1\nq2 0 d4 2\n"),
        assessor=_user("olga"),
    )  # fmt: skip
    hours = changes_per_hour_today(collection=graded)
    assert hours[0][0] == "00:00" and len(hours) >= 1
    assert (sum(row[1] for row in hours), sum(row[2] for row in hours)) == (4, 2)


def test_the_dashboard_shows_each_assessors_pace_and_todays_hours(graded: Collection) -> None:
    client = Client()
    client.force_login(_user("olga"))
    html = client.get("/collections/trial/dashboard/").content.decode()
    row = re.search(r'<tr data-assessor="alice">(.*?)</tr>', html, re.S)[1]
    assert '<td class="num per-hour">120</td>' in row
    assert '<td class="num median">20.0</td>' in row
    assert '<td class="num eta">2 min</td>' in row
    data = json.loads(
        re.search(r'id="dashboard-chart-data" type="application/json">(.*?)</script>', html)[1]
    )
    assert sum(data["per_hour"]) == 4 and sum(data["imported_per_hour"]) == 0
    assert len(data["hours"]) == len(data["per_hour"])
