"""Settings of the worker processes the tests start: the project's, with what a test tunes.

A test tunes a worker through its environment: TEST_WORKER_CONSTANTS, a JSON object of
module constants set once the apps are loaded (`{"annotations.services.job_progress.
HEARTBEAT_SECONDS": 1}`, tests/worker_tuning.py); TEST_WORKER_QUEUE, one queue for every
task, the worker's own retries included; TEST_SWEEP_SECONDS, the period of the beat's sweep
of pending scores.
"""

import os

from ndcg_platform.settings import *  # noqa: F403
from ndcg_platform.settings import CELERY_BEAT_SCHEDULE, INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.worker_tuning.WorkerTuning"]

if os.environ.get("TEST_WORKER_QUEUE"):
    CELERY_TASK_ROUTES: dict[str, object] = {}
    CELERY_TASK_DEFAULT_QUEUE = os.environ["TEST_WORKER_QUEUE"]

if os.environ.get("TEST_SWEEP_SECONDS"):
    _SWEEP = "scores-sweep-stale"
    CELERY_BEAT_SCHEDULE = {
        **CELERY_BEAT_SCHEDULE,
        _SWEEP: {
            **CELERY_BEAT_SCHEDULE[_SWEEP],
            "schedule": float(os.environ["TEST_SWEEP_SECONDS"]),
        },
    }
