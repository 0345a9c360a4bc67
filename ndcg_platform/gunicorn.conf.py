"""gunicorn settings for `make serve`: workers from the environment, statistics warmed."""

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "4"))
# The sync worker; a request line or header fields gunicorn refuses as too long answer in the
# API's error shape under /api/ (ndcg_platform/gunicorn_worker.py).
worker_class = "ndcg_platform.gunicorn_worker.ApiErrorWorker"
accesslog = "-"
max_requests = 10_000
max_requests_jitter = 500
timeout = 120


def post_worker_init(worker) -> None:  # type: ignore[no-untyped-def]
    """Each worker makes its leaderboard random draws before its first request, not in it,
    then tunes itself as a long-lived process (ndcg_platform/process_tuning.py)."""
    from annotations.scores import snapshots
    from ndcg_platform.process_tuning import tune_long_lived_process

    try:
        snapshots.statistics_warm()
    except Exception:  # a database not migrated yet: the first computation makes them
        worker.log.warning("could not warm the leaderboard statistics", exc_info=True)
    tune_long_lived_process()
