"""Background tasks published by name: the layers below `tasks` queue work without
importing it (the tasks module imports them, never the other way).

With Celery's `task_always_eager` (the test settings) a task runs at once, in the process
that queues it, through the same task a worker runs; one asked for later (a countdown or
an ETA: a retry's wait, a paced refresh) is not run, since nothing would wait for it: the
periodic sweeps do that work, and tests call them.
"""

from __future__ import annotations

from typing import Any

from celery import current_app


class TaskByName:
    """A Celery task addressed by its registered name (`annotations/tasks.py`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def apply_async(self, args: tuple[Any, ...], **options: Any) -> Any:
        app = current_app
        if not app.conf.task_always_eager:
            return app.send_task(self.name, args=args, **options)
        if options.get("countdown") or options.get("eta"):
            return None
        if self.name not in app.tasks:
            app.loader.import_default_modules()  # the tasks modules, as a worker loads them
        return app.tasks[self.name].apply_async(args, **options)


RECOMPUTE_QUERY = TaskByName("annotations.tasks.recompute_query")
RECOMPUTE_STALE_QUERIES = TaskByName("annotations.tasks.recompute_stale_queries")
RECOMPUTE_RUN = TaskByName("annotations.tasks.recompute_run")
RESCORE_COLLECTION = TaskByName("annotations.tasks.rescore_collection")
REFRESH_LEADERBOARDS = TaskByName("annotations.tasks.refresh_leaderboards")
REFRESH_SIGNIFICANCE = TaskByName("annotations.tasks.refresh_significance")
IMPORT_JOB_RUN = TaskByName("annotations.tasks.import_job_run")
WEBHOOKS_SEND = TaskByName("annotations.tasks.webhooks_send")
JUDGE_RUN = TaskByName("annotations.tasks.judge_run_execute")
SYSTEM_FETCH = TaskByName("annotations.tasks.system_fetch_run")
