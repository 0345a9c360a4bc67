"""Scores before derived data: leaderboard refreshes debounced and one at a time per
collection, on a queue of their own; no impact work where nothing is ordered by impact."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import caches

from annotations import publishing, services
from annotations.models import Collection, ImpactSnapshot, Pool
from annotations.scores import refresh_pacing, snapshots
from annotations.services import impact


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[dict[str, Any]]:
    """Refreshes published (not run): their collection and options."""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # never reached: recorded
    settings.NDCG_COORDINATION_SHARED = True  # the marks in use, as with Redis
    caches["coordination"].clear()
    calls: list[dict[str, Any]] = []

    def record(args: tuple[Any, ...], **options: Any) -> None:
        calls.append({"collection": args[0], **options})

    monkeypatch.setattr(publishing.REFRESH_LEADERBOARDS, "apply_async", record)
    return calls


def test_a_burst_of_changes_queues_one_refresh_that_starts_after_the_debounce(
    trial: Collection, published: list[dict[str, Any]], settings: Any
) -> None:
    settings.NDCG_REFRESH_DEBOUNCE_SECONDS = 0.5
    for _ in range(5):
        snapshots.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 0.5}]


def test_a_refresh_while_another_runs_is_queued_again_for_after_it(
    trial: Collection, published: list[dict[str, Any]]
) -> None:
    caches["coordination"].add(snapshots._running_key(trial.id), 1)  # another worker's
    assert snapshots.leaderboards_refresh_task(collection_id=trial.id) is None
    assert [call["collection"] for call in published] == [trial.id]
    assert published[0]["countdown"] >= 1.0
    caches["coordination"].delete(snapshots._running_key(trial.id))
    assert snapshots.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)
    assert caches["coordination"].get(snapshots._running_key(trial.id)) is None  # released


def test_under_steady_judging_a_refresh_rests_as_long_as_the_last_one_ran(
    trial: Collection, published: list[dict[str, Any]], settings: Any, monkeypatch: Any
) -> None:
    settings.NDCG_REFRESH_DEBOUNCE_SECONDS = 0.5
    settings.NDCG_REFRESH_MAX_SHARE = 0.5
    clock = [1000.0]
    monkeypatch.setattr(refresh_pacing.time, "time", lambda: clock[0])
    # after a quiet spell a refresh of 4 s leaves no rest (a burst is not delayed) ...
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=4.0)
    snapshots.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 0.5}]
    published.clear()
    caches["coordination"].delete(snapshots._refresh_key(trial.id))
    # ... the next one, back to back, does: the one after it waits 4 s after it ended
    clock[0] += 4.2
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=4.0)
    clock[0] += 0.5
    snapshots.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 3.5}]
    # one queued before the rest began (while the refresh ran) is queued again for its end
    published.clear()
    caches["coordination"].delete(snapshots._refresh_key(trial.id))
    assert snapshots.leaderboards_refresh_task(collection_id=trial.id) is None
    assert published == [{"collection": trial.id, "retry": False, "countdown": 3.5}]
    # the rest over: the debounce alone, and the refresh runs
    published.clear()
    caches["coordination"].delete(snapshots._refresh_key(trial.id))
    clock[0] += 4.0
    snapshots.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 0.5}]
    assert snapshots.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)


def test_a_burst_after_a_pause_is_not_held_back_by_the_last_bursts_rest(
    trial: Collection, published: list[dict[str, Any]], settings: Any, monkeypatch: Any
) -> None:
    settings.NDCG_REFRESH_DEBOUNCE_SECONDS = 0.5
    settings.NDCG_REFRESH_MAX_SHARE = 0.25  # a rest three times as long as the refresh
    clock = [1000.0]
    monkeypatch.setattr(refresh_pacing.time, "time", lambda: clock[0])
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=2.0)
    clock[0] += 2.2  # back to back: a rest of 6 s from here
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=2.0)
    # a recomputation right after the end waits for the rest, and so does one 2 s later
    # while the judgements go on (it asked meanwhile) ...
    clock[0] += 0.5
    snapshots.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 5.5}]
    clock[0] += 2.0
    snapshots.leaderboards_refresh_schedule(collection_id=trial.id)
    assert len(published) == 1
    clock[0] += 0.1
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=2.0)  # back to back again
    # ... and after a pause of 3 s (that refresh still queued for the rest's end), the next
    # burst's first recomputation queues one at once, and it runs
    clock[0] += 3.0
    snapshots.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published[1:] == [{"collection": trial.id, "retry": False, "countdown": 0.5}]
    snapshots.leaderboards_refresh_schedule(collection_id=trial.id)  # the burst goes on
    assert len(published) == 2
    caches["coordination"].delete(snapshots._refresh_key(trial.id))
    clock[0] += 0.5
    assert snapshots.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)


def test_the_rest_follows_the_share_and_is_bounded(settings: Any) -> None:
    settings.NDCG_REFRESH_MAX_SHARE = 0.25  # three times as long as it ran
    assert refresh_pacing.rest_seconds(2.0) == 6.0
    assert refresh_pacing.rest_seconds(100.0) == refresh_pacing.MAX_REST_SECONDS
    settings.NDCG_REFRESH_MAX_SHARE = 1.0  # no rest
    assert refresh_pacing.rest_seconds(2.0) == 0.0


def test_without_impact_ordered_pools_no_impact_is_refreshed(trial: Collection) -> None:
    services.pool_build(collection=trial, name="depth", depth=2)
    assert impact.impacts_refresh_task(collection_id=trial.id) == 0
    assert not ImpactSnapshot.objects.filter(collection=trial).exists()
    services.pool_build(collection=trial, name="by-impact", depth=2, order=Pool.IMPACT, budget=2)
    assert impact.impacts_refresh_task(collection_id=trial.id) > 0
    assert ImpactSnapshot.objects.filter(collection=trial).exists()


def test_derived_work_and_imports_go_to_their_own_queues() -> None:
    from ndcg_platform.celery import app

    def queue(name: str) -> str:
        return str(app.amqp.router.route({}, name)["queue"].name)

    assert queue("annotations.tasks.refresh_leaderboards") == "derived"
    assert queue("annotations.tasks.import_job_run") == "imports"
    assert queue("annotations.tasks.recompute_query") == "celery"  # scores: the default
    assert queue("annotations.tasks.recompute_run") == "celery"


def test_the_make_workers_together_read_every_queue_a_task_is_routed_to() -> None:
    import re
    from pathlib import Path

    from django.conf import settings

    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    read = {q for listed in re.findall(r"worker -Q (\S+)", makefile) for q in listed.split(",")}
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    assert routed | {"celery"} <= read


def test_the_derived_worker_runs_at_a_lower_cpu_priority() -> None:
    import re
    from pathlib import Path

    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    derived = [line for line in makefile.splitlines() if "worker -Q derived" in line]
    scores = [line for line in makefile.splitlines() if "worker -Q celery" in line]
    assert derived and all(re.match(r"\s*nice -n \$\(DERIVED_NICE\) ", line) for line in derived)
    assert scores and not any("nice" in line for line in scores)
    assert re.search(r"^DERIVED_NICE \?= 10$", makefile, re.MULTILINE)
