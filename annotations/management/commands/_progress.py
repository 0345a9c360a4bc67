"""Progress bars for long commands on a terminal (rich), quiet in pipes and with -q."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, Protocol, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class Tracker(Protocol):
    """Report work done: `update(task, completed, total)` for a named task."""

    def update(self, task: str, completed: int, total: int | None = None) -> None: ...


class _Quiet:
    def update(self, task: str, completed: int, total: int | None = None) -> None:
        return None


class _Bars:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, Any] = {}

    def update(self, task: str, completed: int, total: int | None = None) -> None:
        if task not in self._tasks:
            self._tasks[task] = self._progress.add_task(task, total=total)
        self._progress.update(self._tasks[task], completed=completed, total=total)


def wants_progress(options: dict[str, Any], stream: TextIO | None = None) -> bool:
    """Bars only on a terminal, never with -q/--quiet or at verbosity 0."""
    terminal = (stream or sys.stderr).isatty()
    return terminal and not options.get("quiet") and options.get("verbosity", 1) > 0


@contextmanager
def progress_bars(enabled: bool) -> Iterator[Tracker]:
    """Bars on stderr (stdout stays the data), or a tracker that says nothing."""
    if not enabled:
        yield _Quiet()
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
        yield _Bars(progress)


def quiet_option(parser: Any) -> None:
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars (they show on a terminal)"
    )


CHUNK = 1 << 20


def line_count(path: str) -> int | None:
    """The lines of a file on disk (a quick pass over its bytes), None if it cannot be read."""
    try:
        with open(path, "rb") as stream:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(CHUNK), b""))
    except OSError:
        return None


class _CountingReader(io.RawIOBase):
    """Reads `raw`, reporting the lines read so far to `tracker` under `task`."""

    def __init__(self, raw: BinaryIO, tracker: Tracker, task: str, total: int | None):
        super().__init__()
        self.name = getattr(raw, "name", task)
        self._raw, self._tracker, self._task, self._total = raw, tracker, task, total
        self._lines = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        if not data:
            self._tracker.update(self._task, self._lines, self._total or self._lines)
            return 0
        buffer[: len(data)] = data
        self._lines += data.count(b"\n")
        self._tracker.update(self._task, self._lines, self._total)
        return len(data)


@contextmanager
def counted(source: str | BinaryIO, tracker: Tracker, task: str) -> Iterator[str | BinaryIO]:
    """The source as the import services read it, counting its lines into the tracker; a
    path stays a path (and its errors its own) when no bars are shown."""
    if isinstance(tracker, _Quiet):
        yield source
        return
    total = line_count(source) if isinstance(source, str) else None
    try:
        raw = open(source, "rb") if isinstance(source, str) else source  # noqa: SIM115
    except OSError:  # the import names the file and its problem
        yield source
        return
    try:
        yield io.BufferedReader(_CountingReader(raw, tracker, task, total), CHUNK)
    finally:
        if isinstance(source, str):
            raw.close()


class CountingSink:
    """A text sink that reports the lines written through it."""

    def __init__(self, out: Any, tracker: Tracker, task: str, total: int | None) -> None:
        self._out, self._tracker, self._task, self._total = out, tracker, task, total
        self._lines = 0

    def write(self, text: str) -> Any:
        self._lines += text.count("\n")
        if self._lines % 1000 < text.count("\n") or self._lines == self._total:
            self._tracker.update(self._task, self._lines, self._total)
        return self._out.write(text)
