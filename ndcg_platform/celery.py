"""Celery application: every background task runs on its workers, in every configuration."""

import os
from contextlib import suppress

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_process_init
from celery.utils.threads import bound_open_broker_sockets
from celery.worker.consumer import consumer

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


class Consumer(consumer.Consumer):
    """Celery's consumer, which lets go of a lost broker connection without dying with it
    (CELERY_WORKER_CONSUMER)."""

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        # Celery 5.7 collects the lost connection, then closes it. Collecting detaches the
        # transport (its client becomes None) but keeps the default channel; when that
        # channel's close stopped half-way (its pending BRPOP read failed on the dead socket),
        # the second close restores the channel's unacknowledged tasks through the detached
        # transport and raises AttributeError ('NoneType' object has no attribute 'hostname',
        # kombu/transport/redis.py, _connparams), which the worker takes for unrecoverable: a
        # busy worker exited on a broker restart. Collected here first, and the channel
        # forgotten, Celery's own cleanup finds nothing left to close; the reconnection follows.
        # The close came with celery/celery#10242; drop this once Celery closes only once.
        connection = self.connection
        if connection is not None:
            bound_open_broker_sockets(connection, consumer.COLLECT_SOCKET_TIMEOUT)
            with suppress(Exception):  # as Celery's: the connection is broken anyway
                connection.collect(socket_timeout=consumer.COLLECT_SOCKET_TIMEOUT)
            connection._default_channel = None
        super().on_connection_error_after_connected(exc)
