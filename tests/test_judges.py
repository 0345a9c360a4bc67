"""Machine judges: prompts and the strict reading of answers, a judge run over a pool through
a real OpenAI-compatible HTTP server (retries, failures, cache, scope, cancel), each failed
pair recorded while the run goes on, timeouts and attempts per judge, retries of runs and of
their failed pairs, runs whose task was lost queued again, and trying a judge on a few pairs
without storing anything."""

from __future__ import annotations

import math
import re
import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotations import publishing, services, tasks
from annotations.formats import judge_prompts
from annotations.formats.judge_prompts import Level, read_answer
from annotations.models import (
    Collection,
    Document,
    JudgeAnswer,
    Judgement,
    JudgementHistory,
    JudgeRun,
    MachineJudge,
    Pool,
)
from annotations.services import judges as judges_service
from annotations.services.judge_client import UNAVAILABLE, EndpointFailed, ask
from annotations.services.judges import (
    QUEUED_STALE_SECONDS,
    judge_create,
    judge_run_cancel,
    judge_run_retry,
    judge_run_start,
    judge_try,
    judge_update,
    silent_limit,
)
from tests.factories import machine_judge
from tests.fake_llm import FakeLlm, fake_llm, says
from tests.waiting import wait_until

LEVELS = [Level(-1, "spam"), Level(0, "not"), Level(1, "related"), Level(2, "answers")]


# --- prompts and answers (no database) ------------------------------------------------------


def test_the_default_prompt_shows_the_scale_the_topic_and_the_document() -> None:
    prompt = judge_prompts.render(
        judge_prompts.UMBRELA, levels=LEVELS, title="solar", description="How stored?",
        narrative="", document="Batteries {store} energy.",
    )  # fmt: skip
    assert "integer scale of -1 to 2" in prompt and "-1 = spam" in prompt
    assert "Query: solar" in prompt and "Narrative: (none)" in prompt
    assert "Passage: Batteries {store} energy." in prompt  # the document's braces stay text


@pytest.mark.parametrize(
    ("template", "says_"),
    [
        ("", "empty"),
        ("{document} {relevance}", "Unknown fields {relevance}"),
        ("{title} only", "must show the document"),
        ("{document", "braces"),
    ],
)
def test_a_template_the_platform_cannot_fill_is_refused(template: str, says_: str) -> None:
    problem = judge_prompts.template_problem(template)
    assert problem is not None and says_ in problem


@pytest.mark.parametrize(
    ("answer", "grade", "failure"),
    [
        ("M=2, T=1 ##final score: 2", 2, ""),
        ("##FINAL SCORE:-1", -1, ""),
        ("##final score: 2 ... ##final score: 2", 2, ""),
        ("I think it is a 2.", None, "names no"),
        ("##final score: 1 then ##final score: 2", None, "several"),
        ("##final score: 3", None, "not on the scale"),
        ("##final score: two", None, "names no"),
    ],
)
def test_only_an_answer_naming_one_grade_of_the_scale_is_a_grade(
    answer: str, grade: int | None, failure: str
) -> None:
    reading = read_answer(answer, [-1, 0, 1, 2])
    assert reading.grade == grade and failure in reading.failure


def test_the_cache_key_follows_the_model_the_prompt_and_the_document() -> None:
    base = {"model": "m", "prompt_version": 1, "query_text": "q", "document_hash": "h"}
    key = judge_prompts.cache_key(**base)  # type: ignore[arg-type]
    for change in ({"model": "n"}, {"prompt_version": 2}, {"document_hash": "h2"}):
        assert judge_prompts.cache_key(**{**base, **change}) != key  # type: ignore[arg-type]


# --- judges and runs --------------------------------------------------------------------------


@pytest.fixture
def pool(trial: Collection) -> Pool:
    built, _ = services.pool_build(collection=trial, name="main", depth=2)
    return built


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "sk-test")


def _judge(trial: Collection, url: str) -> MachineJudge:
    return judge_create(
        collection=trial, name="umbrela", created_by=None, base_url=url, model="test-model",
        api_key_env="NDCG_JUDGE_KEY_TEST", concurrency=2, requests_per_minute=6000,
    )  # fmt: skip


