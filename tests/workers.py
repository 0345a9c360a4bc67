"""Real Celery worker processes for the tests: the broker, the test database's URL, a worker."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest
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
        # the project's settings, not the tests' (whose tasks run eagerly), with the
        # constants a test tunes (tests/worker_settings.py)
        "DJANGO_SETTINGS_MODULE": "tests.worker_settings",
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


@contextmanager
def gunicorn_serving(database: str, extra: Mapping[str, str] | None = None) -> Iterator[int]:
    """gunicorn as `make serve` runs it (the project's config, production settings), one
    worker on a free port of 127.0.0.1 on `database`, with `extra` in its environment; the
    port once it accepts connections."""
    from tests.conftest import require_component

    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent))
    if gunicorn is None:
        require_component("gunicorn is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    environment = {
        **os.environ,
        "DATABASE_URL": database,
        "DJANGO_ENV": "production",
        "DJANGO_SECRET_KEY": "gunicorn-test-" + "x" * 40,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DJANGO_SECURE_HSTS_SECONDS": "0",
        **(extra or {}),
    }
    environment.pop("CELERY_BROKER_URL", None)
    process = subprocess.Popen(
        [str(gunicorn), "ndcg_platform.wsgi:application", "--config",
         "ndcg_platform/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--log-level", "error"],
        cwd=ROOT, env=environment,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("gunicorn did not start")
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
