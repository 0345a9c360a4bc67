"""The leaderboard page in a real browser: it refreshes itself after a judgement changes."""

from typing import Any

import pytest

from annotations import services
from annotations.models import Collection, Membership
from tests.factories import UserFactory
from tests.stored import run_score


@pytest.mark.browser
def test_leaderboard_refreshes_by_itself_after_a_judgement(  # type: ignore[no-untyped-def]
    worked_example: Collection,
    page,
    login,
    settings: Any,
    assessor: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setattr("annotations.views.scores.POLL_MS", 250)
    organiser = UserFactory(username="olga")
    Membership.objects.create(collection=worked_example, user=organiser, role="organiser")
    login("olga")
    page.goto(f"/collections/{worked_example.slug}/")
    page.click("#leaderboard-link")
    page.click("nav.cutoffs >> text=6")
    row = page.locator("#leaderboard tbody tr[data-run='example']")
    expect(row.locator("td.ndcg")).to_have_text("0.7850")
    expect(row.locator("td.ci")).to_have_text("[0.7850, 0.7850]")  # one query
    expect(row.locator("td.letters .group")).to_have_text("a", timeout=10_000)
    page.evaluate("window.__notReloaded = true")

    # d4 (rank 4) was judged 0 by the assessor; the assessor changes it to 3.
    services.judgement_record(
        query=worked_example.queries.get(qid="q1"),
        document=worked_example.documents.get(docno="d4"),
        assessor=assessor,
        grade=3,
        source="form",
    )
    new = run_score(run__name="example", k=6).ndcg
    assert f"{new:.4f}" != "0.7850"
    expect(row.locator("td.ndcg")).to_have_text(f"{new:.4f}", timeout=10_000)
    expect(row.locator("td.ci")).to_have_text(f"[{new:.4f}, {new:.4f}]")
    assert page.evaluate("window.__notReloaded") is True  # the table changed in place

    page.click("#leaderboard tbody tr[data-run='example'] a")
    expect(page.locator("#per-query tbody tr")).to_have_count(1)
    page.wait_for_load_state("load")
    assert page.evaluate("typeof window.Chart") == "function"  # served locally, no CDN
    assert page.locator("#run-chart").is_visible()
