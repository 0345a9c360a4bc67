"""Background entry points for Celery workers: thin wrappers over the services."""

from celery import Task, shared_task

from annotations import events, idempotency, scores
from annotations.models import Collection, Query, Run
from annotations.scores import refresh_queue, refresh_work
from annotations.services import (
    impact,
    job_recovery,
    jobs,
    judges,
    system_fetch,
    system_regressions,
    system_schedule,
    webhooks,
)


@shared_task(name="annotations.tasks.recompute_stale_queries")
def recompute_stale_queries(collection_id: int) -> int:
    """After judgements: every query of the collection they left stale (one task however
    many came while it was queued), then one leaderboard refresh."""
    scores.coalesce_release(scores.stale_queries_key(collection_id))  # later changes queue again
    done = scores.scores_recompute_stale_queries(collection_id=collection_id)
    if done:
        refresh_queue.leaderboards_refresh_schedule(collection_id=collection_id)
    return done


@shared_task(name="annotations.tasks.recompute_query")
def recompute_query(query_id: int) -> bool:
    """One query (what was queued per query before `recompute_stale_queries`)."""
    scores.coalesce_release(f"recompute-query:{query_id}")  # later changes queue again
    changed = scores.scores_recompute_query(query_id=query_id)
    for found in Query.objects.filter(id=query_id).values_list("collection_id", flat=True):
        if changed:
            scores.scores_updated_emit(query_id=query_id, collection_id=found)
        refresh_queue.leaderboards_refresh_schedule(collection_id=found)
    return changed


@shared_task(name="annotations.tasks.recompute_run")
def recompute_run(run_id: int) -> bool:
    """After a run's import or fetch: its scores, then (a run fetched from a search system)
    whether it regressed from the system's previous run, then one leaderboard refresh."""
    changed = scores.scores_recompute_run(run_id=run_id)
    if changed:
        system_regressions.system_regression_check(run_id=run_id)
    for found in Run.objects.filter(id=run_id).values_list("collection_id", flat=True):
        refresh_queue.leaderboards_refresh_schedule(collection_id=found)
    return changed


@shared_task(name="annotations.tasks.rescore_collection")
def rescore_collection(collection_id: int) -> None:
    scores.scores_rescore_collection(collection_id=collection_id)
    refresh_queue.leaderboards_refresh_schedule(collection_id=collection_id)


@shared_task(name="annotations.tasks.refresh_leaderboards")
def refresh_leaderboards(collection_id: int) -> int:
    """After a recomputation: store the collection's leaderboard rows at the new scores stamp
    (their significance passes queued as tasks of their own), then the impact of judging
    (re-prioritising impact-ordered assignments) and flip marks. Derived data: on the
    "derived" queue, never ahead of a recomputation."""
    done = refresh_work.leaderboards_refresh_task(collection_id=collection_id)
    if done is None:  # another worker is refreshing the collection; queued again for after
        return 0
    impact.impacts_refresh_task(collection_id=collection_id)
    return done


@shared_task(name="annotations.tasks.refresh_significance")
def refresh_significance(collection_id: int) -> int | str:
    """The all-pairs significance of one cutoff whose letters are behind its rows, else of
    one kept measure whose letters are behind the scores (queued again for the next); paced,
    on the "derived" queue. Returns the cutoff or the measure's name (0: none)."""
    return refresh_work.significance_task(collection_id=collection_id) or 0


@shared_task(name="annotations.tasks.scores_sweep_stale")
def scores_sweep_stale() -> int:
    """Periodic (celery beat): heal whatever a lost task left pending, and queue the
    leaderboard refreshes a lost task left undone."""
    total = 0
    for collection in Collection.objects.all():
        total += scores.scores_sweep_stale(collection=collection)
    refresh_work.leaderboards_sweep()
    return total


@shared_task(name="annotations.tasks.import_job_run")
def import_job_run(job_id: int) -> str:
    """Run one queued import job (an uploaded file) on a worker."""
    return jobs.import_job_run(job_id=job_id)


@shared_task(name="annotations.tasks.import_jobs_sweep")
def import_jobs_sweep() -> int:
    """Periodic (celery beat): fail the import jobs whose worker stopped."""
    return job_recovery.import_jobs_sweep()


@shared_task(name="annotations.tasks.idempotency_purge")
def idempotency_purge() -> int:
    """Periodic (celery beat): forget the stored answers of writes older than their keys'
    keep (`idempotency.KEEP_HOURS`)."""
    return idempotency.purge_expired()


@shared_task(name="annotations.tasks.webhooks_send")
def webhooks_send() -> None:
    """Send the webhook deliveries that are due; queue itself again for the next retry."""
    events.wake_release()
    following = webhooks.deliveries_send_due()
    if following is not None:
        events.schedule_retry(following)


@shared_task(name="annotations.tasks.webhooks_sweep")
def webhooks_sweep() -> None:
    """Periodic (celery beat): deliveries whose wake was lost, and the log's old rows."""
    webhooks.deliveries_sweep()


@shared_task(bind=True, name="annotations.tasks.judge_run_execute", max_retries=None)
def judge_run_execute(self: Task, run_id: int) -> str:
    """Run a machine judge over a pool (a long task, on the outbound queue); asked again
    later while its collection's other runs hold every place."""
    state = judges.judge_run_execute(run_id=run_id)
    if state == judges.WAITING:
        raise self.retry(countdown=judges.WAIT_SECONDS)
    return state


@shared_task(name="annotations.tasks.judge_runs_sweep")
def judge_runs_sweep() -> int:
    """Periodic (celery beat): queue again the judge runs whose task was lost or whose
    worker stopped."""
    return judges.judge_runs_sweep()


@shared_task(name="annotations.tasks.system_fetch_run")
def system_fetch_run(job_id: int) -> str:
    """Fetch a run from a search system (a long task, on the outbound queue)."""
    return system_fetch.system_fetch_run(job_id=job_id)


@shared_task(name="annotations.tasks.system_fetches_sweep")
def system_fetches_sweep() -> int:
    """Periodic (celery beat): start the fetches of the search systems whose schedule is due."""
    return len(system_schedule.system_fetches_sweep())
