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
