"""The machine judges pages: organisers add, try, run and cancel; nobody else gets in; the
pages pass axe and fit a phone with long names and a try's prompts."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotations import services
from annotations.models import Collection, JudgeRun, MachineJudge
from annotations.services.judges import judge_create
from tests.fake_llm import FakeLlm, fake_llm, says
from tests.waiting import wait_until


def _client(collection: Collection, username: str) -> Client:
    client = Client()
    client.force_login(collection.memberships.get(user__username=username).user)
    return client


def _fields(url: str, **extra: object) -> dict[str, object]:
    return {
        "base_url": url, "model": "test-model", "api_key_env": "NDCG_JUDGE_KEY_TEST",
        "prompt_template": "", "temperature": 0, "max_tokens": 50, "concurrency": 1,
        "requests_per_minute": 6000, "timeout_seconds": 60, "attempts": 6, "prompt_price": 2.5,
        "completion_price": 10, "currency": "EUR", **extra,
    }  # fmt: skip


def test_organisers_add_try_run_and_cancel_a_judge_and_assessors_cannot(
    transactional_db: None, trial: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "sk-test")
    services.pool_build(collection=trial, name="main", depth=2)
    listing = reverse("collection-judges", args=["trial"])
    assert _client(trial, "alice").get(listing).status_code in (403, 404)
    olga = _client(trial, "olga")
    page = olga.get(listing).content.decode()
    assert "texts are sent to that endpoint" in page and "NDCG_JUDGE_ALLOW_PRIVATE" in page
    with fake_llm(FakeLlm(lambda prompt, number: says("##final score: 3"))) as llm:
        refused = olga.post(listing, {"name": "bad", **_fields(llm.url, prompt_template="{x}")})
        assert refused.status_code == 200 and b"Unknown fields" in refused.content
        added = olga.post(listing, {"name": "umbrela", **_fields(llm.url)})
        detail = reverse("judge-detail", args=["trial", "umbrela"])
        assert added.status_code == 302 and added["Location"] == detail
        judge = MachineJudge.objects.get()
        tried = olga.post(detail, {"try": "1"})
        assert tried.status_code == 200 and tried.content.count(b"grade <strong>3</strong>") == 5
        assert b"Passage:" in tried.content and not JudgeRun.objects.exists()
        started = olga.post(
            reverse("judge-run", args=["trial", "umbrela"]),
            {"run-pool": trial.pools.get().id, "run-scope": "all"},
        )
        assert started.status_code == 302
        run = JudgeRun.objects.get()

        def finished() -> bool:
            run.refresh_from_db()
            return run.state == "done"

        wait_until(finished, "the run finished", seconds=60)
        page = olga.get(detail).content.decode()
        assert f"{run.pairs_total} of {run.pairs_total}" in page and "done" in page
        edited = olga.post(detail, {f"judge-{k}": v for k, v in _fields(llm.url).items()}
                           | {"judge-prompt_template": "Grade {document} on {scale}"})  # fmt: skip
        assert edited.status_code == 302
        judge.refresh_from_db()
        assert judge.prompt_version == 2
    assert _client(trial, "alice").get(detail).status_code in (403, 404)
    assert _client(trial, "alice").post(
        reverse("judge-run-cancel", args=["trial", "umbrela", run.id])
    ).status_code in (403, 404)


@pytest.mark.browser
def test_the_judge_pages_pass_axe_and_fit_a_phone(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server, monkeypatch
) -> None:
    from tests.conftest import browser_page, log_in
    from tests.test_browser_accessibility import PHONE, page_problems

    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "sk-test")
    services.pool_build(collection=trial, name="main-pool-" + "x" * 80, depth=2)
    with fake_llm(FakeLlm(lambda p, n: says("Long reasoning " * 40 + "##final score: 1"))) as llm:
        judge = judge_create(
            collection=trial, name="judge-" + "y" * 50, created_by=None, base_url=llm.url,
            model="model-" + "z" * 120, api_key_env="NDCG_JUDGE_KEY_TEST",
        )  # fmt: skip
        for _ in range(3):
            JudgeRun.objects.create(judge=judge, pool=trial.pools.get(), state="done",
                                    pairs_total=7, pairs_done=7, error="e" * 150)  # fmt: skip
        with browser_page(browser, live_server, viewport=PHONE) as page:
            log_in(page, "olga")
            problems = page_problems(page, "/collections/trial/judges/")
            detail = f"/collections/trial/judges/{judge.name}/"
            problems += page_problems(page, detail)
            page.click("button[name=try]")
            page.wait_for_selector("details.tried")
            assert page.locator("details.tried").count() == 5
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"the try's answers make the page {width} px wide"
    assert not problems, "\n".join(problems)


def test_a_runs_page_lists_its_failed_pairs_and_retries_them(
    transactional_db: None, trial: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "sk-test")
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    broken = {"on": True}

    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if broken["on"] and "Floods of the Rhine" in prompt:
            return 404, "no such model", {}
        return says("##final score: 1")

    olga = _client(trial, "olga")
    with fake_llm(FakeLlm(respond)) as llm:
        judge = judge_create(
            collection=trial, name="umbrela", created_by=None, base_url=llm.url,
            model="test-model", api_key_env="NDCG_JUDGE_KEY_TEST", requests_per_minute=6000,
            prompt_price=1_000_000, currency="EUR",
        )  # fmt: skip
        olga.post(reverse("judge-run", args=["trial", "umbrela"]),
                  {"run-pool": pool.id, "run-scope": "all"})  # fmt: skip
        run = JudgeRun.objects.get()
        wait_until(lambda: JudgeRun.objects.get().state == "done", "the run finished", seconds=60)
        run.refresh_from_db()
        failing = pool.entries.filter(document__docno="d3").count()
        detail = olga.get(reverse("judge-detail", args=["trial", "umbrela"])).content.decode()
        assert f"{run.prompt_tokens:.4f} EUR" in detail  # a token costs 1 EUR
        assert f"Retry {failing} failed pair" in detail and "Retry run" not in detail
        page = olga.get(reverse("judge-run-detail", args=["trial", "umbrela", run.id]))
        text = page.content.decode()
        assert page.status_code == 200 and text.count("request refused") == failing
        assert "the endpoint refused the request: HTTP 404" in text and "no such model" not in text
        assert _client(trial, "alice").get(
            reverse("judge-run-detail", args=["trial", "umbrela", run.id])
        ).status_code in (403, 404)
        broken["on"] = False
        retried = olga.post(
            reverse("judge-run-retry", args=["trial", "umbrela", run.id]), {"pairs": "failed"}
        )
        assert retried.status_code == 302
        again = JudgeRun.objects.exclude(id=run.id).get()
        wait_until(lambda: JudgeRun.objects.get(id=again.id).state == "done", "retried", seconds=60)
        again.refresh_from_db()
        assert (again.retry_of_id, again.pairs_done, again.pairs_failed) == (run.id, failing, 0)
    assert judge.runs.count() == 2


def test_an_active_run_shows_its_time_left_and_the_pace_that_holds_it(
    trial: Collection,
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    services.pool_build(collection=trial, name="main", depth=2)
    judge = judge_create(
        collection=trial, name="umbrela", created_by=None, base_url="http://127.0.0.1:9/v1",
        model="m", api_key_env="", requests_per_minute=60,
    )  # fmt: skip
    now = timezone.now()
    # 60 requests in the minute since it started: the judge's whole pace of 60 a minute.
    run = JudgeRun.objects.create(
        judge=judge, pool=trial.pools.get(), state="running", pairs_total=90, pairs_done=30,
        requests=60, started=now - timedelta(seconds=60), heartbeat=now,
    )  # fmt: skip
    olga = _client(trial, "olga")
    state = olga.get(reverse("judge-runs-state", args=["trial", "umbrela"]))
    assert state.status_code == 200 and state.json()["active"] is True
    html = state.json()["html"]
    # 60 pairs left at the 30 a minute it went: about 2 minutes.
    assert "about 2 min left" in html and "30 of 90" in html
    assert "limited by the judge's pace of 60 requests/min" in html
    detail = olga.get(reverse("judge-detail", args=["trial", "umbrela"])).content.decode()
    assert 'data-active="1"' in detail and "about 2 min left" in detail
    own = olga.get(reverse("judge-run-state", args=["trial", "umbrela", run.id])).json()
    assert own["active"] is True and "about 2 min left" in own["html"]
    assert "Limited by the judge's pace of 60 requests/min." in own["html"]
    page = olga.get(reverse("judge-run-detail", args=["trial", "umbrela", run.id])).content
    assert b'id="judge-run-body" data-active="1"' in page
    # Sending well under the pace: the endpoint is the limit, nothing says the pace is.
    JudgeRun.objects.filter(id=run.id).update(requests=20)
    html = olga.get(reverse("judge-runs-state", args=["trial", "umbrela"])).json()["html"]
    assert "about 2 min left" in html and "requests/min" not in html
    JudgeRun.objects.filter(id=run.id).update(state="done", pairs_done=90)
    state = olga.get(reverse("judge-runs-state", args=["trial", "umbrela"])).json()
    assert state["active"] is False and "left" not in state["html"]
    assert "0.0000 USD" in state["html"]


@pytest.mark.browser
def test_the_judge_page_follows_an_active_run_by_itself(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from tests.conftest import browser_page, log_in

    services.pool_build(collection=trial, name="main", depth=2)
    judge = judge_create(
        collection=trial, name="umbrela", created_by=None, base_url="http://127.0.0.1:9/v1",
        model="m", api_key_env="",
    )  # fmt: skip
    run = JudgeRun.objects.create(judge=judge, pool=trial.pools.get(), pairs_total=90)
    with browser_page(browser, live_server) as page:
        log_in(page, "olga")
        page.goto(f"/collections/trial/judges/{judge.name}/")
        row = page.locator(f"tr[data-run='{run.id}']")
        assert "waiting for a worker" in row.inner_text()
        now = timezone.now()
        JudgeRun.objects.filter(id=run.id).update(
            state="running", pairs_done=45, requests=60, started=now - timedelta(seconds=60),
            heartbeat=now,
        )  # fmt: skip
        page.locator(f"tr[data-run='{run.id}']", has_text="45 of 90").wait_for()
        text = row.inner_text()
        assert "about 1 min left" in text and "pace of 60 requests/min" in text
        JudgeRun.objects.filter(id=run.id).update(state="done", pairs_done=90)
        page.wait_for_selector(f"tr[data-run='{run.id}'][data-state='done']")
        assert "left" not in row.inner_text()
        assert page.evaluate("document.getElementById('judge-runs-table').dataset.active") is None


@pytest.mark.browser
def test_a_runs_page_with_failed_pairs_passes_axe_and_fits_a_phone(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from annotations.models import JudgeRunFailure
    from tests.conftest import browser_page, log_in
    from tests.test_browser_accessibility import PHONE, page_problems

    services.pool_build(collection=trial, name="main-pool-" + "x" * 80, depth=2)
    judge = judge_create(
        collection=trial, name="umbrela", created_by=None, base_url="http://127.0.0.1:9/v1",
        model="m", api_key_env="",
    )  # fmt: skip
    pool = trial.pools.get()
    run = JudgeRun.objects.create(
        judge=judge, pool=pool, state="failed", pairs_total=9, pairs_done=4, pairs_failed=3,
        error="The endpoint gave no answer for 10 pairs in a row " + "e" * 150,
    )  # fmt: skip
    for entry in pool.entries.select_related("query", "document")[:3]:
        JudgeRunFailure.objects.create(
            run=run, query=entry.query, document=entry.document, kind="timeout",
            message="the endpoint kept failing (no answer within 60 s) after 6 attempts",
        )  # fmt: skip
    with browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")
        problems = page_problems(page, f"/collections/trial/judges/umbrela/runs/{run.id}/")
        assert page.locator("#failed-pairs tbody tr").count() == 3
        assert page.get_by_role("button", name="Retry run").count() == 1
        assert page.get_by_role("button", name="Retry 3 failed pairs").count() == 1
    assert not problems, "\n".join(problems)
