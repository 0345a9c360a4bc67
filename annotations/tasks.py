"""Background entry points for Celery workers: thin wrappers over the score services."""

from celery import shared_task

from annotations import scores
from annotations.models import Collection


@shared_task(name="annotations.tasks.recompute_query")
def recompute_query(query_id: int) -> bool:
    return scores.scores_recompute_query(query_id=query_id)


@shared_task(name="annotations.tasks.recompute_run")
def recompute_run(run_id: int) -> bool:
    return scores.scores_recompute_run(run_id=run_id)


@shared_task(name="annotations.tasks.rescore_collection")
def rescore_collection(collection_id: int) -> None:
    scores.scores_rescore_collection(collection_id=collection_id)


@shared_task(name="annotations.tasks.scores_sweep_stale")
def scores_sweep_stale() -> int:
    """Periodic (celery beat): heal whatever a lost task left pending."""
    total = 0
    for collection in Collection.objects.all():
        total += scores.scores_sweep_stale(collection=collection)
    return total
