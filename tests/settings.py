"""Settings of the test suite: the project's, with every background task run eagerly.

A task queued after a commit (`transaction.on_commit`, then `publishing`) runs at once in
the process that queued it, through the same task as on a worker. The Celery tests start
real workers on Redis and point this process at their broker (`tests.conftest.celery_broker`).
"""

import os

from ndcg_platform.settings import *  # noqa: F403
from ndcg_platform.settings import CACHES, EMBEDDED_BROKER

CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = ""

if EMBEDDED_BROKER and not os.environ.get("DJANGO_CACHE_URL"):
    # The embedded coordination cache is files under var/, seen by every process on the
    # machine: each test process keeps its own marks instead.
    CACHES = {
        **CACHES,
        "coordination": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "coord",
        },
    }
    NDCG_COORDINATION_SHARED = False
