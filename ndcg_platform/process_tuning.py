"""Tuning for long-lived serving processes: gunicorn workers, Celery workers, benchmarks.

Called by the gunicorn config (post_worker_init), the Celery app (worker_process_init) and
the benchmark scripts once Django is set up; never in tests, commands or migrations, which
are short-lived and gain nothing from it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_long_lived_process() -> None:
    """Freeze what start-up loaded out of the cycle collector's reach, and let glibc keep
    freed memory for reuse.

    What start-up loaded (modules, models, the app registry) lives as long as the process;
    frozen, it no longer makes each full collection walk the whole framework, a pause that
    lands at random in the middle of a judgement's recomputation. A recomputation works on
    numpy arrays of a few megabytes; by default glibc maps each such array afresh and
    unmaps it when freed, so every recomputation pays page faults for memory it just gave
    back. With these thresholds a process keeps up to 256 MB of freed memory for reuse.
    Nothing happens to memory on another C library.

    Arrow (loaded by the first run file read into columns) allocates through the C library
    too. Its own allocator keeps what a read frees for Arrow alone, and a parse frees about
    as much as it keeps: a 92 MB file of 8 runs left 350 MB that numpy could not reuse for
    the arrays made from it; shared, and returned at the end of the read, 80 MB.
    """
    gc.collect()
    gc.freeze()
    _keep_freed_memory()
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # read when Arrow loads


def _keep_freed_memory() -> None:
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 64 << 20)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)
