"""Streaming, line-numbered readers and writers for TREC qrels, runs, topics and documents."""

from __future__ import annotations

import itertools
import json
import math
import numbers
import operator
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from os import PathLike, fspath
from typing import IO, Protocol, SupportsIndex, TypeVar

__all__ = [
    "MAX_ID_LENGTH",
    "MAX_LINE_BYTES",
    "RANK_RANGE",
    "DocumentRecord",
    "QrelLine",
    "RunLine",
    "Source",
    "Topic",
    "TrecFormatError",
    "display_name",
    "id_problem",
    "read_documents",
    "read_qrels",
    "read_run",
    "read_run_blocks",
    "read_topics",
    "text_problem",
    "write_qrels",
    "write_run",
]

MAX_ID_LENGTH = 200
# A submitted rank is informational (trec_eval ranks by score) and is kept as 32 bits.
RANK_RANGE = (-(2**31), 2**31 - 1)
# One line, terminator included, may not exceed this: a file without newlines must not be
# able to pull an entire upload into memory.
MAX_LINE_BYTES = 16 * 1024 * 1024

Source = str | PathLike[str] | IO[bytes]

_R = TypeVar("_R")
_BOM = b"\xef\xbb\xbf"
# Control bytes no field may hold (PostgreSQL text cannot hold NUL at all); tab, CR and LF
# are the only ones a line may carry.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")
_CONTROL_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_BLOCK_BYTES = 1 << 20  # how much of a file is read and decoded at once
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INTEGRAL_DECIMAL = re.compile(r"[+-]?[0-9]+\.0*")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_SGML_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*)>")
_SGML_PREFIX = {
    "num": re.compile(r"\s*number\s*:", re.IGNORECASE),
    "title": re.compile(r"\s*topic\s*:", re.IGNORECASE),
    "desc": re.compile(r"\s*description\s*:", re.IGNORECASE),
    "narr": re.compile(r"\s*narrative\s*:", re.IGNORECASE),
}
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


class TrecFormatError(ValueError):
    """A file that cannot be read; ``str()`` gives ``path:line: field: problem``."""

    def __init__(self, path: str, line: int | None, field: str | None, problem: str) -> None:
        super().__init__(path, line, field, problem)
        self.path = path
        self.line = line
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = self.problem if self.field is None else f"{self.field}: {self.problem}"
        return f"{where}: {what}"


@dataclass(frozen=True, slots=True)
class QrelLine:
    qid: str
    iteration: str
    docno: str
    grade: int
    line: int


@dataclass(frozen=True, slots=True)
class RunLine:
    qid: str
    docno: str
    rank: int
    score: float
    tag: str
    line: int


@dataclass(frozen=True, slots=True)
class Topic:
    qid: str
    title: str
    description: str
    narrative: str
    line: int


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    docno: str
    title: str
    text: str
    url: str
    line: int


# Readers ---------------------------------------------------------------------------------
#
# Shared conventions: a source is a path (opened "rb" when iteration starts, closed when it
# ends) or an open binary file that stays the caller's to close; errors name `name`, else the
# path, else the file object's `.name`. Lines are decoded one at a time as strict UTF-8, a
# leading BOM is dropped, and blank lines are skipped everywhere. Readers are generators, so
# every error (a missing file included) surfaces when iteration reaches it. A file with no
# records is an error. Identifiers are non-empty, whitespace-free and at most MAX_ID_LENGTH.


def read_qrels(
    source: Source, *, name: str | None = None, grades: Collection[int] | None = None
) -> Iterator[QrelLine]:
    """Yield the judgements of a qrels file: ``qid iter docno grade``, whitespace-separated.

    Exactly four columns. ``iter`` is kept verbatim and otherwise ignored, as by trec_eval.
    ``grade`` is a base-10 integer (negative allowed unless ``grades`` excludes it); when
    ``grades`` is given every grade must be one of them. A second judgement of the same
    (qid, docno) is an error naming the first, rather than letting one silently win.
    Lines starting with ``#`` are data, as for trec_eval, so they fail the column checks.
    Memory: one (qid, docno) -> line entry per judgement, never the line text.
    """
    path = display_name(source, name)
    return _nonempty(_qrels(source, path, None if grades is None else frozenset(grades)), path)


