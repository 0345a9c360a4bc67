"""Without a broker, the significance passes run on a thread of the web process, never in
the request that finds them due: a pass costs seconds at 500 runs, and a read answers in
milliseconds with the letters of the last pass, marked as being recomputed.

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
_asked: set[tuple[int, int]] = set()  # (collection, k) handed to the thread, not yet run
_futures: list[Future[None]] = []


def significance_thread_on() -> bool:
    return bool(getattr(settings, "NDCG_SIGNIFICANCE_THREAD", True))


def significance_pass_start(*, collection_id: int, k: int, run: Callable[[int, int], None]) -> bool:
    """Hand the significance pass of (collection, k), ``run(collection_id, k)``, to this
    process's thread, unless it holds that pass already; True if handed over now."""
    global _executor
    with _lock:
        if (collection_id, k) in _asked:
            return False
        _asked.add((collection_id, k))
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="significance", initializer=_lower_priority
            )
        future = _executor.submit(_run, run, collection_id, k)
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


def _run(run: Callable[[int, int], None], collection_id: int, k: int) -> None:
    try:
        run(collection_id, k)
    except Exception:  # the next read hands it over again
        logger.exception("significance pass of collection %s at k=%s failed", collection_id, k)
    finally:
        connection.close()  # this thread's own connection
        with _lock:  # until now a read hands nothing more over: the pass is in hand
            _asked.discard((collection_id, k))
