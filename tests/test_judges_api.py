"""Machine judges through the API: organisers only; add, change, try, run, follow, cancel."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import services
from annotations.formats import judge_prompts
from annotations.models import Collection, JudgeRun
from tests.fake_llm import FakeLlm, fake_llm, says
from tests.waiting import wait_until

BASE = "/api/v1/collections/trial/judges/"


def _client(username: str | None) -> APIClient:
    client = APIClient()
    if username is not None:
        token, _ = Token.objects.get_or_create(user=User.objects.get(username=username))
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_organisers_run_a_judge_through_the_api_and_nobody_else_may(
    transactional_db: None, trial: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "sk-test")
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    with fake_llm(FakeLlm(lambda prompt, number: says("##final score: 1"))) as llm:
        body = {
            "name": "umbrela", "base_url": llm.url, "model": "test-model",
            "api_key_env": "NDCG_JUDGE_KEY_TEST", "requests_per_minute": 6000,
        }  # fmt: skip
        assert _client(None).post(BASE, body, format="json").status_code == 401
        assert _client("alice").post(BASE, body, format="json").status_code == 403
        assert _client("alice").get(BASE).status_code == 403
        olga = _client("olga")
        bad = olga.post(BASE, {**body, "prompt_template": "{nope} {document}"}, format="json")
        assert bad.status_code == 400 and "prompt_template" in bad.json()["error"]["fields"]
        made = olga.post(BASE, body, format="json")
        assert made.status_code == 201, made.content
        assert made["Location"].endswith(f"{BASE}umbrela/")
        judge = made.json()
        assert judge["account"] == "judge:trial:umbrela" and judge["prompt_version"] == 1
        assert judge["prompt_template"] == judge_prompts.UMBRELA
        changed = olga.patch(
            f"{BASE}umbrela/", {"prompt_template": "Grade {document} on {scale}"}, format="json"
        )
        assert changed.status_code == 200 and changed.json()["prompt_version"] == 2
        tried = olga.post(f"{BASE}umbrela/try/")
        assert tried.status_code == 200
        assert [item["grade"] for item in tried.json()] == [1] * min(5, pool.entries.count())
        assert _client("alice").post(f"{BASE}umbrela/try/").status_code == 403
        refused = olga.post(f"{BASE}umbrela/runs/", {"pool": 999999}, format="json")
        assert refused.status_code == 400
        started = olga.post(
            f"{BASE}umbrela/runs/", {"pool": pool.id, "scope": "all"}, format="json"
        )
        assert started.status_code == 202 and started.json()["state"] == "queued"
        run_id = started.json()["id"]

        def done() -> bool:
            listed = olga.get(f"{BASE}umbrela/runs/").json()["results"]
            return listed[0]["state"] == "done"

        wait_until(done, "the run finished", seconds=60)
        [run] = olga.get(f"{BASE}umbrela/runs/").json()["results"]
        assert run["id"] == run_id and run["pairs_done"] == run["pairs_total"] > 0
        cancelled = olga.post(f"{BASE}umbrela/runs/{run_id}/cancel/")
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "done"
    assert JudgeRun.objects.count() == 1
    assert olga.get(f"{BASE}nobody/").status_code == 404


def test_a_runs_failed_pairs_are_listed_and_retried_through_the_api(
    transactional_db: None, trial: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "sk-test")
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    broken = {"on": True}

    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if broken["on"] and "Floods of the Rhine" in prompt:
            return 400, "the endpoint's own words", {}
        return says("##final score: 1")

    olga = _client("olga")
    with fake_llm(FakeLlm(respond)) as llm:
        body = {
            "name": "umbrela", "base_url": llm.url, "model": "test-model",
            "api_key_env": "NDCG_JUDGE_KEY_TEST", "requests_per_minute": 6000,
            "timeout_seconds": 0,
        }  # fmt: skip
        bad = olga.post(BASE, body, format="json")
        assert bad.status_code == 400 and "timeout_seconds" in bad.json()["error"]["fields"]
        made = olga.post(
            BASE, {**body, "timeout_seconds": 5, "attempts": 2, "currency": "EUR"}, format="json"
        )
        assert made.status_code == 201, made.content
        assert {k: made.json()[k] for k in ("timeout_seconds", "attempts", "currency")} == {
            "timeout_seconds": 5, "attempts": 2, "currency": "EUR"
        }  # fmt: skip
        assert olga.patch(f"{BASE}umbrela/", {"attempts": 11}, format="json").status_code == 400
        started = olga.post(
            f"{BASE}umbrela/runs/", {"pool": pool.id, "scope": "all"}, format="json"
        )
        run_url = f"{BASE}umbrela/runs/{started.json()['id']}/"
        assert started["Location"].endswith(run_url)

        def finished(url: str) -> dict[str, object] | None:
            run = olga.get(url).json()
            return run if run["state"] not in JudgeRun.ACTIVE else None

        run = wait_until(lambda: finished(run_url), "the run finished", seconds=60)
        failing = pool.entries.filter(document__docno="d3").count()
        assert (run["state"], run["pairs_failed"], run["currency"]) == ("done", failing, "EUR")
        assert run["eta_seconds"] is None and run["pace_limited"] is False
        listed = olga.get(f"{run_url}failures/")
        assert listed.status_code == 200
        failures = listed.json()["results"]
        assert [(f["docno"], f["kind"], f["message"]) for f in failures] == [
            ("d3", "refused", "the endpoint refused the request: HTTP 400")
        ] * failing
        assert "own words" not in listed.content.decode()
        assert _client("alice").get(f"{run_url}failures/").status_code == 403
        whole = olga.post(f"{run_url}retry/", {"pairs": "all"}, format="json")
        assert whole.status_code == 400  # a done run: only its failed pairs
        broken["on"] = False
        retried = olga.post(f"{run_url}retry/", {"pairs": "failed"}, format="json")
        assert retried.status_code == 202, retried.content
        again = retried.json()
        assert (again["scope"], again["retry_of"], again["pairs_total"]) == (
            "failed", run["id"], failing
        )  # fmt: skip
        again_url = f"{BASE}umbrela/runs/{again['id']}/"
        assert retried["Location"].endswith(again_url)
        done = wait_until(lambda: finished(again_url), "the retry finished", seconds=60)
        assert (done["pairs_done"], done["pairs_failed"]) == (failing, 0)
        assert olga.get(f"{again_url}failures/").json()["results"] == []
    assert olga.get(f"{BASE}umbrela/runs/999999/failures/").status_code == 404
