"""Who follows the recomputations running in this thread: an import job shows "scoring 40
of 249 queries" while the scores of what it imported are computed in its own process.

Nothing is counted unless a caller opens `following`; each query scored counts one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Tally:
    """Queries scored and queries to score (read by another thread: plain integers)."""

    done: int = 0
    total: int = 0


_tally: ContextVar[Tally | None] = ContextVar("scores_progress_tally", default=None)


@contextmanager
def following(tally: Tally) -> Iterator[Tally]:
    """Count into `tally` every query scored in this thread (and context) until the end."""
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


def listening() -> bool:
    return _tally.get() is not None


def expect(count: int) -> None:
    """This many more queries are to be scored."""
    tally = _tally.get()
    if tally is not None:
        tally.total += count


def scored(count: int = 1) -> None:
    """Queries were scored (by a rescoring of runs, of a collection, or of one query)."""
    tally = _tally.get()
    if tally is not None:
        tally.done += count
