"""Scores before derived data: leaderboard refreshes debounced and one at a time per
collection, on a queue of their own; no impact work where nothing is ordered by impact."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import caches

from annotations import publishing, services
from annotations.models import Collection, ImpactSnapshot, LeaderboardSnapshot, Pool
from annotations.scores import refresh_pacing, refresh_queue, refresh_work, snapshots
from annotations.services import impact


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[dict[str, Any]]:
    """Significance passes published (not run): their collection and options."""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # never reached: recorded
    settings.NDCG_COORDINATION_SHARED = True  # the marks in use, as with Redis
    caches["coordination"].clear()
    calls: list[dict[str, Any]] = []

    def record(args: tuple[Any, ...], **options: Any) -> None:
        calls.append({"collection": args[0], **options})

    monkeypatch.setattr(publishing.REFRESH_SIGNIFICANCE, "apply_async", record)
    return calls


@pytest.fixture
def published(
    monkeypatch: pytest.MonkeyPatch, passes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Rows refreshes published (not run): their collection and options."""
    calls: list[dict[str, Any]] = []

    def record(args: tuple[Any, ...], **options: Any) -> None:
        calls.append({"collection": args[0], **options})

    monkeypatch.setattr(publishing.REFRESH_LEADERBOARDS, "apply_async", record)
    return calls


def test_a_burst_of_changes_queues_one_refresh_that_starts_after_the_debounce(
    trial: Collection, published: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh_pacing, "DEBOUNCE_SECONDS", 0.5)
    for _ in range(5):
        refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 0.5}]


def test_a_refresh_while_another_runs_is_queued_again_for_after_it(
    trial: Collection, published: list[dict[str, Any]]
) -> None:
    caches["coordination"].add(refresh_queue.running_key(trial.id), 1)  # another worker's
    assert refresh_work.leaderboards_refresh_task(collection_id=trial.id) is None
    assert [call["collection"] for call in published] == [trial.id]
    assert published[0]["countdown"] >= 1.0
    caches["coordination"].delete(refresh_queue.running_key(trial.id))
    assert refresh_work.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)
    assert caches["coordination"].get(refresh_queue.running_key(trial.id)) is None  # released


def test_under_steady_judging_a_refresh_rests_as_long_as_the_last_one_ran(
    trial: Collection, published: list[dict[str, Any]], settings: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(refresh_pacing, "DEBOUNCE_SECONDS", 0.5)
    monkeypatch.setattr(refresh_pacing, "REFRESH_SHARE", 0.5)
    clock = [1000.0]
    monkeypatch.setattr(refresh_pacing.time, "time", lambda: clock[0])
    # after a quiet spell a refresh of 4 s leaves no rest (a burst is not delayed) ...
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=4.0)
    refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 0.5}]
    published.clear()
    caches["coordination"].delete(refresh_queue.refresh_key(trial.id))
    # ... the next one, back to back, does: the one after it waits 4 s after it ended
    clock[0] += 4.2
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=4.0)
    clock[0] += 0.5
    refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 3.5}]
    # one queued before the rest began (while the refresh ran) is queued again for its end
    published.clear()
    caches["coordination"].delete(refresh_queue.refresh_key(trial.id))
    assert refresh_work.leaderboards_refresh_task(collection_id=trial.id) is None
    assert published == [{"collection": trial.id, "retry": False, "countdown": 3.5}]
    # the rest over: the debounce alone, and the refresh runs
    published.clear()
    caches["coordination"].delete(refresh_queue.refresh_key(trial.id))
    clock[0] += 4.0
    refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 0.5}]
    assert refresh_work.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)


