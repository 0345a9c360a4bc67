"""Process tuning: only long-lived serving processes are tuned, and tuning freezes start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import gc, django
django.setup()
set_up = gc.get_freeze_count()
from ndcg_platform.process_tuning import tune_long_lived_process
tune_long_lived_process()
frozen, tracked = gc.get_freeze_count(), len(gc.get_objects())
import pyarrow
print(set_up, frozen, tracked, pyarrow.default_memory_pool().backend_name)
"""


def test_setting_up_django_tunes_nothing_and_tuning_freezes_what_start_up_made() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ndcg_platform.settings"}
    env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    set_up, frozen, tracked, arrow_pool = result.stdout.split()
    assert int(set_up) == 0  # django.setup() (tests, commands, migrations) leaves the collector be
    assert int(frozen) > int(tracked)  # afterwards start-up's objects are out of its reach
    assert arrow_pool == "system"  # Arrow, loaded later, shares the C library's allocator


WORKERS = """
import gc, logging, runpy, django
django.setup()
from celery.signals import worker_process_init
import ndcg_platform.celery  # connects the signal
worker_process_init.send(sender=None)
celery = gc.get_freeze_count()
gc.unfreeze()
class Worker:
    log = logging.getLogger("gunicorn")
runpy.run_path("ndcg_platform/gunicorn.conf.py")["post_worker_init"](Worker())
print(celery, gc.get_freeze_count())
"""


def test_a_celery_worker_process_and_a_gunicorn_worker_tune_themselves(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ndcg_platform.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "-c", WORKERS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    celery, gunicorn = map(int, result.stdout.split())
    assert celery > 0 and gunicorn > 0
