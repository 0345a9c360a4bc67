"""Sets the module constants a test tunes in a worker process (TEST_WORKER_CONSTANTS)."""

import importlib
import json
import os

from django.apps import AppConfig


class WorkerTuning(AppConfig):
    name = "tests"
    label = "tests_worker_tuning"

    def ready(self) -> None:
        tuned = json.loads(os.environ.get("TEST_WORKER_CONSTANTS") or "{}")
        for target, value in tuned.items():
            path, _, name = target.rpartition(".")
            module = importlib.import_module(path)
            if not hasattr(module, name):
                raise AttributeError(f"{path} has no constant {name} to tune")
            setattr(module, name, value)
