"""Real Celery worker processes for the tests: the broker, the test database's URL, a worker."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
BROKER = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")


def redis_reachable() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(BROKER, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def database_url() -> str:
    """The test database as a DATABASE_URL, for a worker process to use."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    host = settings["HOST"] or "127.0.0.1"
    auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
    return f"postgres://{auth}@{host}:{settings['PORT'] or 5432}/{settings['NAME']}"


def worker_start(
    queue: str, extra: Mapping[str, str] | None = None, without: Iterable[str] = ()
) -> subprocess.Popen[bytes]:
    """A solo worker reading only `queue` (no other test run's worker takes its tasks), on
    the test database, the test broker and the test's upload directory; `extra` adds to the
    environment, `without` names variables it leaves out."""
    from django.conf import settings

    environment = {
        **os.environ,
        "C_FORCE_ROOT": "1",
        # the project's settings, not the tests' (whose tasks run eagerly)
        "DJANGO_SETTINGS_MODULE": "ndcg_platform.settings",
        "CELERY_BROKER_URL": BROKER,
        "DATABASE_URL": database_url(),
        # the uploads storage the test's web side stores into (as every worker is configured)
        "NDCG_UPLOAD_DIR": str(settings.NDCG_UPLOAD_DIR),
        **(extra or {}),
    }
    for name in without:
        environment.pop(name, None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "ndcg_platform",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=ERROR",
            "-Q",
            queue,
        ],
        cwd=ROOT,
        env=environment,
    )
