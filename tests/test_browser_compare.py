"""Comparing two runs in a real browser: pick two leaderboard rows, read the chart and p-value."""

import pytest

from annotations import services
from annotations.models import Collection
from annotations.selectors.comparisons import runs_compare

pytestmark = pytest.mark.browser


def test_two_rows_picked_on_the_leaderboard_open_their_comparison(  # type: ignore[no-untyped-def]
    trial: Collection, page, login
) -> None:
    from playwright.sync_api import expect

    alice = trial.memberships.get(user__username="alice").user
    for qid, docno, grade in [("q1", "d1", 3), ("q1", "d6", 1), ("q2", "d5", 2)]:
        services.judgement_record(
            query=trial.queries.get(qid=qid),
            document=trial.documents.get(docno=docno),
            assessor=alice,
            grade=grade,
            source="form",
        )
    expected = runs_compare(a=trial.runs.get(name="bm25"), b=trial.runs.get(name="dense"), k=5)
    assert expected.p_value is not None and expected.mean_difference is not None

    login("olga")
    page.goto("/collections/trial/leaderboard/?k=5")
    button = page.locator("#compare-button")
    expect(button).to_be_disabled()  # until two rows are picked
    page.check("#leaderboard tr[data-run='bm25'] input.compare-pick")
    expect(button).to_be_disabled()
    page.check("#leaderboard tr[data-run='dense'] input.compare-pick")
    expect(button).to_be_enabled()
    button.click()
    page.wait_for_url("**/collections/trial/compare/**")
    expect(page.locator("h2#summary-heading")).to_contain_text("at nDCG@5")
    expect(page.locator("#compare-p")).to_have_text(f"{expected.p_value:.4f}")
    expect(page.locator("#compare-wins")).to_have_text(str(expected.wins))
    expect(page.locator("#compare-chart")).to_have_attribute("data-ready", "true")
    assert page.evaluate("typeof window.Chart") == "function"  # served locally
    bars = page.evaluate("window.Chart.getChart('compare-chart').data.datasets[0].data")
    assert bars == sorted(bars, reverse=True) and len(bars) == len(expected.rows)

    page.click("#compare-rows a >> nth=0")  # a query page, both runs side by side
    page.wait_for_url("**/queries/**")
    assert "a=" in page.url and "b=" in page.url
