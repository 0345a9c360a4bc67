"""The collection dashboard in a real browser: its numbers refresh after a judgement."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from annotations import services
from annotations.models import AssignmentItem, Collection

pytestmark = pytest.mark.browser


def test_the_dashboard_refreshes_by_itself_after_a_judgement(  # type: ignore[no-untyped-def]
    trial: Collection, page, login, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setattr("annotations.views.dashboards.POLL_MS", 250)
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


def test_the_coverage_chart_labels_every_one_of_110_runs_on_a_phone(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    from tests.conftest import browser_page

    runs = 110
    for index in range(runs):
        services.run_store(
            collection=trial,
            run_name=f"system-{index:03d}-" + "with-a-long-descriptive-name-" * 4,
            results={"q1": [("d1", 2.0, 1), ("d2", 1.0, 2)], "q2": [("d3", 1.0, 1)]},
        )
    with browser_page(browser, live_server, viewport={"width": 390, "height": 844}) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", "pass-word-123")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.goto("/collections/trial/dashboard/")
        page.wait_for_function("window.Chart && window.Chart.getChart('dashboard-coverage')")
        labels = page.evaluate(
            "(() => { const chart = window.Chart.getChart('dashboard-coverage');"
            " return chart.scales.y.ticks.length; })()"
        )
        assert labels == runs + 2  # every run labelled (bm25, dense and the 110 new ones)
        height = page.evaluate("document.getElementById('dashboard-coverage').clientHeight")
        assert height >= 16 * labels
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        serious = [
            violation["id"]
            for violation in Axe().run(page).response["violations"]
            if violation["impact"] in ("serious", "critical")
        ]
        assert not serious, serious
