"""Celery application: runs score recomputation on workers when CELERY_BROKER_URL is set."""

import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ndcg_platform.settings")

app = Celery("ndcg_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _tune_worker(**_: object) -> None:
    """Each worker process tunes itself as a long-lived process (process_tuning.py)."""
    from ndcg_platform.process_tuning import tune_long_lived_process

    tune_long_lived_process()
