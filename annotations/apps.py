"""App configuration for the judging and scoring app."""

import ctypes
import ctypes.util
import gc

from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Judging and scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotations import signals  # noqa: F401  (connects the scoring triggers)

        # What start-up loaded (modules, models, the app registry) lives as long as the
        # process. Moved out of the cycle collector's reach, it no longer makes each full
        # collection walk the whole framework: a 30-40 ms pause, at random, in the middle of
        # a judgement's recomputation (the score latency's outliers on the benchmark).
        gc.collect()
        gc.freeze()
        _keep_freed_memory()


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _keep_freed_memory() -> None:
    """Let glibc reuse freed memory instead of returning it to the system at once.

    A judgement's recomputation works on numpy arrays of a few megabytes (every run and
    cutoff of a query); by default glibc maps each such array afresh and unmaps it when
    freed, so every recomputation pays page faults for memory it just gave back (about a
    fifth of its time at 110 runs x 100 cutoffs). With these thresholds a process keeps up
    to 256 MB of freed memory for reuse. Nothing happens on another C library.
    """
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
