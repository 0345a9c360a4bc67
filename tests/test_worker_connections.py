"""Celery workers keep their database connection across tasks, checked as Django checks it
between requests (CONN_MAX_AGE, errors), instead of opening one per task."""

import time
from types import SimpleNamespace

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection

from ndcg_platform.celery import _check_database_connections, app

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_TASK = SimpleNamespace(request=SimpleNamespace(is_eager=False))


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_backend_pid()" if connection.vendor == "postgresql" else "SELECT 1"
        )
        return int(cursor.fetchone()[0])


def test_celerys_own_closing_is_held_off() -> None:
    _backend_pid()
    kept = connection.connection
    fixup = DjangoWorkerFixup(app)
    for _ in range(50):  # 25 tasks: before and after each
        fixup.close_database()
    assert connection.connection is kept


def test_a_connection_within_its_age_is_kept_and_one_past_it_closed() -> None:
    first = _backend_pid()
    kept = connection.connection
    connection.close_at = time.monotonic() + 60
    _check_database_connections(task=WORKER_TASK)
    assert connection.connection is kept
    assert _backend_pid() == first
    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE
    _check_database_connections(task=WORKER_TASK)
    assert connection.connection is None
    _backend_pid()  # the next task connects again
    assert connection.connection is not None


def test_a_connection_broken_by_an_error_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    _backend_pid()
    connection.close_at = time.monotonic() + 60
    connection.errors_occurred = True  # a task's statement failed ...
    monkeypatch.setattr(connection, "is_usable", lambda: False)  # ... the server went away
    _check_database_connections(task=WORKER_TASK)
    assert connection.connection is None
    monkeypatch.undo()
    assert _backend_pid()


def test_eager_tasks_leave_the_callers_connection_alone() -> None:
    _backend_pid()
    kept = connection.connection
    connection.close_at = time.monotonic() - 1
    _check_database_connections(task=SimpleNamespace(request=SimpleNamespace(is_eager=True)))
    assert connection.connection is kept
