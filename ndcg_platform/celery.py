"""Celery application: every background task runs on its workers, in every configuration."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ndcg_platform.settings")

app = Celery("ndcg_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _tune_worker(**_: object) -> None:
    """Each worker process tunes itself as a long-lived process (process_tuning.py)."""
    from ndcg_platform.process_tuning import tune_long_lived_process

    tune_long_lived_process()


@task_prerun.connect
@task_postrun.connect
def _check_database_connections(task: object = None, **_: object) -> None:
    """Around each task what Django does around each request: a connection past its
    CONN_MAX_AGE or broken by an error is closed, a kept one is health-checked on its next
    use. (Celery's own closing is held off by CELERY_DB_REUSE_MAX.)"""
    if getattr(getattr(task, "request", None), "is_eager", False):
        return
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()
