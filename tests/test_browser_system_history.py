"""The whole loop of a search system in a real browser at a phone's width: describe it against
a real engine (tantivy behind a local server answering as Elasticsearch), fetch a run,
change the request and fetch again, see the history and what changed (on nDCG@k and on a
kept measure), send the new top k to judging, judge it, and see the score move, beside its
mean on the qrels version tagged before; every page axe clean."""

from __future__ import annotations

import pytest

from annotations.models import Collection, ImportJob, Pool, Run
from annotations.services.collections import collection_update
from annotations.services.imports import QueryFields, queries_store
from annotations.services.versions import qrels_version_tag
from tests.grading_keys import grade, grade_last, watch
from tests.search_engine import search_engine
from tests.test_browser_accessibility import PHONE, page_problems

pytestmark = pytest.mark.browser

BODY = '{"size": "{{depth}}", "query": {"multi_match": {"query": "%s"}}}'


def _fetch(page, label: str) -> None:  # type: ignore[no-untyped-def]
    page.goto("/collections/trial/systems/engine/")
    page.fill("#system-fetch-start input[name=label]", label)
    with page.expect_navigation():
        page.click("#system-fetch-start button[type=submit]")
    # The fetch runs on the worker (eagerly here); its page says what it stored.
    assert "done" in page.inner_text("#system-fetch-body")


def test_a_system_fetched_twice_shows_its_history_and_its_new_top_k_is_judged(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from tests.conftest import browser_page, log_in
    from tests.test_browser_judging import log_out

    queries_store(
        collection=trial,
        queries=[QueryFields("q3", "cats", "kittens and what they eat")],
    )
    collection_update(collection=trial, measures=["AP"])
    problems: list[str] = []
    with search_engine() as served, browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")
        problems += page_problems(page, "/collections/trial/systems/")
        page.fill("#id_name", "engine")
        page.select_option("#id_method", "POST")
        page.fill("#id_url_template", f"{served.url}/docs/_search")
        page.fill("#id_body_template", BODY % "{{title}}")
        page.fill("#id_depth", "2")
        page.fill("#id_snippet_path", "_source.text")
        with page.expect_navigation():
            page.click("#system-add button[type=submit]")
        assert page.url.endswith("/systems/engine/")
        _fetch(page, "title-only")
        # A ranking rule changed: the description is asked too.
        page.goto("/collections/trial/systems/engine/")
        page.fill("#id_system-body_template", BODY % "{{title}} {{description}}")
        with page.expect_navigation():
            page.click("#system-edit button[type=submit]")
        _fetch(page, "with-description")
        fetch = ImportJob.objects.get(run_name="with-description")
        problems += page_problems(page, f"/collections/trial/systems/engine/fetches/{fetch.id}/")
        problems += page_problems(page, "/collections/trial/systems/engine/")

        problems += page_problems(page, "/collections/trial/systems/engine/history/")
        runs = page.locator("#history-runs tbody tr")
        assert runs.count() == 2
        assert "with-description" in runs.nth(0).inner_text()  # newest first
        assert page.locator("#history-plot g.forest-row").count() == 2
        # Nothing judged yet: no query counts.
        assert runs.nth(0).locator("td.num").nth(0).inner_text() == "0.0000"

        problems += page_problems(page, "/collections/trial/systems/engine/changes/?measure=AP")
        assert "with-description against title-only by AP" in page.inner_text("h2")
        problems += page_problems(page, "/collections/trial/systems/engine/changes/")
        assert "with-description against title-only" in page.inner_text("h2")
        version = "before-judging-the-new-top-k-of-the-engine-" + "x" * 40
        qrels_version_tag(collection=trial, name=version, created_by=None)
        with page.expect_navigation():
            page.click("#changes-to-pool button[type=submit]")
        pool = Pool.objects.get(name="with-description-top5")
        pairs = pool.entries.count()
        assert pairs > 0 and page.url.endswith(f"/pools/{pool.id}/")
        page.check("#pool-assign >> text=alice")
        with page.expect_navigation():
            page.click("#pool-assign button[type=submit]")
        log_out(page)

        log_in(page, "alice")
        watch(page)
        assignment = pool.assignments.get(assessor__username="alice")
        page.goto(f"/judging/assignments/{assignment.id}/continue/")
        for n in range(pairs):
            (grade_last if n == pairs - 1 else grade)(page, "2")
        assert "100%" in page.inner_text("#assignment-progress")
        log_out(page)

        # Judged: the new run's top k is relevant, and its score moved.
        log_in(page, "olga")
        problems += page_problems(page, "/collections/trial/systems/engine/history/")
        latest = page.locator("#history-runs tbody tr").nth(0)
        assert latest.locator("td.num").nth(0).inner_text() == "1.0000"
        # On the version tagged before judging: nothing judged counts, the chart says so.
        page.select_option("#history-version", version)
        with page.expect_navigation():
            page.click("form.run-pick button[type=submit]")
        problems += page_problems(page, page.url.split(live_server.url, 1)[1])
        assert "on qrels before-judging" in page.inner_text("#history-chart-heading")
        latest = page.locator("#history-runs tbody tr").nth(0)
        assert latest.locator("td.num").nth(0).inner_text() == "1.0000"
        assert latest.locator("td.num").nth(4).inner_text() == "0.0000"
    assert Run.objects.filter(system__name="engine").count() == 2
    assert not problems, "\n".join(problems)