def read_run(source: Source, *, name: str | None = None) -> Iterator[RunLine]:
    """Yield the lines of a run file: ``qid Q0 docno rank score tag``, whitespace-separated.

    Exactly six columns; the ``Q0`` column is ignored, as by trec_eval. ``rank`` is an
    integer (kept as written: trec_eval ranks by score). ``score`` is a finite decimal float;
    nan, inf and values that overflow a double are errors. One file holds one run, so every
    line must carry the tag of the first. A docno may appear once per qid. Lines need not be
    grouped by qid, so the duplicate check keeps, for the whole file, one docno -> line
    entry per line read (ids only, never the line text). ``#`` lines are data, as for qrels.
    """
    path = display_name(source, name)
    return _nonempty((RunLine(*row) for rows in _run(source, path) for row in rows), path)


def read_run_blocks(source: Source, *, name: str | None = None) -> Iterator[list[RunRow]]:
    """`read_run` as lists of plain tuples (qid, docno, rank, score, tag, line), one list
    per block of lines: the same checks and errors, for imports of hundreds of thousands
    of lines."""
    path = display_name(source, name)
    return _nonempty(_run(source, path), path)


def read_topics(source: Source, *, name: str | None = None) -> Iterator[Topic]:
    """Yield the topics of a JSONL, TSV or TREC SGML file, detected from its first data line.

    A first line starting with ``{`` means JSONL, one object per line: "qid" (non-empty
    string or integer) is required; "title", "description", "narrative" are optional strings
    (null counts as absent); other keys are ignored. ``<`` means SGML: ``<top>`` blocks with
    ``<num>``, ``<title>``, ``<desc>``, ``<narr>`` whose text may span lines, their
    "Number:", "Topic:", "Description:", "Narrative:" prefixes dropped and whitespace runs
    collapsed; other tags (``<dom>``, ``<con>``, ...) are ignored and closing tags optional.
    The qid is the ``<num>`` text verbatim (leading zeros kept, as qrels must match it).
    Anything else is TSV, ``qid<TAB>title`` with exactly two columns and no header; only here
    are lines starting with ``#`` comments. Absent texts are "", present ones are stripped.
    A topic's line is that of its JSON/TSV line or of its ``<top>``. Duplicate qids are
    errors; memory is one qid -> line entry per topic.
    """
    path = display_name(source, name)
    topics = _unique(_topics(source, path), path, "qid", lambda topic: (topic.qid, topic.line))
    return _nonempty(topics, path)


def read_documents(source: Source, *, name: str | None = None) -> Iterator[DocumentRecord]:
    """Yield the documents of a JSONL or TSV file, detected from its first data line.

    JSONL (first line starts with ``{``): "docno" (non-empty string or integer) is required;
    "title", "text", "url" are optional strings (null counts as absent); other keys are
    ignored. TSV, no header, ``#`` lines are data: either ``docno<TAB>text`` (2 columns) or
    ``docno<TAB>title<TAB>text`` (3 columns), decided by the first line and then required of
    every line. Absent fields are "", present ones are stripped. Duplicate docnos are errors;
    memory is one docno -> line entry per document (ids only, never the text).
    """
    path = display_name(source, name)
    documents = _unique(
        _documents(source, path), path, "docno", lambda document: (document.docno, document.line)
    )
    return _nonempty(documents, path)


# Writers ---------------------------------------------------------------------------------
#
# Writers check each row only for what would make the line unreadable (empty or spaced ids,
# non-integer grade or rank, non-finite score) and raise ValueError naming the 1-based row.
# File-level rules (duplicates, one tag per run) are the reader's to enforce.


class TextSink(Protocol):
    """Anything with a text `write` (an open file, sys.stdout, a command's OutputWrapper)."""

    def write(self, text: str, /) -> object: ...


def qrels_text(lines: Iterable[tuple[str, str, int]], *, chunk: int = 4096) -> Iterator[str]:
    """``(qid, docno, grade)`` rows as ``qid 0 docno grade`` lines, ``chunk`` lines per piece
    (what a streamed download sends); ids and grades are checked as ``write_qrels`` does."""
    buffer: list[str] = []
    for count, (qid, docno, grade) in enumerate(lines, start=1):
        _require_id(qid, "qid", count)
        _require_id(docno, "docno", count)
        buffer.append(f"{qid} 0 {docno} {_require_int(grade, 'grade', count)}\n")
        if len(buffer) >= chunk:
            yield "".join(buffer)
            buffer.clear()
    if buffer:
        yield "".join(buffer)


