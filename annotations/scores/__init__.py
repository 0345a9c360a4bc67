"""Stored scores: recompute after every change, schedule after commit, verify, heal stale ones.

`computing` scores one query; `queries` stores one query's recomputation after a judgement;
`rescoring` rebuilds runs and collections, verifies and sweeps; `scheduling` runs them after
commit on Celery.
"""

from annotations.scores.queries import scores_recompute_query
from annotations.scores.rescoring import (
    scores_recompute_run,
    scores_rescore_collection,
    scores_sweep_stale,
    scores_verify,
)
from annotations.scores.scheduling import (
    COALESCE_SECONDS,
    coalesce_release,
    scores_recompute_stale_queries,
    scores_schedule,
    scores_updated_emit,
    stale_queries_key,
)

__all__ = [
    "COALESCE_SECONDS",
    "coalesce_release",
    "scores_recompute_query",
    "scores_recompute_run",
    "scores_recompute_stale_queries",
    "scores_rescore_collection",
    "scores_schedule",
    "scores_sweep_stale",
    "scores_updated_emit",
    "scores_verify",
    "stale_queries_key",
]
