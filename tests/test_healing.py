"""What a failed recomputation left pending stays pending, shown as such by every read, until
the worker's periodic sweep heals it (and queues the leaderboard refresh)."""

from typing import Any

import pytest
from django.test import Client

from annotations import scores, services, tasks
from annotations.models import Collection, Judgement, LeaderboardSnapshot, Query
from annotations.scores import rescoring, scheduling
from annotations.selectors.scores_state import scores_state
from tests.factories import UserFactory


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


def test_reads_show_what_a_failed_recomputation_left_pending_and_the_sweep_heals_it(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = Flaky(monkeypatch, failures=1)
    assert _regrade(0).scores_pending
    staff = UserFactory(username="watcher", is_staff=True)
    client = Client()
    client.force_login(staff)
    poll = f"/collections/{worked_example.slug}/leaderboard/state/"
    for _ in range(3):
        assert client.get(poll).json()["pending"]
        assert client.get(f"/api/v1/collections/{worked_example.slug}/leaderboard/?k=6").json()[
            "stale"
        ]
    assert flaky.calls == 1  # no read recomputed anything
    assert tasks.scores_sweep_stale() == 1
    assert not client.get(poll).json()["pending"]
    stamp = scores_state(collection=worked_example).stamp
    assert set(LeaderboardSnapshot.objects.values_list("stamp", flat=True)) == {stamp}
    assert scores.scores_verify(collection=worked_example) == []


def test_the_sweep_queues_a_refresh_for_a_leaderboard_left_behind(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh lost with the broker: the scores are current, the stored board is not."""
    with monkeypatch.context() as lost:  # only this patch: the suite's own stay
        lost.setattr(
            "annotations.scores.refresh_queue.leaderboards_refresh_schedule", lambda **_: None
        )
        _regrade(1)
        stamp = scores_state(collection=worked_example).stamp
        assert not scores_state(collection=worked_example).pending
        assert stamp not in set(LeaderboardSnapshot.objects.values_list("stamp", flat=True))
    tasks.scores_sweep_stale()
    assert set(LeaderboardSnapshot.objects.values_list("stamp", flat=True)) == {stamp}
