"""Where every reader's lines come from: sources, block decoding, blank lines, empty files."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from os import PathLike, fspath
from typing import IO, Protocol, TypeVar

from annotations.formats.trec.errors import TrecFormatError

# One line, terminator included, may not exceed this: a file without newlines must not be
# able to pull an entire upload into memory.
MAX_LINE_BYTES = 16 * 1024 * 1024

Source = str | PathLike[str] | IO[bytes]

_R = TypeVar("_R")
_BOM = b"\xef\xbb\xbf"
# Control bytes no field may hold (PostgreSQL text cannot hold NUL at all); tab, CR and LF
# are the only ones a line may carry.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")
_BLOCK_BYTES = 1 << 20  # how much of a file is read and decoded at once

# Shared conventions: a source is a path (opened "rb" when iteration starts, closed when it
# ends) or an open binary file that stays the caller's to close; errors name `name`, else the
# path, else the file object's `.name`. Lines are decoded one at a time as strict UTF-8, a
# leading BOM is dropped, and blank lines are skipped everywhere. Readers are generators, so
# every error (a missing file included) surfaces when iteration reaches it. A file with no
# records is an error. Identifiers are non-empty, whitespace-free and at most MAX_ID_LENGTH.


class TextSink(Protocol):
    """Anything with a text `write` (an open file, sys.stdout, a command's OutputWrapper)."""

    def write(self, text: str, /) -> object: ...


def display_name(source: Source, name: str | None) -> str:
    if name is not None:
        return name
    if isinstance(source, str | PathLike):
        return fspath(source)
    return str(getattr(source, "name", None) or "<stream>")


def numbered_lines(source: Source, path: str) -> Iterator[tuple[int, str]]:
    """Yield (line number, text without terminator) for every line, blank ones included."""
    for first, texts in line_batches(source, path):
        yield from enumerate(texts, start=first)


def line_batches(source: Source, path: str) -> Iterator[tuple[int, list[str]]]:
    """`_lines` a block at a time: (number of the first line, the lines' texts)."""
    if isinstance(source, str | PathLike):
        with open(source, "rb") as stream:
            yield from _decode(stream, path)
    else:
        yield from _decode(source, path)


def _decode(stream: IO[bytes], path: str) -> Iterator[tuple[int, list[str]]]:
    # Read in blocks and decode each block's complete lines at once (imports read hundreds
    # of thousands of lines per file); a block that is not valid UTF-8 is decoded again line
    # by line to name the line and column of the first bad byte.
    number = 0
    pending = b""
    while True:
        block = stream.read(_BLOCK_BYTES)
        if not block:
            break
        if not isinstance(block, bytes):
            raise TypeError(f"{path}: open the file in binary mode ('rb'), not text mode")
        data = pending + block
        cut = data.rfind(b"\n") + 1
        pending = data[cut:]
        if cut:
            yield from _decoded(data[: cut - 1].split(b"\n"), number, path, newline=True)
            number += data.count(b"\n", 0, cut)
        if len(pending) > MAX_LINE_BYTES:
            problem = f"line longer than {MAX_LINE_BYTES} bytes"
            raise TrecFormatError(path, number + 1, None, problem)
    if pending:
        yield from _decoded([pending], number, path, newline=False)


def _decoded(
    raws: list[bytes], before: int, path: str, *, newline: bool
) -> Iterator[tuple[int, list[str]]]:
    """One batch for `_decode`; with a bad line, the lines before it, then its error."""
    try:
        texts = _decode_lines(raws, before, path, newline=newline)
    except _BadLine as bad:
        if bad.texts:
            yield before + 1, bad.texts
        raise bad.error from None
    yield before + 1, texts


class _BadLine(Exception):
    """A line of a batch failed (its error waits until the lines before it are yielded)."""

    def __init__(self, texts: list[str], error: TrecFormatError) -> None:
        super().__init__(str(error))
        self.texts, self.error = texts, error


def _decode_lines(raws: list[bytes], before: int, path: str, *, newline: bool) -> list[str]:
    """Lines `before + 1`, ... as text without terminators (the "\\n" already removed).

    Fast path: the whole batch decoded at once. A line too long or not valid UTF-8 sends
    the batch through the line-by-line path; the lines before it are still returned, and
    the error (naming the first bad line) is raised after them, exactly as when lines are
    read one at a time (see `_decode`'s caller, which yields them first).
    """
    terminator = 1 if newline else 0
    short = max(map(len, raws)) + terminator <= MAX_LINE_BYTES  # the BOM counts
    bom = 0
    if before == 0 and raws[0].startswith(_BOM):
        raws[0] = raws[0][len(_BOM) :]
        bom = len(_BOM)
    if short:
        joined = b"\n".join(raws)
        if _CONTROL.search(joined) is None:
            try:
                texts = joined.decode("utf-8").split("\n")
            except UnicodeDecodeError:
                pass
            else:
                return [text.rstrip("\r\n") for text in texts]
    good: list[str] = []
    for offset, raw in enumerate(raws, start=1):
        if len(raw) + terminator + (bom if offset == 1 else 0) > MAX_LINE_BYTES:
            problem = f"line longer than {MAX_LINE_BYTES} bytes"
            raise _BadLine(good, TrecFormatError(path, before + offset, None, problem))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            column = len(raw[: error.start].decode("utf-8")) + 1
            problem = f"not valid UTF-8 (byte 0x{raw[error.start]:02x} at column {column})"
            raise _BadLine(good, TrecFormatError(path, before + offset, None, problem)) from None
        control = _CONTROL.search(raw)
        if control is not None:
            problem = _control_problem(raw, control.start())
            raise _BadLine(good, TrecFormatError(path, before + offset, None, problem))
        good.append(text.rstrip("\r\n"))
    return good


def _control_problem(raw: bytes, at: int) -> str:
    """Where a control byte sits: its code, its column and its whitespace-separated field."""
    before = raw[:at].decode("utf-8", errors="replace")
    field = len(before.split()) + (0 if before[-1:].isspace() or not before else -1) + 1
    return (
        f"control character U+{raw[at]:04X} at column {len(before) + 1} "
        f"(field {field}); no field may hold control characters"
    )


def data_lines(source: Source, path: str) -> Iterator[tuple[int, str]]:
    return ((number, text) for number, text in numbered_lines(source, path) if text.strip())


def peek(lines: Iterator[tuple[int, str]]) -> tuple[str, Iterator[tuple[int, str]]]:
    """Return the first data line's text (or "") and an iterator that still yields it."""
    first = next(lines, None)
    if first is None:
        return "", lines
    return first[1].lstrip(), itertools.chain([first], lines)


def nonempty(records: Iterator[_R], path: str) -> Iterator[_R]:
    empty = True
    for record in records:
        empty = False
        yield record
    if empty:
        raise TrecFormatError(path, None, None, "file is empty")


def unique(
    records: Iterator[_R], path: str, field: str, key: Callable[[_R], tuple[str, int]]
) -> Iterator[_R]:
    first_seen: dict[str, int] = {}
    for record in records:
        value, line = key(record)
        first = first_seen.get(value)
        if first is not None:
            raise TrecFormatError(path, line, field, f"duplicate {value!r}, first on line {first}")
        first_seen[value] = line
        yield record
