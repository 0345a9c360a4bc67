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


def test_runs_are_found_by_typing_part_of_their_name_among_105(  # type: ignore[no-untyped-def]
    trial: Collection, page, login
) -> None:
    """Compare's run fields find a run among many by part of its name; the pool form's long
    run list has a find box, "Select all shown" and a count."""
    from playwright.sync_api import expect

    for index in range(105):
        services.run_store(
            collection=trial,
            run_name=f"team{index:03d}-bm25-rm3",
            results={"q1": [("d1", 1.0, 1)], "q2": [("d4", 1.0, 1)]},
        )
    login("olga")
    page.goto("/collections/trial/compare/")
    options = page.locator("#compare-runs option")
    expect(options).to_have_count(107)  # the trial's two runs and the 105
    page.fill("#compare-a", "team042-bm25-rm3")
    page.fill("#compare-b", "bm25")
    page.click(".compare-form button[type=submit]")
    page.wait_for_url("**/compare/?a=team042-bm25-rm3&b=bm25**")
    expect(page.locator("h2#summary-heading")).to_contain_text("team042-bm25-rm3 vs bm25")
    expect(page.locator("#compare-a")).to_have_value("team042-bm25-rm3")

    page.goto("/collections/trial/pools/")
    tools = page.locator("fieldset.choices .choice-tools")
    expect(tools.locator(".choice-count")).to_have_text("0 of 107 ticked")
    tools.locator("input[type=search]").fill("team04")
    expect(tools.locator(".choice-count")).to_have_text("0 of 107 ticked; 10 shown")
    tools.locator(".choice-all").click()
    expect(tools.locator(".choice-count")).to_have_text("10 of 107 ticked; 10 shown")
    page.fill("#id_name", "team04x")
    page.click("#pool-build button[type=submit]")
    page.wait_for_load_state("load")
    pool = trial.pools.get(name="team04x")
    assert set(pool.runs.values_list("name", flat=True)) == {
        f"team{index:03d}-bm25-rm3" for index in range(40, 50)
    }
