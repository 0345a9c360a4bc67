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


def test_a_measures_significance_and_a_versions_measure_at_a_phones_width(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    """The letters column of the leaderboard by a kept measure, its link to the measure's
    significance page (matrix and heat map), and a qrels version scored by the measure:
    axe clean, no page wider than 390 px."""
    from playwright.sync_api import expect

    from annotations.models import MeasureSignificance
    from annotations.scores import snapshots
    from annotations.services import versions
    from tests.conftest import browser_page

    services.collection_update(collection=trial, measures=["AP", "P@5", "NumRet"])
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
    snapshots.leaderboards_refresh(collection=trial)  # the worker's passes, if not run yet
    stored = MeasureSignificance.objects.get(collection=trial, measure="AP")
    names = dict(trial.runs.values_list("id", "name"))
    letters = {names[entry[0]]: entry[1] for entry in stored.significance["runs"]}
    olga = trial.memberships.get(user__username="olga").user
    versions.qrels_version_tag(collection=trial, name="v1", created_by=olga)
    versions.qrels_version_tag(collection=trial, name="v2", created_by=olga)
    with browser_page(browser, live_server, viewport=PHONE) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", "pass-word-123")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        assert page_problems(page, "/collections/trial/leaderboard/?k=5&measure=AP") == []
        rows = page.locator("#measure-leaderboard tbody tr")
        expect(rows).to_have_count(len(letters))
        for index in range(len(letters)):
            run = rows.nth(index).get_attribute("data-run")
            expect(rows.nth(index).locator("span.group")).to_have_text(letters[run])
        page.click("#significance-link")
        page.wait_for_url("**/leaderboard/significance/?k=5&measure=AP**")
        expect(page.locator("#heat-heading")).to_have_text("AP per run and query")
        expect(page.locator("#pair-matrix")).to_be_visible()
        assert page_problems(page, page.url.split(live_server.url, 1)[1]) == []
        page.select_option("#measure-choice", "P@5")
        page.click("#measure-pick button[type=submit]")
        page.wait_for_url("**measure=P%405**")
        expect(page.locator("#heat-heading")).to_have_text("P@5 per run and query")
        for path in (
            "/collections/trial/versions/v1/?k=5&measure=AP",
            "/collections/trial/versions/?a=v1&b=v2&k=5&measure=P@5",
        ):
            assert page_problems(page, path) == []
        page.goto("/collections/trial/versions/v1/?k=5")
        page.select_option("#version-measure", "AP")
        page.click("#version-pick button[type=submit]")
        page.wait_for_url("**measure=AP**")
        expect(page.locator("#version-leaderboard")).to_have_attribute("data-measure", "AP")