def test_a_judge_gets_a_system_account_the_default_prompt_and_versions(
    trial: Collection,
) -> None:
    judge = _judge(trial, "http://127.0.0.1:9/v1")
    assert judge.prompt_template == judge_prompts.UMBRELA and judge.prompt_version == 1
    assert judge.account.username == "judge:trial:umbrela"
    assert not judge.account.has_usable_password()
    judge_update(judge=judge, temperature=0.0)
    assert judge.prompt_version == 1
    judge_update(judge=judge, prompt_template="Grade: {document}\n{scale}")
    assert judge.prompt_version == 2
    with pytest.raises(ValidationError, match="Unknown fields"):
        judge_update(judge=judge, prompt_template="{document} {query_text}")
    with pytest.raises(ValidationError, match="exists"):
        _judge(trial, "http://127.0.0.1:9/v1")


def test_a_judge_on_an_internal_address_needs_the_setting_at_creation_and_at_every_call(
    transactional_db: None, trial: Collection, pool: Pool, key: None, settings: Any
) -> None:
    settings.NDCG_JUDGE_ALLOW_PRIVATE = False
    for url, says_ in [
        ("http://127.0.0.1:11434/v1", "NDCG_JUDGE_ALLOW_PRIVATE=true"),
        ("http://10.0.0.7/v1", "private, loopback or internal"),
        ("ftp://93.184.216.34/v1", "http:// or https://"),
        ("http://user:pw@93.184.216.34/v1", "the key comes from the server's environment"),
    ]:
        with pytest.raises(ValidationError, match=re.escape(says_)):
            _judge(trial, url)
    assert not MachineJudge.objects.exists()
    public = _judge(trial, "http://93.184.216.34/v1")  # a global address literal: no DNS
    assert public.base_url == "http://93.184.216.34/v1"

    with fake_llm() as llm:  # allowed once; later the rule is checked again before a call
        settings.NDCG_JUDGE_ALLOW_PRIVATE = True
        local = judge_update(judge=public, base_url=llm.url)
        settings.NDCG_JUDGE_ALLOW_PRIVATE = False
        with pytest.raises(ValidationError, match="the endpoint is not called"):
            judge_try(judge=local, pool=pool)
        assert llm.prompts == []  # nothing was sent


