"""Without a broker, the significance passes run on a thread of the web process, never in
the request that finds them due: a pass costs seconds at 500 runs, and a read answers in
milliseconds with the letters of the last pass, marked as being recomputed. The same thread
reads the inputs a process holds for its next computation of a leaderboard it has served
only as stored (``inputs_warm_start``), so that its first computation reads what moved
instead of everything.

One thread per process (``NDCG_SIGNIFICANCE_THREAD``; off: the read that finds a pass due
runs it, as tests do), one pass at a time across processes (``significance_pass_lock``),
paced as before (``refresh_pacing``). The thread runs at the lowest CPU priority the
kernel gives a thread (nice 19 where the platform allows it), so that on busy cores the
requests go first; NumPy releases the GIL for the bulk of a pass.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
# (kind, collection, k) handed to the thread, not yet run
_asked: set[tuple[str, int, int]] = set()
_futures: list[Future[None]] = []


def significance_thread_on() -> bool:
    return bool(getattr(settings, "NDCG_SIGNIFICANCE_THREAD", True))


def significance_pass_start(*, collection_id: int, k: int, run: Callable[[int, int], None]) -> bool:
    """Hand the significance pass of (collection, k), ``run(collection_id, k)``, to this
    process's thread, unless it holds that pass already; True if handed over now."""
    return _start(("pass", collection_id, k), run)


def inputs_warm_start(*, collection_id: int, k: int, run: Callable[[int, int], None]) -> bool:
    """Hand ``run(collection_id, k)``, which reads the inputs this process holds for the next
    computation of that leaderboard, to the thread (once at a time); True if handed over."""
    return _start(("warm", collection_id, k), run)


def _start(key: tuple[str, int, int], run: Callable[[int, int], None]) -> bool:
    global _executor
    with _lock:
        if key in _asked:
            return False
        _asked.add(key)
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="significance", initializer=_lower_priority
            )
        future = _executor.submit(_run, run, key)
        _futures[:] = [f for f in _futures if not f.done()] + [future]
    return True


def significance_passes_wait(timeout: float = 60.0) -> bool:
    """Wait until the passes handed over have run (tests); False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _lock:
            pending = [f for f in _futures if not f.done()]
        if not pending:
            return True
        time.sleep(0.05)
    return False


def _lower_priority() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or not allowed
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def _run(run: Callable[[int, int], None], key: tuple[str, int, int]) -> None:
    kind, collection_id, k = key
    try:
        run(collection_id, k)
    except Exception:  # the next read hands it over again
        logger.exception("%s of collection %s at k=%s failed", kind, collection_id, k)
    finally:
        connection.close()  # this thread's own connection
        with _lock:  # until now a read hands nothing more over: the pass is in hand
            _asked.discard(key)
