"""The leaderboard's pictures in a real browser on a 34-run campaign with 150-character
names: the CI plot, the pairwise matrix and the per-query heat map render, pass axe and fit
a 390 px phone (they scroll inside their own focusable regions)."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from annotations.models import Collection, Membership
from annotations.scores import snapshots
from tests.campaigns import RUNS, run_name
from tests.campaigns import campaign as build_campaign
from tests.factories import UserFactory

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def campaign(transactional_db: None, write_file: Callable[..., Path], settings: Any) -> Collection:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    collection = build_campaign(write_file)
    Membership.objects.create(
        collection=collection, user=UserFactory(username="olga"), role="organiser"
    )
    snapshots.leaderboard_complete(collection=collection, k=10)
    return collection


def _axe_problems(page: Any) -> list[str]:  # type: ignore[no-untyped-def]
    from axe_playwright_python.sync_playwright import Axe

    found = []
    for violation in Axe().run(page).response["violations"]:
        if violation["impact"] in ("serious", "critical"):
            targets = [" ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{page.url}: {violation['id']} ({violation['impact']}) {targets}")
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > PHONE["width"]:
        found.append(f"{page.url}: {width} px wide at a {PHONE['width']} px viewport")
    return found


def test_plot_matrix_and_heat_map_render_pass_axe_and_fit_a_phone(  # type: ignore[no-untyped-def]
    campaign: Collection, browser, live_server
) -> None:
    from playwright.sync_api import expect

    from tests.conftest import browser_page, log_in

    with browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")

        page.goto(f"/collections/{campaign.slug}/leaderboard/?k=10")
        expect(page.locator("#leaderboard tbody tr")).to_have_count(RUNS)
        top = page.locator(f"#leaderboard tbody tr[data-run='{run_name(0)}']")
        expect(top.locator("td.letters .group")).to_have_text("a")
        assert page.locator("#leaderboard tbody tr.below-best").count() >= RUNS // 2
        expect(page.locator("th", has_text="Tier")).to_have_count(0)
        plot = page.locator("#forest-plot")
        expect(plot).to_be_visible()
        expect(plot.locator("g.forest-row")).to_have_count(RUNS)
        expect(plot.locator("g.forest-row.below-best").first).to_be_attached()
        box = plot.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > RUNS * 15
        region = page.locator("#forest-section .scroll.chart")
        # Taller than its box: the axis's labels are read above the rows, before any scroll.
        assert page.evaluate(
            "(e => e.scrollHeight > e.clientHeight)"
            "(document.querySelector('#forest-section .scroll.chart'))"
        )
        region_box, label = region.bounding_box(), plot.locator("text.axis-top").first
        label_box = label.bounding_box()
        assert region_box is not None and label_box is not None
        assert region_box["y"] <= label_box["y"] < region_box["y"] + 40
        assert plot.locator("text.axis-top").count() >= 2
        region.focus()
        assert page.evaluate("document.activeElement.getAttribute('role')") == "region"
        assert page.evaluate(
            "document.querySelector('#forest-section .scroll.chart').scrollWidth >"
            " document.querySelector('#forest-section .scroll.chart').clientWidth"
        )  # the plot scrolls inside its region at 390 px, the page does not
        problems = _axe_problems(page)

        page.click("#significance-link")
        page.wait_for_url(lambda url: "/leaderboard/significance/" in url)
        matrix = page.locator("#pair-matrix")
        expect(matrix).to_be_visible()
        expect(matrix.locator("g.heat-row")).to_have_count(RUNS)
        cells = json.loads(page.inner_text("#matrix-cells"))
        size = cells["size"]  # row 2, column 1: the second run against the best
        second = {"x": cells["left"] + size / 2, "y": cells["top"] + size * 1.5}
        matrix.hover(position=second)
        difference = cells["means"][1] - cells["means"][0]
        expect(page.locator("#matrix-cell")).to_contain_text(
            f"2 vs 1: difference {difference:+.4f}, adjusted p {cells['p'][1][0]:.4f}"
        )
        matrix.click(position=second)
        page.wait_for_url(lambda url: "a=" in url and "b=" in url)
        expect(page.locator("#pair-a")).to_have_value(cells["names"][1])
        expect(page.locator("#pair-b")).to_have_value(cells["names"][0])
        matrix = page.locator("#pair-matrix")
        heat = page.locator("#query-heat-map")
        expect(heat.locator("g.heat-row")).to_have_count(RUNS)
        assert page.evaluate(  # the bands of every row cover its 50 queries' cells, 10 x 12 px
            "[...document.querySelectorAll('#query-heat-map g.heat-row')].every(g =>"
            " g.getBBox().width === 500 && g.getBBox().height === 12)"
        )
        assert (heat.bounding_box() or {"height": 0})["height"] > RUNS * 10
        problems += _axe_problems(page)

        page.select_option("#pair-a", run_name(0))
        page.select_option("#pair-b", run_name(RUNS - 1))
        page.click("#pair-form button[type=submit]")
        expect(page.locator("#pair-result")).to_contain_text("significantly different")
        expect(page.locator("#pair-result")).to_contain_text("simultaneous")
        page.click("#sort-difficulty")
        page.wait_for_url(lambda url: "sort=difficulty" in url)
        expect(page.locator("#sort-difficulty")).to_have_attribute("aria-current", "true")
        problems += _axe_problems(page)
    assert not problems, problems


def test_a_long_ranking_pages_and_finds_runs_at_a_phones_width(  # type: ignore[no-untyped-def]
    campaign: Collection, browser, live_server, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect

    from tests.conftest import browser_page, log_in

    monkeypatch.setattr("annotations.views.leaderboard_pages.PAGE_RUNS", 10)
    with browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")
        page.goto(f"/collections/{campaign.slug}/leaderboard/?k=10")
        rows = page.locator("#leaderboard tbody tr")
        expect(rows).to_have_count(10)
        expect(page.locator("#leaderboard-shown")).to_contain_text("Runs 1\u201310 of 34")
        expect(page.locator("#forest-plot g.forest-row")).to_have_count(10)
        problems = _axe_problems(page)

        page.locator("#leaderboard-pages a[rel=next]").click()
        page.wait_for_url(lambda url: "page=2" in url)
        expect(rows.first.locator("td.num").first).to_have_text("11")
        expect(page.locator("#forest-plot g.forest-row")).to_have_count(10)
        expect(page.locator("#leaderboard-pages [aria-current=page]")).to_have_text("2")
        # the best run's reference line stays on every page
        expect(page.locator("#forest-plot line[stroke-dasharray]")).to_have_count(1)
        problems += _axe_problems(page)

        page.fill("#leaderboard-q", run_name(33)[-20:])
        page.press("#leaderboard-q", "Enter")
        page.wait_for_url(lambda url: "q=" in url)
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-run", run_name(33))
        expect(page.locator("#leaderboard-shown")).to_contain_text("1 of 34 runs match")
        problems += _axe_problems(page)

        page.goto(f"/collections/{campaign.slug}/leaderboard/?k=10")
        page.click("#leaderboard-all")
        expect(rows).to_have_count(RUNS)
        expect(page.locator("#forest-plot g.forest-row")).to_have_count(RUNS)
    assert not problems, problems


def test_the_run_search_keeps_what_is_typed_while_the_table_refreshes(  # type: ignore[no-untyped-def]
    campaign: Collection, browser, live_server, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect

    from annotations import services
    from annotations.models import Judgement
    from tests.conftest import browser_page, log_in

    monkeypatch.setattr("annotations.views.leaderboard_pages.PAGE_RUNS", 10)
    monkeypatch.setattr("annotations.views.scores.POLL_MS", 250)
    with browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")
        page.goto(f"/collections/{campaign.slug}/leaderboard/?k=10")
        live = page.locator("#leaderboard-live")
        stamp = live.get_attribute("data-stamp")
        page.click("#leaderboard-q")
        page.keyboard.type("team0")
        judged = Judgement.objects.filter(query__collection=campaign, grade__gt=0).first()
        assert judged is not None
        services.judgement_record(
            query=judged.query, document=judged.document, assessor=judged.assessor,
            grade=0, source="form",
        )  # fmt: skip
        expect(live).not_to_have_attribute("data-stamp", stamp or "", timeout=15_000)
        expect(page.locator("#leaderboard-q")).to_have_value("team0")
        assert page.evaluate("document.activeElement.id") == "leaderboard-q"
        page.keyboard.type("1")
        page.keyboard.press("Enter")
        page.wait_for_url(lambda url: "q=team01" in url)
        expect(page.locator("#leaderboard tbody tr")).to_have_count(1)