def test_without_its_key_in_the_environment_a_judge_does_not_start(
    trial: Collection, pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NDCG_JUDGE_KEY_TEST", raising=False)
    judge = _judge(trial, "http://127.0.0.1:9/v1")
    with pytest.raises(ValidationError, match="NDCG_JUDGE_KEY_TEST"):
        judge_run_start(judge=judge, pool=pool, scope="all", created_by=None)
    assert not JudgeRun.objects.exists()


def _finished(run: JudgeRun) -> JudgeRun:
    def done() -> JudgeRun | None:
        run.refresh_from_db()
        return run if run.state not in JudgeRun.ACTIVE else None

    return wait_until(done, "the judge run finished", seconds=60)


def test_a_run_grades_the_pool_retries_records_failures_and_caches(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if number == 1:
            return 429, "slow down", {"Retry-After": "0"}
        if number == 2:
            return 503, "overloaded", {}
        if "Floods of the Rhine" in prompt:
            return says("It might be relevant.")  # no grade: a failure, never a grade
        return says("##final score: 2")

    with fake_llm(FakeLlm(respond)) as llm:
        judge = _judge(trial, llm.url)
        run = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        pairs = pool.entries.count()
        assert (run.state, run.pairs_total, run.pairs_done) == ("done", pairs, pairs)
        failing = pool.entries.filter(document__docno="d3").count()
        assert run.pairs_failed == failing >= 1
        assert run.completion_tokens == 7 * pairs and run.prompt_tokens > 0
        assert len(llm.prompts) == pairs + 2  # the 429 and the 503 were asked again
        assert {body["temperature"] for body in llm.bodies} == {0.0}
        grades = Judgement.objects.filter(assessor=judge.account)
        assert grades.count() == pairs - failing and {g.grade for g in grades} == {2}
        history = JudgementHistory.objects.filter(assessor=judge.account)
        assert {row.source for row in history} == {"machine"}
        for row in history:  # provenance: model, prompt version, tokens, time, the answer
            assert re.fullmatch(
                rf"{re.escape(judge.model)}, prompt v1, \d+\+7 tokens, \d+\.\d s: ##final score: 2",
                row.note,
            ), row.note
        assert {g.note for g in grades} == {row.note for row in history}
        assert JudgeAnswer.objects.filter(judge=judge, grade__isnull=True).count() == failing
        # Again: every answer comes from the cache, nothing is asked.
        again = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        assert (again.pairs_cached, again.prompt_tokens, len(llm.prompts)) == (
            pairs, 0, pairs + 2
        )  # fmt: skip
        # A document whose text changed is asked again, and only that one.
        Document.objects.filter(collection=trial, docno="d1").update(content_hash="changed")
        third = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        asked = pool.entries.filter(document__docno="d1").count()
        assert third.pairs_cached == pairs - asked and len(llm.prompts) == pairs + 2 + asked


def test_scope_unjudged_leaves_what_people_judged_to_them(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    entry = pool.entries.select_related("query", "document").first()
    assert entry is not None
    services.judgement_record(
        query=entry.query, document=entry.document, grade=0, source="form",
        assessor=User.objects.get(username="alice"),
    )  # fmt: skip
    with fake_llm() as llm:
        judge = _judge(trial, llm.url)
        run = _finished(judge_run_start(judge=judge, pool=pool, scope="unjudged", created_by=None))
    assert run.pairs_total == pool.entries.count() - 1 == len(llm.prompts)
    assert not Judgement.objects.filter(
        assessor=judge.account, query=entry.query, document=entry.document
    ).exists()


def test_a_cancelled_run_stops_and_a_new_one_resumes_from_the_answers(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    import threading

    from django.db import connections

    release = threading.Event()

    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if number > 2:
            release.wait(10)
        return says("##final score: 1")

    def start_as_a_worker_runs_it(judge: MachineJudge) -> None:
        try:  # the run's task runs (eagerly) in this thread, as on a worker beside the page
            judge_run_start(judge=judge, pool=pool, scope="all", created_by=None)
        finally:
            connections.close_all()

    with fake_llm(FakeLlm(respond)) as llm:
        judge = _judge(trial, llm.url)
        judge.concurrency = 1
        judge.save()
        worker = threading.Thread(target=start_as_a_worker_runs_it, args=(judge,))
        worker.start()
        wait_until(lambda: len(llm.prompts) >= 3, "the run asked", seconds=30)
        run = JudgeRun.objects.get(judge=judge)
        judge_run_cancel(run=run)
        release.set()
        worker.join(timeout=30)
        run = _finished(run)
        assert run.state == "cancelled" and run.pairs_done < run.pairs_total
        resumed = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        assert resumed.state == "done" and resumed.pairs_cached == run.pairs_done


def test_trying_a_judge_shows_prompts_answers_and_grades_and_stores_nothing(
    trial: Collection, pool: Pool, key: None
) -> None:
    with fake_llm(FakeLlm(lambda prompt, number: says(f"##final score: {number % 3}"))) as llm:
        judge = _judge(trial, llm.url)
        tried = judge_try(judge=judge)
    assert len(tried) == min(5, pool.entries.count())
    assert [item.grade for item in tried] == [n % 3 for n in range(1, len(tried) + 1)]
    assert tried[0].prompt == llm.prompts[0] and "Passage:" in tried[0].prompt
    assert (
        not JudgeAnswer.objects.exists()
        and not Judgement.objects.filter(assessor=judge.account).exists()
    )


# --- how sure a judge was: token log-probabilities -----------------------------------------


def _final(grade: str, alternatives: list[tuple[str, float]]) -> Any:
    """Tokens of '##final score: N' with N's alternatives."""
    return [("##", -0.01, []), ("final", -0.01, []), (" score", -0.01, []), (":", -0.01, []),
            (grade, alternatives[0][1], alternatives)]  # fmt: skip


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ([("##final score:", []), (" 2", [(" 2", math.log(0.6)), ("3", math.log(0.2)),
                                          ("x", math.log(0.1)), ("2", math.log(0.05))])],
         {-1: 0.0, 0: 0.0, 1: 0.0, 2: 0.75, 3: 0.25}),  # the first "2" counts, "x" is no grade
        ([("##final score: 2", [("2", 0.0)])], None),  # the digit shares a token with text
        ([("##final score: 1", []), ("2", [("2", 0.0)])], None),  # its final score is 12
        ([("##final score: ", []), ("2", [("two", 0.0)])], None),  # no alternative is a grade
        ([("it is relevant", [])], None),
    ],
)  # fmt: skip
def test_the_grade_tokens_alternatives_are_its_probabilities(
    tokens: list[Any], expected: dict[int, float] | None
) -> None:
    found = judge_prompts.grade_probabilities(tokens, 2, [-1, 0, 1, 2, 3])
    if expected is None:
        assert found is None  # never a made-up spread
    else:
        assert found == pytest.approx(expected, rel=1e-12)


def test_a_judge_asked_for_log_probabilities_keeps_each_answers_spread(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    spread = [("2", math.log(0.7)), ("1", math.log(0.2)), ("3", math.log(0.1))]
    answers = FakeLlm(lambda p, n: says("##final score: 2"), lambda text: _final("2", spread))
    with fake_llm(answers) as llm:
        plain = _judge(trial, llm.url)
        _finished(judge_run_start(judge=plain, pool=pool, scope="all", created_by=None))
        assert all("logprobs" not in body for body in llm.bodies)
        assert not JudgeAnswer.objects.filter(grade_probabilities__isnull=False).exists()
        sure = judge_create(
            collection=trial, name="sure", created_by=None, base_url=llm.url, model="other",
            api_key_env="NDCG_JUDGE_KEY_TEST", logprobs=True,
        )  # fmt: skip
        asked = len(llm.bodies)
        _finished(judge_run_start(judge=sure, pool=pool, scope="all", created_by=None))
        assert {(b["logprobs"], b["top_logprobs"]) for b in llm.bodies[asked:]} == {(True, 5)}
    stored = JudgeAnswer.objects.filter(judge=sure)
    assert stored.count() == pool.entries.count()
    for answer in stored:
        assert answer.grade == 2
        assert answer.grade_probabilities == pytest.approx(
            {"0": 0.0, "1": 0.2, "2": 0.7, "3": 0.1}, rel=1e-12
        )


def test_a_judge_with_a_prompt_variant_asks_both_ways_and_keeps_the_second_grade(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if prompt.startswith("In other words") and "Storing solar power" in prompt:
            return says("##final score: 1")  # the variant disagrees on d1
        return says("##final score: 2")

    variant = "In other words: how well does this answer {title}?\n{scale}\n{document}"
    with pytest.raises(ValidationError, match="Unknown fields"):
        machine_judge(trial, "bad", variant_template="{document} {query_text}")
    with fake_llm(FakeLlm(respond)) as llm:
        judge = machine_judge(trial, base_url=llm.url, variant_template=variant)
        run = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
    pairs = pool.entries.count()
    assert len(llm.prompts) == 2 * pairs and run.completion_tokens == 14 * pairs
    answers = JudgeAnswer.objects.filter(judge=judge)
    assert {a.grade for a in answers} == {2}  # the first wording's grade is the judgement
    on_d1 = {a.variant_grade for a in answers if a.document.docno == "d1"}
    assert on_d1 == {1} and {a.variant_grade for a in answers if a.document.docno != "d1"} == {2}
    assert set(
        Judgement.objects.filter(assessor=judge.account).values_list("grade", flat=True)
    ) == {2}
    judge_update(judge=judge, variant_template=variant + "\n")
    assert judge.prompt_version == 2  # answers of the old wordings are not reused


def test_trying_a_judge_with_a_variant_shows_both_answers(
    trial: Collection, pool: Pool, key: None
) -> None:
    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        return says("##final score: 0" if prompt.startswith("Again") else "##final score: 2")

    with fake_llm(FakeLlm(respond)) as llm:
        judge = machine_judge(trial, base_url=llm.url, variant_template="Again: {document}")
        tried = judge_try(judge=judge)
    assert {(item.grade, item.variant_grade) for item in tried} == {(2, 0)}
    assert all(item.variant_answer == "##final score: 0" for item in tried)
    assert len(llm.prompts) == 2 * len(tried) and not JudgeAnswer.objects.exists()


# --- a pair that keeps failing, timeouts and attempts per judge, retry, lost runs -----------


def test_a_pair_slower_than_the_judges_timeout_fails_alone_and_the_run_goes_on(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if "Floods of the Rhine" in prompt:
            time.sleep(2.5)  # longer than the judge's 1 s, every time
        return says("##final score: 2")

    with fake_llm(FakeLlm(respond)) as llm:
        judge = machine_judge(
            trial, base_url=llm.url, timeout_seconds=1, attempts=2, requests_per_minute=6000
        )
        run = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        slow = pool.entries.filter(document__docno="d3").count()
        assert slow >= 1 and pool.entries.count() > slow
        # The slow pair is that pair's failure; every other pair was asked and graded.
        assert (run.state, run.pairs_done, run.pairs_failed) == ("done", run.pairs_total, slow)
        failures = list(run.failures.select_related("document"))
        assert {(f.document.docno, f.kind) for f in failures} == {("d3", "timeout")}
        assert {f.message for f in failures} == {
            "the endpoint kept failing (no answer within 1 s) after 2 attempts"
        }
        graded = Judgement.objects.filter(assessor=judge.account)
        assert graded.count() == pool.entries.count() - slow
        assert len(llm.prompts) == run.requests == pool.entries.count() + slow  # 2 each
        assert not JudgeAnswer.objects.filter(document__docno="d3").exists()  # not cached


def test_refused_and_gradeless_pairs_are_recorded_with_their_kind_never_the_answer(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    secret = "internal-detail-7f3a"

    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if "Floods of the Rhine" in prompt:
            return 400, f"bad request {secret}", {}
        if "Storing solar power" in prompt:
            return says(f"I cannot tell {secret}")
        return says("##final score: 1")

    with fake_llm(FakeLlm(respond)) as llm:
        judge = machine_judge(trial, base_url=llm.url, requests_per_minute=6000)
        run = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        kinds = {
            (f.document.docno, f.kind, f.message) for f in run.failures.select_related("document")
        }
        assert kinds == {
            ("d3", "refused", "the endpoint refused the request: HTTP 400"),
            ("d1", "no_grade", "the answer names no '##final score: N'"),
        }
        assert run.state == "done" and run.pairs_failed == run.failures.count()
        refused = pool.entries.filter(document__docno="d3").count()
        assert len(llm.prompts) == pool.entries.count()  # a refusal is not asked again
        assert refused >= 1


def test_a_run_whose_endpoint_fails_every_pair_stops_after_a_few_in_a_row(
    transactional_db: None,
    trial: Collection,
    pool: Pool,
    key: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judges_service, "FAILURES_IN_A_ROW", 2)
    with fake_llm(FakeLlm(lambda prompt, number: (401, "no key", {}))) as llm:
        judge = machine_judge(trial, base_url=llm.url, concurrency=1)
        run = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
    assert pool.entries.count() > 2
    assert run.state == "failed" and "no answer for 2 pairs in a row" in run.error
    assert "HTTP 401" in run.error and "no key" not in run.error
    assert run.pairs_done == run.pairs_failed == run.failures.count() == len(llm.prompts) == 2


def test_timeout_attempts_and_currency_are_the_judges_own_within_bounds(
    trial: Collection, key: None
) -> None:
    for field, value in [
        ("timeout_seconds", 0), ("timeout_seconds", 601), ("attempts", 0), ("attempts", 11),
        ("currency", "usd"), ("currency", "EURO"),
    ]:  # fmt: skip
        with pytest.raises(ValidationError) as refused:
            machine_judge(trial, f"bad-{field}-{value}".replace("_", "-"), **{field: value})
        assert field in refused.value.message_dict
    with fake_llm(FakeLlm(lambda prompt, number: (503, "busy", {}))) as llm:
        judge = machine_judge(trial, base_url=llm.url, attempts=3, timeout_seconds=5)
        assert (judge.currency, MachineJudge().timeout_seconds, MachineJudge().attempts) == (
            "USD", 60, 6
        )  # fmt: skip
        with pytest.raises(EndpointFailed) as failed:
            ask(judge, "prompt", sleep=lambda seconds: None)
    assert len(llm.prompts) == 3 and failed.value.kind == UNAVAILABLE
    assert str(failed.value) == "the endpoint kept failing (HTTP 503) after 3 attempts"


def test_retrying_a_runs_failed_pairs_asks_only_those_again(
    transactional_db: None, trial: Collection, pool: Pool, key: None
) -> None:
    broken = {"on": True}

    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        if broken["on"] and "Floods of the Rhine" in prompt:
            return 400, "no", {}
        if broken["on"] and "Storing solar power" in prompt:
            return says("It might be relevant.")  # cached, and asked again on a retry
        return says("##final score: 2")

    with fake_llm(FakeLlm(respond)) as llm:
        judge = machine_judge(trial, base_url=llm.url, requests_per_minute=6000)
        first = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        failed = first.failures.count()
        assert failed == first.pairs_failed >= 2
        with pytest.raises(ValidationError, match="failed or cancelled"):
            judge_run_retry(run=first, failed_only=False, created_by=None)
        broken["on"] = False
        asked = len(llm.prompts)
        retry = _finished(judge_run_retry(run=first, failed_only=True, created_by=None))
        assert (retry.scope, retry.retry_of_id, retry.state) == ("failed", first.id, "done")
        assert retry.pairs_total == retry.pairs_done == failed and retry.pairs_failed == 0
        assert len(llm.prompts) - asked == failed  # the failed pairs, and only those
        assert Judgement.objects.filter(assessor=judge.account).count() == pool.entries.count()
        with pytest.raises(ValidationError, match="No pair of this run failed"):
            judge_run_retry(run=retry, failed_only=True, created_by=None)


def test_a_failed_run_is_retried_whole_and_its_answers_come_from_the_cache(
    transactional_db: None,
    trial: Collection,
    pool: Pool,
    key: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from annotations.services import judges as judges_service

    monkeypatch.setattr(judges_service, "FAILURES_IN_A_ROW", 2)
    down = {"from": 3}

    def respond(prompt: str, number: int) -> tuple[int, str, dict[str, str]]:
        return (503, "down", {}) if number >= down["from"] else says("##final score: 1")

    with fake_llm(FakeLlm(respond)) as llm:
        judge = machine_judge(trial, base_url=llm.url, concurrency=1, attempts=1)
        first = _finished(judge_run_start(judge=judge, pool=pool, scope="all", created_by=None))
        assert first.state == "failed" and first.pairs_done == 4 < first.pairs_total
        down["from"] = 10**6
        again = _finished(judge_run_retry(run=first, failed_only=False, created_by=None))
    assert (again.state, again.scope, again.retry_of_id) == ("done", "all", first.id)
    assert again.pairs_done == again.pairs_total == pool.entries.count()
    assert again.pairs_cached == 2 and again.pairs_failed == 0


def test_a_run_whose_task_was_lost_is_queued_again_by_the_sweep(
    transactional_db: None,
    trial: Collection,
    pool: Pool,
    key: None,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    caches["coordination"].clear()
    with fake_llm() as llm:
        judge = machine_judge(trial, base_url=llm.url, requests_per_minute=6000)
        # The broker loses the message: the run stays queued, no worker ever sees it.
        with monkeypatch.context() as lost:
            lost.setattr(publishing.JUDGE_RUN, "apply_async", lambda *a, **k: None)
            run = judge_run_start(judge=judge, pool=pool, scope="all", created_by=None)
        assert tasks.judge_runs_sweep() == 0  # queued only just now: not lost yet
        run.refresh_from_db()
        assert (run.state, run.pairs_done) == ("queued", 0)
        past = timezone.now() - timedelta(seconds=QUEUED_STALE_SECONDS + 1)
        JudgeRun.objects.filter(id=run.id).update(created=past)
        assert tasks.judge_runs_sweep() == 1
        run = _finished(run)
        assert (run.state, run.pairs_done) == ("done", run.pairs_total)
        assert run.pairs_total == pool.entries.count() == len(llm.prompts)

        # A worker that stopped mid-run: silent longer than the judge's longest pair.
        second = JudgeRun.objects.create(
            judge=judge, pool=pool, scope="all", state="running", starts=1,
            pairs_total=pool.entries.count(), pairs_done=1, started=past, heartbeat=past,
        )  # fmt: skip
        assert tasks.judge_runs_sweep() == 0  # silent, but not for that long
        gone = timezone.now() - silent_limit(judge) - timedelta(seconds=1)
        JudgeRun.objects.filter(id=second.id).update(heartbeat=gone)
        assert tasks.judge_runs_sweep() == 1
        second = _finished(second)
    assert (second.state, second.starts) == ("done", 2)
    assert second.pairs_done == second.pairs_cached == second.pairs_total  # from the cache
    # One asked to stop whose worker stopped too is cancelled, not queued again.
    third = JudgeRun.objects.create(
        judge=judge, pool=pool, scope="all", state="running", starts=1, cancel_requested=True,
        started=past, heartbeat=timezone.now() - silent_limit(judge) - timedelta(seconds=1),
    )  # fmt: skip
    assert tasks.judge_runs_sweep() == 0
    third.refresh_from_db()
    assert third.state == "cancelled"
