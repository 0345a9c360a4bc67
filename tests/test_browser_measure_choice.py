"""The leaderboard's measure choice in a real browser at a phone's width: rank by a kept
measure, then every kept measure side by side; axe clean, no page wider than 390 px."""

import pytest

from annotations import services
from annotations.metrics.measure_names import parse_measure
from annotations.models import Collection
from annotations.selectors import measure_values
from tests.test_browser_accessibility import PHONE, page_problems

pytestmark = pytest.mark.browser


def test_a_kept_measure_is_chosen_on_the_leaderboard_at_a_phones_width(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from playwright.sync_api import expect

    from tests.conftest import browser_page

    services.collection_update(collection=trial, measures=["AP", "P@5", "RR"])
    alice = trial.memberships.get(user__username="alice").user
    for qid, docno, grade in [("q1", "d1", 3), ("q1", "d6", 1), ("q2", "d5", 2), ("q2", "d3", 0)]:
        services.judgement_record(
            query=trial.queries.get(qid=qid),
            document=trial.documents.get(docno=docno),
            assessor=alice,
            grade=grade,
            source="form",
        )
    trial.refresh_from_db()
    expected = measure_values.measure_board(trial, parse_measure("AP"))
    with browser_page(browser, live_server, viewport=PHONE) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", "pass-word-123")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        assert page_problems(page, "/collections/trial/leaderboard/?k=5") == []
        page.select_option("#measure-choice", "AP")
        page.click("#measure-pick button[type=submit]")
        page.wait_for_url("**/leaderboard/?k=5&measure=AP**")
        rows = page.locator("#measure-leaderboard tbody tr")
        expect(rows).to_have_count(len(expected.rows))
        for index, row in enumerate(expected.rows):
            expect(rows.nth(index)).to_have_attribute("data-run", row.run.name)
            expect(rows.nth(index).locator("td.mean")).to_have_text(f"{row.mean:.4f}")
        expect(page.locator("#measure-shown")).to_contain_text("nDCG@5's only")
        assert page_problems(page, page.url.split(live_server.url, 1)[1]) == []
        page.check("#measure-side")
        page.click("#measure-pick button[type=submit]")
        page.wait_for_url("**side=all**")
        expect(page.locator("#measure-leaderboard thead th.measure-column")).to_have_count(2)
        assert page_problems(page, page.url.split(live_server.url, 1)[1]) == []
        assert page_problems(page, "/collections/trial/leaderboard/?k=5&side=all") == []
