"""A run fetched from a search system checked against the system's previous run once it is
scored: significantly worse on the collection's main measure emits `system.regressed`."""

from __future__ import annotations

from annotations import events
from annotations.models import Run
from annotations.models.webhooks import SYSTEM_REGRESSED
from annotations.selectors.comparisons import runs_compare
from annotations.selectors.leaderboards import ALPHA
from annotations.selectors.system_history import main_cutoff, previous_run


def system_regression_check(*, run_id: int) -> bool:
    """After a run's scores are stored (the worker's `recompute_run`): if it was fetched from
    a system and its mean nDCG@k at the collection's main cutoff is below the system's
    previous run's with the paired randomization test's p-value under the platform's alpha
    (on the queries both count, the compare page's test), tell the collection's webhooks.
    True when it regressed. A run of no system, or a first run, has nothing to compare."""
    run = Run.objects.select_related("collection", "system").filter(id=run_id).first()
    if run is None or run.system is None or run.scored_at is None:
        return False
    previous = previous_run(run)
    if previous is None or previous.scored_at is None:
        return False
    k = main_cutoff(run.collection)
    comparison = runs_compare(a=run, b=previous, k=k)
    difference = comparison.mean_difference
    p_value = comparison.p_value
    if difference is None or p_value is None or difference >= 0 or p_value >= ALPHA:
        return False
    data = {
        "collection": run.collection.slug,
        "system": run.system.name,
        "run": run.name,
        "previous_run": previous.name,
        "measure": f"nDCG@{k}",
        "k": k,
        "mean": comparison.mean_a,
        "previous_mean": comparison.mean_b,
        "difference": difference,
        "p_value": p_value,
        "alpha": ALPHA,
        "queries": len(comparison.rows),
        "queries_worse": comparison.losses,
        "queries_better": comparison.wins,
    }
    events.emit(
        collection_id=run.collection_id,
        event_type=SYSTEM_REGRESSED,
        data=data,
        coalesce_key=f"system-regressed:{run.id}",
    )
    return True