def write_qrels(lines: Iterable[tuple[str, str, int]], out: TextSink) -> int:
    """Write ``(qid, docno, grade)`` rows as ``qid 0 docno grade`` lines; return the count."""
    count = 0
    for piece in qrels_text(lines):
        out.write(piece)
        count += piece.count("\n")
    return count


def write_run(rows: Iterable[tuple[str, str, int, float, str]], out: TextSink) -> int:
    """Write ``(qid, docno, rank, score, tag)`` rows as ``qid Q0 docno rank score tag``.

    The score is required and must be finite: there is no honest stand-in for a missing one.
    It is written as ``repr(float(score))``, the shortest text that parses back to the same
    double, so export -> import preserves every bit (-0.0 included). Returns the count.
    """
    count = 0
    for count, (qid, docno, rank, score, tag) in enumerate(rows, start=1):
        _require_id(qid, "qid", count)
        _require_id(docno, "docno", count)
        _require_id(tag, "tag", count)
        rank = _require_int(rank, "rank", count)
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise ValueError(f"row {count}: score: {score!r} is not a number")
        value = float(score)
        if not math.isfinite(value):
            raise ValueError(f"row {count}: score: {score!r} is not a finite number")
        out.write(f"{qid} Q0 {docno} {rank} {value!r} {tag}\n")
    return count


# Line source -----------------------------------------------------------------------------


def display_name(source: Source, name: str | None) -> str:
    if name is not None:
        return name
    if isinstance(source, str | PathLike):
        return fspath(source)
    return str(getattr(source, "name", None) or "<stream>")


def _lines(source: Source, path: str) -> Iterator[tuple[int, str]]:
    """Yield (line number, text without terminator) for every line, blank ones included."""
    for first, texts in _batches(source, path):
        yield from enumerate(texts, start=first)


def _batches(source: Source, path: str) -> Iterator[tuple[int, list[str]]]:
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


def _data_lines(source: Source, path: str) -> Iterator[tuple[int, str]]:
    return ((number, text) for number, text in _lines(source, path) if text.strip())


def _peek(lines: Iterator[tuple[int, str]]) -> tuple[str, Iterator[tuple[int, str]]]:
    """Return the first data line's text (or "") and an iterator that still yields it."""
    first = next(lines, None)
    if first is None:
        return "", lines
    return first[1].lstrip(), itertools.chain([first], lines)


def _nonempty(records: Iterator[_R], path: str) -> Iterator[_R]:
    empty = True
    for record in records:
        empty = False
        yield record
    if empty:
        raise TrecFormatError(path, None, None, "file is empty")


