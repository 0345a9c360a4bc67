"""The development server for `make demo`, with a Celery worker beside it (the background
work of every configuration: recomputations, leaderboards, imports, webhooks, judges), then
the address it really listens on and the demo accounts, after its banner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.management.commands.runserver import Command as RunserverCommand
from django.utils import autoreload

from annotations.management.commands.load_demo import accounts_file

# Calls out (webhooks, judges' runs) wait on the network and an import may take minutes:
# threads, so that a grade's recomputation never waits for them.
WORKER_THREADS = 4


def worker_command() -> list[str]:
    """One worker for every queue the tasks are routed to, with the periodic sweeps (beat)
    inside it; its banner left out, so that the accounts stay in sight."""
    queues = dict.fromkeys(
        ["celery", *(route["queue"] for route in settings.CELERY_TASK_ROUTES.values())]
    )
    schedule = settings.VAR_DIR / "celery" / "beat-schedule"
    schedule.parent.mkdir(parents=True, exist_ok=True)
    return [
        sys.executable, "-m", "celery", "-A", "ndcg_platform", "--quiet", "worker",
        "--beat", f"--schedule={schedule}", "-Q", ",".join(queues),
        "--pool=threads", f"--concurrency={WORKER_THREADS}",
        "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=WARNING",
    ]  # fmt: skip


class Command(RunserverCommand):
    help = (
        "Serve the demo (runserver) with a Celery worker beside it, then print its address "
        "and the demo accounts"
    )

    def run(self, **options: Any) -> None:
        if os.environ.get(autoreload.DJANGO_AUTORELOAD_ENV) == "true":
            super().run(**options)  # the reloader's server process: the worker is its parent's
            return
        # Stopped (SIGTERM, or Ctrl-C in the terminal), the server stops its worker too.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        worker = subprocess.Popen(worker_command())
        try:
            super().run(**options)
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()

    def on_bind(self, server_port: int) -> None:
        super().on_bind(server_port)
        addr = str(getattr(self, "addr", "127.0.0.1"))
        host = "127.0.0.1" if addr in ("0", "0.0.0.0") else addr
        host = f"[{host}]" if getattr(self, "_raw_ipv6", False) else host
        lines = [f"\nThe demo is at {self.protocol}://{host}:{server_port}/"]
        path = accounts_file()
        if path.exists():
            lines += [path.read_text().rstrip(), f"(also in {path})"]
        self.stdout.write("\n".join(lines) + "\n")
