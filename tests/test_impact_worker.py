"""Impact refreshed by the refresh task on a real Celery worker, off the judgement path."""

import subprocess
from collections.abc import Callable

import pytest

from annotations import services, tasks
from annotations.models import AssignmentItem, Collection, ImpactSnapshot, PoolEntry, Query, Run
from annotations.selectors.scores_state import scores_state
from tests.factories import MembershipFactory, UserFactory
from tests.test_tasks import celery_worker
from tests.waiting import wait_until

__all__ = ["celery_worker"]  # the worker fixture, shared with the score tests


def _wait(condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    wait_until(condition, f"the Celery worker did not {what}", seconds)


@pytest.mark.celery
def test_the_worker_refreshes_impact_and_reprioritises_after_a_judgement(
    worked_example: Collection, celery_worker: subprocess.Popen[bytes]
) -> None:
    # A second run with documents nobody judged, so some comparisons are open.
    run, _ = services.run_store(
        collection=worked_example,
        run_name="other",
        results={
            "q1": [(d, 6.0 - i, i + 1) for i, d in enumerate(["x1", "x2", "d1", "x3", "d2", "x4"])]
        },
    )
    _wait(lambda: Run.objects.get(id=run.id).scored_at is not None, "score the new run")
    pool, added = services.pool_build(
        collection=worked_example, name="hot", depth=6, order="impact", budget=10
    )
    assert added > 1
    bob = MembershipFactory(collection=worked_example, user=UserFactory(username="bob")).user
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[bob])
    first = AssignmentItem.objects.get(assignment=assignment, position=1)
    assert first.entry.impact and first.entry.impact > 0
    services.assignment_item_grade(item=first, assessor=bob, grade=3)
    query = first.entry.query
    _wait(lambda: not Query.objects.get(id=query.id).scores_pending, "recompute the scores")
    # Neither the judgement's request nor the recomputation computed impact.
    assert PoolEntry.objects.get(id=first.entry_id).impact == first.entry.impact
    # What the worker runs after a recomputation (the worker queues it on its own queue;
    # here it is sent to the test's).
    tasks.refresh_leaderboards.apply_async((worked_example.id,))

    def refreshed() -> bool:
        stamp = scores_state(collection=worked_example).stamp
        stored = dict(
            ImpactSnapshot.objects.filter(collection=worked_example).values_list("k", "stamp")
        )
        # Every cutoff (and the pool's depth, 6), the last one's flip marks included.
        board = ImpactSnapshot.objects.filter(collection=worked_example, k=10).first()
        return (
            stored == dict.fromkeys([5, 6, 10], stamp)
            and board is not None
            and board.leaderboard_stamp == stamp
            and PoolEntry.objects.get(id=first.entry_id).impact == 0.0
        )

    _wait(refreshed, "refresh impact")
    tail = list(
        AssignmentItem.objects.filter(assignment=assignment, position__gt=2)
        .order_by("position")
        .values_list("entry__impact", flat=True)
    )
    assert tail == sorted(tail, reverse=True)
    assert celery_worker.poll() is None