def test_a_burst_after_a_pause_is_not_held_back_by_the_last_bursts_rest(
    trial: Collection, published: list[dict[str, Any]], settings: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(refresh_pacing, "DEBOUNCE_SECONDS", 0.5)
    monkeypatch.setattr(
        refresh_pacing, "REFRESH_SHARE", 0.25
    )  # a rest three times as long as the refresh
    clock = [1000.0]
    monkeypatch.setattr(refresh_pacing.time, "time", lambda: clock[0])
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=2.0)
    clock[0] += 2.2  # back to back: a rest of 6 s from here
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=2.0)
    # a recomputation right after the end waits for the rest, and so does one 2 s later
    # while the judgements go on (it asked meanwhile) ...
    clock[0] += 0.5
    refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published == [{"collection": trial.id, "retry": False, "countdown": 5.5}]
    clock[0] += 2.0
    refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)
    assert len(published) == 1
    clock[0] += 0.1
    refresh_pacing.refresh_done(collection_id=trial.id, seconds=2.0)  # back to back again
    # ... and after a pause of 3 s (that refresh still queued for the rest's end), the next
    # burst's first recomputation queues one at once, and it runs
    clock[0] += 3.0
    refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)
    assert published[1:] == [{"collection": trial.id, "retry": False, "countdown": 0.5}]
    refresh_queue.leaderboards_refresh_schedule(collection_id=trial.id)  # the burst goes on
    assert len(published) == 2
    caches["coordination"].delete(refresh_queue.refresh_key(trial.id))
    clock[0] += 0.5
    assert refresh_work.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)


def _letters_behind(collection: Collection) -> list[int]:
    return [
        k
        for k, stamp, significance in LeaderboardSnapshot.objects.filter(
            collection=collection
        ).values_list("k", "stamp", "significance__stamp")
        if significance != stamp
    ]


def test_the_rows_refresh_runs_no_significance_pass_and_queues_one(
    trial: Collection,
    published: list[dict[str, Any]],
    passes: list[dict[str, Any]],
    monkeypatch: Any,
) -> None:
    def no_pass(**_: object) -> None:
        raise AssertionError("a significance pass in the rows refresh")

    monkeypatch.setattr(refresh_work, "significance_refresh", no_pass)
    assert refresh_work.leaderboards_refresh_task(collection_id=trial.id) == len(trial.cutoffs)
    assert sorted(_letters_behind(trial)) == sorted(trial.cutoffs)  # rows current, letters not
    assert passes == [{"collection": trial.id, "retry": False}]  # one pass queued, at once
    caches["coordination"].delete(refresh_queue.refresh_key(trial.id))
    refresh_queue.significance_schedule(collection_id=trial.id)  # already queued: no second
    assert len(passes) == 1


def test_each_significance_task_runs_one_cutoff_and_queues_the_next(
    trial: Collection, passes: list[dict[str, Any]]
) -> None:
    snapshots.leaderboards_refresh_rows(collection=trial)
    first, second = trial.sorted_cutoffs
    assert refresh_work.significance_task(collection_id=trial.id) == first
    assert _letters_behind(trial) == [second]
    assert passes == [{"collection": trial.id, "retry": False}]  # the same rows: no rest
    assert refresh_work.significance_task(collection_id=trial.id) == second
    assert _letters_behind(trial) == [] and len(passes) == 1  # nothing more to queue
    assert refresh_work.significance_task(collection_id=trial.id) == 0
    # the letters equal the synchronous refresh's, bit for bit
    stored = dict(LeaderboardSnapshot.objects.filter(collection=trial).values_list("k", "pairs"))
    LeaderboardSnapshot.objects.filter(collection=trial).delete()
    snapshots.leaderboards_refresh(collection=trial)
    again = dict(LeaderboardSnapshot.objects.filter(collection=trial).values_list("k", "pairs"))
    assert {k: bytes(v) for k, v in stored.items()} == {k: bytes(v) for k, v in again.items()}