def _unique(
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


# Field checks ----------------------------------------------------------------------------


def id_problem(value: str) -> str | None:
    """Why `value` cannot be an id (qid, docno, run name), or None: ids are 1 to
    MAX_ID_LENGTH characters of printable UTF-8, with no whitespace and no control character
    (what TREC files hold; anything else is refused at the door by every path)."""
    if not value:
        return "must not be empty"
    # split() is the fast whitespace test: a single piece means none inside (imports check
    # hundreds of thousands of ids per file).
    if len(value.split()) != 1 or value.strip() != value:
        return f"{value!r} contains whitespace"
    if len(value) > MAX_ID_LENGTH:
        return f"{value[:20]!r}... is longer than {MAX_ID_LENGTH} characters"
    if _CONTROL_TEXT.search(value) is not None:
        return f"{value!r} holds a control character"
    return None


def text_problem(value: str) -> str | None:
    """Why `value` cannot be a text field (title, text, note), or None: no control character
    but tab, CR and LF."""
    found = _CONTROL_TEXT.search(value)
    if found is None:
        return None
    return f"holds the control character U+{ord(found.group()):04X}"


def _check_id(value: str, field: str, path: str, line: int) -> str:
    problem = id_problem(value)
    if problem is not None:
        raise TrecFormatError(path, line, field, problem)
    return value


def _require_id(value: object, field: str, row: int) -> None:
    problem = id_problem(value) if isinstance(value, str) else f"{value!r} is not a string"
    if problem is not None:
        raise ValueError(f"row {row}: {field}: {problem}")


def _require_int(value: object, field: str, row: int) -> int:
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise ValueError(f"row {row}: {field}: {value!r} is not an integer")
    return operator.index(value)


def _parse_int(text: str, field: str, path: str, line: int) -> int:
    if not _INTEGER.fullmatch(text):
        raise TrecFormatError(path, line, field, f"{text!r} is not an integer")
    return int(text)


def _parse_grade(text: str, path: str, line: int) -> int:
    """A grade: an integer, or an integral decimal such as ``1.0`` (trec_eval reads grades
    with atol, so ``1.0`` is 1); ``1.5`` is refused rather than silently cut to 1."""
    if _INTEGER.fullmatch(text):
        return int(text)
    if _INTEGRAL_DECIMAL.fullmatch(text):
        return int(text.split(".", 1)[0])
    if _DECIMAL.fullmatch(text):
        problem = f"{text!r} is not a whole number (grades are integers)"
        raise TrecFormatError(path, line, "grade", problem)
    raise TrecFormatError(path, line, "grade", f"{text!r} is not an integer")


def _parse_score(text: str, path: str, line: int) -> float:
    if not _DECIMAL.fullmatch(text):
        if _NON_FINITE.fullmatch(text):
            raise TrecFormatError(path, line, "score", f"{text!r} is not a finite number")
        raise TrecFormatError(path, line, "score", f"{text!r} is not a number")
    value = float(text)
    if math.isinf(value):
        raise TrecFormatError(path, line, "score", f"{text!r} is too large for a float")
    return value


def _column_count(path: str, line: int, layout: str, found: int) -> TrecFormatError:
    expected = len(layout.split())
    return TrecFormatError(
        path, line, None, f"expected {expected} columns ({layout}), found {found}"
    )


# Format parsers --------------------------------------------------------------------------


def _qrels(source: Source, path: str, allowed: frozenset[int] | None) -> Iterator[QrelLine]:
    first_seen: dict[tuple[str, str], int] = {}
    for number, text in _data_lines(source, path):
        columns = text.split()
        if columns[0].startswith("#"):
            continue  # a comment line, as trec_eval skips it
        if len(columns) != 4:
            raise _column_count(path, number, "qid iter docno grade", len(columns))
        qid, iteration, docno, grade_text = columns
        # split() leaves no whitespace and no empty piece: only the length can be wrong.
        if len(qid) > MAX_ID_LENGTH:
            _check_id(qid, "qid", path, number)
        if len(docno) > MAX_ID_LENGTH:
            _check_id(docno, "docno", path, number)
        grade = _parse_grade(grade_text, path, number)
        if allowed is not None and grade not in allowed:
            levels = ", ".join(str(level) for level in sorted(allowed))
            problem = f"{grade} is not one of the allowed levels {levels}"
            raise TrecFormatError(path, number, "grade", problem)
        first = first_seen.setdefault((qid, docno), number)
        if first != number:
            problem = f"{docno!r} is judged twice for qid {qid!r}, first on line {first}"
            raise TrecFormatError(path, number, "docno", problem)
        yield QrelLine(qid, iteration, docno, grade, number)


RunRow = tuple[str, str, int, float, str, int]  # qid, docno, rank, score, tag, line


@dataclass
class _RunState:
    """What checking a run file remembers from line to line."""

    tag: tuple[str, int] | None = None  # the first line's tag and that line
    first_seen: dict[str, dict[str, int]] = field(default_factory=dict)  # qid -> docno -> line


def _run(source: Source, path: str) -> Iterator[list[RunRow]]:
    """The rows of a run file, a block of lines at a time (see `read_run`)."""
    state = _RunState()
    for first, texts in _batches(source, path):
        rows: list[RunRow] = []
        try:
            _run_lines(texts, first, state, path, rows)
        except TrecFormatError:
            if rows:
                yield rows  # the lines before the error, as a line-by-line reader would
            raise
        if rows:
            yield rows


def _run_lines(
    texts: list[str], first: int, state: _RunState, path: str, rows: list[RunRow]
) -> None:
    """Check a block of lines, appending their rows to `rows`; raises at the first error.

    The hot loop of every run import (hundreds of thousands of lines per file): the checks
    are inlined, and ids need only a length check because split() already removed
    whitespace and empty pieces. Errors go through the same helpers as elsewhere.
    """
    first_seen = state.first_seen
    is_integer = _INTEGER.fullmatch
    is_decimal = _DECIMAL.fullmatch
    for number, text in enumerate(texts, first):
        columns = text.split()
        if len(columns) != 6:
            if not columns or columns[0].startswith("#"):
                continue  # a blank or comment line, as trec_eval skips them
            if len(columns) < 6:
                raise _column_count(path, number, "qid Q0 docno rank score tag", len(columns))
            # text after the run tag is ignored, as trec_eval ignores it
        elif columns[0].startswith("#"):
            continue
        qid, _q0, docno, rank_text, score_text, tag = columns[:6]
        if len(qid) > MAX_ID_LENGTH:
            _check_id(qid, "qid", path, number)
        if len(docno) > MAX_ID_LENGTH:
            _check_id(docno, "docno", path, number)
        if not is_integer(rank_text):
            _parse_int(rank_text, "rank", path, number)
        rank = int(rank_text)
        if not RANK_RANGE[0] <= rank <= RANK_RANGE[1]:
            problem = f"{rank_text!r} is out of range ({RANK_RANGE[0]} to {RANK_RANGE[1]})"
            raise TrecFormatError(path, number, "rank", problem)
        score = float(score_text) if is_decimal(score_text) else math.nan
        if not math.isfinite(score):
            score = _parse_score(score_text, path, number)  # raises with the right message
        if state.tag is None:
            state.tag = (_check_id(tag, "tag", path, number), number)
        elif tag != state.tag[0]:
            problem = f"{tag!r} differs from {state.tag[0]!r} on line {state.tag[1]}"
            advice = (
                "a file holds one run: split it by its tag column (e.g. awk '{print > $6\".txt\"}'"
                " FILE) and import the files together"
            )
            raise TrecFormatError(path, number, "tag", f"{problem}; {advice}")
        seen = first_seen.get(qid)
        if seen is None:
            seen = first_seen[qid] = {}
        earlier = seen.setdefault(docno, number)
        if earlier != number:
            problem = f"{docno!r} is retrieved twice for qid {qid!r}, first on line {earlier}"
            raise TrecFormatError(path, number, "docno", problem)
        rows.append((qid, docno, rank, score, tag, number))


def _topics(source: Source, path: str) -> Iterator[Topic]:
    start, lines = _peek(_data_lines(source, path))
    if start.startswith("{"):
        for number, text in lines:
            record = _json_object(text, path, number)
            yield Topic(
                qid=_json_id(record, "qid", path, number),
                title=_json_text(record, "title", path, number),
                description=_json_text(record, "description", path, number),
                narrative=_json_text(record, "narrative", path, number),
                line=number,
            )
    elif start.startswith("<"):
        yield from _sgml_topics(lines, path)
    else:
        for number, text in lines:
            if text.startswith("#"):
                continue
            columns = text.split("\t")
            if len(columns) != 2:
                raise _tsv_column_count(path, number, ("qid", "title"), len(columns))
            qid = _check_id(columns[0].strip(), "qid", path, number)
            yield Topic(qid, columns[1].strip(), "", "", number)


def _sgml_topics(lines: Iterator[tuple[int, str]], path: str) -> Iterator[Topic]:
    top: int | None = None  # line of the open <top>
    fields: dict[str, tuple[int, list[str]]] = {}  # tag -> (line of the tag, text pieces)
    current: str | None = None
    for number, text in lines:
        position = 0
        for match in [*_SGML_TAG.finditer(text), None]:
            chunk = text[position : len(text) if match is None else match.start()]
            if current is not None:
                fields[current][1].append(chunk)
            elif chunk.strip():
                where = "outside <top>" if top is None else "outside any field"
                raise TrecFormatError(path, number, None, f"text {where}: {chunk.strip()[:40]!r}")
            if match is None:
                break
            position = match.end()
            closing, tag = match.group(1) == "/", match.group(2).lower()
            if tag == "top" and not closing:
                if top is not None:
                    problem = f"<top> inside the topic opened on line {top} (missing </top>)"
                    raise TrecFormatError(path, number, None, problem)
                top, fields, current = number, {}, None
            elif top is None:
                raise TrecFormatError(path, number, None, f"{match.group(0)} outside <top>")
            elif tag == "top":
                yield _sgml_topic(fields, top, path)
                top, current = None, None
            elif closing:
                current = None
            elif tag in _SGML_PREFIX and tag in fields:
                problem = f"second <{tag}> in the topic opened on line {top}"
                raise TrecFormatError(path, number, tag, problem)
            else:
                fields[tag] = (number, [])
                current = tag
        if current is not None:
            fields[current][1].append("\n")
    if top is not None:
        raise TrecFormatError(path, top, None, "<top> is never closed (missing </top>)")


def _sgml_topic(fields: dict[str, tuple[int, list[str]]], top: int, path: str) -> Topic:
    def text(tag: str) -> str:
        pieces = fields.get(tag, (top, []))[1]
        return " ".join(_SGML_PREFIX[tag].sub("", "".join(pieces), count=1).split())

    if "num" not in fields:
        raise TrecFormatError(path, top, "num", "topic has no <num>")
    qid = _check_id(text("num"), "num", path, fields["num"][0])
    return Topic(qid, text("title"), text("desc"), text("narr"), top)


def _documents(source: Source, path: str) -> Iterator[DocumentRecord]:
    start, lines = _peek(_data_lines(source, path))
    if start.startswith("{"):
        for number, text in lines:
            record = _json_object(text, path, number)
            yield DocumentRecord(
                docno=_json_id(record, "docno", path, number),
                title=_json_text(record, "title", path, number),
                text=_json_text(record, "text", path, number),
                url=_json_text(record, "url", path, number),
                line=number,
            )
        return
    layout: tuple[tuple[str, ...], int] | None = None  # (column names, line that set them)
    for number, text in lines:
        columns = text.split("\t")
        if layout is None:
            if len(columns) not in (2, 3):
                problem = "expected 2 (docno, text) or 3 (docno, title, text) tab-separated"
                found = f"columns, found {len(columns)}"
                raise TrecFormatError(path, number, None, f"{problem} {found}")
            names = ("docno", "text") if len(columns) == 2 else ("docno", "title", "text")
            layout = (names, number)
        elif len(columns) != len(layout[0]):
            raise _tsv_column_count(path, number, layout[0], len(columns), layout[1])
        docno = _check_id(columns[0].strip(), "docno", path, number)
        title = columns[1].strip() if len(columns) == 3 else ""
        yield DocumentRecord(docno, title, columns[-1].strip(), "", number)


def _tsv_column_count(
    path: str, line: int, names: tuple[str, ...], found: int, layout_line: int | None = None
) -> TrecFormatError:
    problem = f"expected {len(names)} tab-separated columns ({', '.join(names)}), found {found}"
    if layout_line is not None:
        problem += f", unlike line {layout_line}"
    return TrecFormatError(path, line, None, problem)


def _json_object(text: str, path: str, line: int) -> dict[str, object]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        problem = f"invalid JSON: {error.msg} (column {error.colno})"
        raise TrecFormatError(path, line, None, problem) from None
    except RecursionError:
        raise TrecFormatError(path, line, None, "invalid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise TrecFormatError(
            path, line, None, f"expected a JSON object, found {_json_type(value)}"
        )
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPES.get(type(value), "a number")


def _json_id(record: dict[str, object], key: str, path: str, line: int) -> str:
    value = record.get(key)
    if value is None:
        raise TrecFormatError(path, line, key, "is required")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        problem = f"must be a string or an integer, found {_json_type(value)}"
        raise TrecFormatError(path, line, key, problem)
    return _check_id(value, key, path, line)


def _json_text(record: dict[str, object], key: str, path: str, line: int) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TrecFormatError(path, line, key, f"must be a string, found {_json_type(value)}")
    problem = text_problem(value)
    if problem is not None:
        raise TrecFormatError(path, line, key, problem)
    return value.strip()
