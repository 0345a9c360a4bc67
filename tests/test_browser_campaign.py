"""A whole judging campaign run in the browser only: collection, imports, pool, an assessor
account, keyboard grading, the organiser's leaderboard following, the compare page, and the
qrels export."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from annotations.models import Judgement, Run
from annotations.selectors.comparisons import runs_compare
from tests.factories import UserFactory
from tests.stored import run_score

pytestmark = pytest.mark.browser

TOPICS = "q1\tsolar panel efficiency\nq2\twind turbine noise\n"
DOCUMENTS = "".join(
    f'{{"docno": "{docno}", "title": "{title}", "text": "{title} explained at length."}}\n'
    for docno, title in [
        ("d1", "Tandem solar cells"),
        ("d2", "Panel losses"),
        ("d3", "Rooftop wiring"),
        ("d4", "Turbine blades"),
        ("d5", "Noise at night"),
        ("d6", "Offshore farms"),
    ]
)
QRELS = "q1 0 d1 2\nq2 0 d5 2\n"
RUNS = {
    "alpha.txt": "q1 Q0 d1 1 3 alpha\nq1 Q0 d2 2 2 alpha\nq2 Q0 d4 1 2 alpha\nq2 Q0 d5 2 1 alpha\n",
    "beta.txt": "q1 Q0 d3 1 3 beta\nq1 Q0 d1 2 2 beta\nq2 Q0 d5 1 2 beta\nq2 Q0 d6 2 1 beta\n",
}


def _import(page, section: str, files: list[tuple[str, str]]) -> None:  # type: ignore[no-untyped-def]
    payload = [
        {"name": name, "mimeType": "text/plain", "buffer": text.encode()} for name, text in files
    ]
    # Each upload form folds into its section: open it as its reader does, by its summary.
    if page.locator(f"details#{section}:not([open])").count():
        page.click(f"#{section} > summary")
    page.set_input_files(f"#{section} input[type=file]", payload)
    with page.expect_navigation():
        page.click(f"#{section} button[type=submit]")


def test_a_whole_campaign_runs_in_the_browser(  # type: ignore[no-untyped-def]
    transactional_db: None,
    page,
    login,
    browser,
    settings: Any,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playwright.sync_api import expect

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    settings.CELERY_BROKER_URL = ""
    monkeypatch.setattr("annotations.views.scores.POLL_MS", 250)
    UserFactory(username="olga", is_staff=True)
    login("olga")

    # 1. A collection with its own scale: 0-2, the top grade relabelled.
    page.click("#new-collection")
    page.fill("#id_slug", "campaign")
    page.fill("#id_cutoffs", "2, 3")
    page.check("#id_grades-3-DELETE")
    page.fill("#id_grades-2-label", "Answers it")
    with page.expect_navigation():
        page.click("#collection-form button[type=submit]")
    assert page.url.endswith("/collections/campaign/")

    # 2. Topics, documents, qrels and two run files, on the import page.
    page.click("nav.collection-menu >> text=Import")
    _import(page, "import-topics", [("topics.tsv", TOPICS)])
    _import(page, "import-documents", [("docs.jsonl", DOCUMENTS)])
    _import(page, "import-qrels", [("seed.qrels", QRELS)])
    _import(page, "import-runs", list(RUNS.items()))
    jobs = page.locator("#import-jobs tbody tr")
    expect(jobs).to_have_count(5)
    for row in range(5):
        expect(jobs.nth(row).locator(".job-state")).to_have_text("done")

    # 3. A depth-2 pool of both runs.
    page.click("nav.collection-menu >> text=Judging")
    page.fill("#id_name", "main")
    page.fill("#id_depth", "2")
    with page.expect_navigation():
        page.click("#pool-build button[type=submit]")
    assert "4 pairs" in page.content()  # the runs' top 2 (6 pairs) minus the two judged

    # 4. An assessor account, with its one-time set-password link.
    page.click("nav.collection-menu >> text=Members")
    page.fill("#account-create #id_username", "nina")
    page.select_option("#account-create #id_role", "assessor")
    with page.expect_navigation():
        page.click("#account-create button[type=submit]")
    link = page.input_value("#password-link-url")
    page.click("nav.collection-menu >> text=Judging")
    page.click("#pools a >> text=main")
    page.check("#pool-assign >> text=nina")
    with page.expect_navigation():
        page.click("#pool-assign button[type=submit]")

    # 5. The organiser watches the leaderboard in a tab of her own.
    watcher = page.context.new_page()
    watcher.goto(f"{page.base_url}/collections/campaign/leaderboard/?k=2")
    beta = watcher.locator("#leaderboard tbody tr[data-run='beta'] td.ndcg")
    before = beta.inner_text()

    # 6. nina sets her password and grades her four pairs with the keyboard: 2 for d3.
    context = browser.new_context(base_url=page.base_url)
    nina = context.new_page()
    nina.goto(link)
    nina.fill("#id_new_password1", "nina-grades-carefully-7")
    nina.fill("#id_new_password2", "nina-grades-carefully-7")
    with nina.expect_navigation():
        nina.click("#password-set button[type=submit]")
    assert "logged in as nina" in nina.inner_text("main")  # setting it logged her in
    nina.goto("/judging/")
    with nina.expect_navigation():
        nina.click("text=Continue")
    for _ in range(4):
        docno = nina.inner_text("#document-title").split()[0]
        with nina.expect_navigation():
            nina.keyboard.press("2" if docno == "d3" else "0")
    assert "100%" in nina.inner_text("#assignment-progress")
    assert Judgement.objects.filter(assessor__username="nina").count() == 4

    # 7. The open leaderboard follows: beta's top document d3 is now relevant.
    after = run_score(run__name="beta", k=2).ndcg
    assert f"{after:.4f}" != before
    expect(beta).to_have_text(f"{after:.4f}", timeout=10_000)

    # 8. The two runs compared, picked on that leaderboard.
    watcher.check("#leaderboard tr[data-run='alpha'] input.compare-pick")
    watcher.check("#leaderboard tr[data-run='beta'] input.compare-pick")
    with watcher.expect_navigation():
        watcher.click("#compare-button")
    picked = parse_qs(urlparse(watcher.url).query)
    first, second = picked.get("a") or picked["run"][:1], picked.get("b") or picked["run"][1:]
    expected = runs_compare(
        a=Run.objects.get(name=first[0]), b=Run.objects.get(name=second[0]), k=2
    )
    expect(watcher.locator("#compare-wins")).to_have_text(str(expected.wins))
    expect(watcher.locator("#compare-chart")).to_have_attribute("data-ready", "true")

    # 9. The effective qrels, exported from the collection's export page.
    page.click("nav.collection-menu >> text=Export")
    with page.expect_download() as download:
        page.click("#qrels-link")
    text = Path(download.value.path()).read_text(encoding="utf-8")
    lines = set(text.splitlines())
    assert {"q1 0 d1 2", "q1 0 d3 2", "q2 0 d5 2", "q1 0 d2 0"} <= lines
    assert len(lines) == 6  # two seeded pairs and nina's four