def test_a_pass_over_newer_rows_waits_out_the_last_passs_rest(
    trial: Collection, passes: list[dict[str, Any]], settings: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(
        refresh_pacing, "SIGNIFICANCE_SHARE", 0.2
    )  # rest four times as long as a pass ran
    clock = [1000.0]
    monkeypatch.setattr(refresh_pacing.time, "time", lambda: clock[0])
    snapshots.leaderboards_refresh_rows(collection=trial)
    stamp = LeaderboardSnapshot.objects.filter(collection=trial).values_list("stamp", flat=True)
    refresh_pacing.significance_pass_done(collection_id=trial.id, stamp="older", seconds=2.0)
    clock[0] += 1.0
    assert refresh_work.significance_task(collection_id=trial.id) is None  # 7 s of rest left
    assert passes == [{"collection": trial.id, "retry": False, "countdown": 7.0}]
    assert sorted(_letters_behind(trial)) == sorted(trial.cutoffs)
    # a pass over the rows the last pass ran on (the next cutoff of a burst) does not rest
    refresh_pacing.significance_pass_done(collection_id=trial.id, stamp=stamp[0], seconds=2.0)
    assert refresh_work.significance_task(collection_id=trial.id) == trial.sorted_cutoffs[0]
    # and once the rest is over, newer rows go too
    refresh_pacing.significance_pass_done(collection_id=trial.id, stamp="older", seconds=2.0)
    clock[0] += 8.0
    assert refresh_work.significance_task(collection_id=trial.id) == trial.sorted_cutoffs[1]


def test_the_passes_of_one_stamp_rest_as_one(
    trial: Collection, passes: list[dict[str, Any]], monkeypatch: Any
) -> None:
    """Every cutoff's and every kept measure's pass over one stamp: the rest that follows
    them is the share of their summed time, not of the last one's."""
    monkeypatch.setattr(refresh_pacing, "SIGNIFICANCE_SHARE", 0.2)  # rest 4x the passes
    monkeypatch.setattr(refresh_pacing.time, "time", lambda: 1000.0)
    for _ in range(3):
        refresh_pacing.significance_pass_done(collection_id=trial.id, stamp="s1", seconds=1.0)
    assert refresh_pacing.significance_rest_left(collection_id=trial.id, stamp="s2") == 12.0
    assert refresh_pacing.significance_rest_left(collection_id=trial.id, stamp="s1") == 0.0
    # a newer stamp's passes start a new sum
    refresh_pacing.significance_pass_done(collection_id=trial.id, stamp="s2", seconds=1.0)
    assert refresh_pacing.significance_rest_left(collection_id=trial.id, stamp="s3") == 4.0


def test_the_rest_follows_the_share_and_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refresh_pacing, "REFRESH_SHARE", 0.25)  # three times as long as it ran
    assert refresh_pacing.rest_seconds(2.0) == 6.0
    assert refresh_pacing.rest_seconds(100.0) == refresh_pacing.MAX_REST_SECONDS
    monkeypatch.setattr(refresh_pacing, "REFRESH_SHARE", 1.0)  # no rest
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
    assert queue("annotations.tasks.refresh_significance") == "derived"
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
    derived = [
        line for line in makefile.splitlines() if re.search(r"worker -Q (derived|imports)", line)
    ]
    scores = [line for line in makefile.splitlines() if "worker -Q celery" in line]
    assert len(derived) == 2
    assert all(re.match(r"\s*nice -n \$\(DERIVED_NICE\) ", line) for line in derived)
    assert scores and not any("nice" in line for line in scores)
    assert re.search(r"^DERIVED_NICE \?= 10$", makefile, re.MULTILINE)


def test_long_and_outbound_tasks_never_share_a_worker_with_the_leaderboards() -> None:
    """Import jobs take minutes, machine judges' runs hours, and webhook deliveries wait on
    targets organisers chose: each on a worker of its own, so that refreshes, significance
    passes and imports never wait behind another collection's slow endpoint."""
    import re
    from pathlib import Path

    from django.conf import settings

    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    queues = [set(listed.split(",")) for listed in re.findall(r"worker -Q (\S+)", makefile)]
    routes = settings.CELERY_TASK_ROUTES
    long_queue = routes["annotations.tasks.import_job_run"]["queue"]
    outbound = routes["annotations.tasks.judge_run_execute"]["queue"]
    assert routes["annotations.tasks.webhooks_send"]["queue"] == outbound
    assert routes["annotations.tasks.webhooks_sweep"]["queue"] == outbound
    derived = routes["annotations.tasks.refresh_leaderboards"]["queue"]
    assert routes["annotations.tasks.refresh_significance"]["queue"] == derived
    assert len({long_queue, outbound, derived}) == 3
    for one, other in ((long_queue, derived), (outbound, derived), (outbound, long_queue)):
        assert all(not (one in read and other in read) for read in queues)
    for queue in (long_queue, outbound, derived):
        assert any(queue in read for read in queues)
