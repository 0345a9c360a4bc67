"""Inline mode heals what a failed recomputation left pending, with no command run."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import caches
from django.test import Client

from annotations import scores, services
from annotations.models import Collection, Judgement, Query
from annotations.scores import rescoring, scheduling, snapshots
from annotations.scores.healing import pending_mark_key, scores_heal_pending
from annotations.selectors.scores_state import scores_state
from tests.factories import UserFactory


@pytest.fixture(autouse=True)
def _fresh_marks() -> Iterator[None]:
    caches["default"].clear()
    yield
    caches["default"].clear()


class Flaky:
    """`scores_recompute_query` failing its first `failures` calls, then the real one, where
    the scheduler after commit and the sweep call it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, failures: int) -> None:
        self.real = scores.scores_recompute_query
        self.failures = failures
        self.calls = 0
        monkeypatch.setattr(scheduling, "scores_recompute_query", self)
        monkeypatch.setattr(rescoring, "scores_recompute_query", self)

    def __call__(self, **kwargs: Any) -> bool:
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError("recomputation failed")
        return self.real(**kwargs)


def _regrade(grade: int) -> Query:
    judgement = Judgement.objects.get(query__qid="q1", document__docno="d1")
    services.judgement_record(
        query=judgement.query,
        document=judgement.document,
        assessor=judgement.assessor,
        grade=grade,
        source="api",
    )
    return Query.objects.get(qid="q1")


def test_a_recomputation_that_fails_once_is_retried_at_once(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = Flaky(monkeypatch, failures=1)
    query = _regrade(0)
    assert flaky.calls == 2
    assert not query.scores_pending
    assert scores.scores_verify(collection=worked_example) == []


def _age_the_mark(collection: Collection, seconds: float) -> None:
    """As if the pending state a read saw had been seen `seconds` earlier."""
    key = pending_mark_key(collection.id)
    stamp, seen = caches["default"].get(key)
    caches["default"].set(key, (stamp, seen - seconds))


def test_what_still_fails_stays_pending_until_a_read_sees_it_stand_still(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.NDCG_INLINE_HEAL_SECONDS = 30
    flaky = Flaky(monkeypatch, failures=3)  # both attempts after the commit, then one heal
    assert _regrade(0).scores_pending
    staff = UserFactory(username="watcher", is_staff=True)
    client = Client()
    client.force_login(staff)
    poll = f"/collections/{worked_example.slug}/leaderboard/state/"
    assert client.get(poll).json()["pending"]  # first sight: a recomputation may be running
    assert client.get(poll).json()["pending"] and flaky.calls == 2  # not before 30 s
    _age_the_mark(worked_example, 31)
    assert client.get(poll).json()["pending"] and flaky.calls == 3  # healed, failed again
    assert client.get(poll).json()["pending"] and flaky.calls == 3  # waits a full interval
    _age_the_mark(worked_example, 31)
    assert not client.get(poll).json()["pending"] and flaky.calls == 4
    assert scores.scores_verify(collection=worked_example) == []


def test_a_pending_state_that_moves_is_left_to_the_recomputation_in_flight(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.NDCG_INLINE_HEAL_SECONDS = 30
    flaky = Flaky(monkeypatch, failures=4)
    _regrade(0)
    staff = UserFactory(username="watcher", is_staff=True)
    client = Client()
    client.force_login(staff)
    poll = f"/collections/{worked_example.slug}/leaderboard/state/"
    client.get(poll)
    _age_the_mark(worked_example, 31)
    _regrade(1)  # a new change: a new stamp, its own recomputation (failing here)
    assert client.get(poll).json()["pending"] and flaky.calls == 4  # no heal: state moved


def test_the_leaderboard_read_heals_before_it_computes(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.NDCG_INLINE_HEAL_SECONDS = 0  # every read that sees pending scores heals them
    Flaky(monkeypatch, failures=2)
    assert _regrade(1).scores_pending
    board = snapshots.leaderboard_read(collection=worked_example, k=6)
    assert not board.state.pending
    assert not Query.objects.get(qid="q1").scores_pending
    assert scores.scores_verify(collection=worked_example) == []


def test_with_a_broker_the_workers_sweep_heals_and_reads_do_not(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    Flaky(monkeypatch, failures=2)
    assert _regrade(0).scores_pending
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    state = scores_state(collection=worked_example)
    assert scores_heal_pending(collection=worked_example, state=state) == 0
    assert Query.objects.get(qid="q1").scores_pending
