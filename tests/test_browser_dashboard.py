"""The collection dashboard in a real browser: its numbers refresh after a judgement."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from annotations import services
from annotations.models import AssignmentItem, Collection

pytestmark = pytest.mark.browser


def test_the_dashboard_refreshes_by_itself_after_a_judgement(  # type: ignore[no-untyped-def]
    trial: Collection, page, login, settings: Any
) -> None:
    from playwright.sync_api import expect

    settings.NDCG_DASHBOARD_POLL_MS = 250
    users = get_user_model().objects
    alice = users.get(username="alice")
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    services.assignment_create(pool=pool, assessors=[alice])
    login("olga")
    page.goto("/collections/trial/")
    with page.expect_navigation(wait_until="load"):  # the chart scripts have run
        page.click("nav.collection-menu >> text=Dashboard")
    expect(page.locator("#d-judged")).to_have_text("0")
    expect(page.locator("#d-left")).to_have_text("7")
    page.wait_for_function("window.Chart && window.Chart.getChart('dashboard-coverage')")
    assert page.evaluate("window.Chart.getChart('dashboard-coverage') !== undefined")
    page.evaluate("window.__notReloaded = true")

    item = AssignmentItem.objects.filter(assignment__assessor=alice).order_by("position")[0]
    services.assignment_item_grade(item=item, assessor=alice, grade=2)
    expect(page.locator("#d-judged")).to_have_text("1", timeout=10_000)
    expect(page.locator("#d-left")).to_have_text("6")
    expect(page.locator("#dashboard-recent tbody tr")).to_have_count(1)
    assert page.evaluate("window.__notReloaded") is True  # refreshed in place
    assert page.evaluate("window.Chart.getChart('dashboard-days').data.datasets[0].data") == [1]
