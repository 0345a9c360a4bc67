"""Waiting for another process (a Celery worker, a server) without sleeping a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T], what: str, seconds: float = 60.0, every: float = 0.1
) -> T:
    """Call `condition` every `every` seconds until it returns something true, and return
    that; fail the test naming `what` if `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not within {seconds} s")
        time.sleep(every)
