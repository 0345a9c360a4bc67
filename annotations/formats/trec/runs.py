"""TREC runs (`qid Q0 docno rank score tag`): the streaming reader and the writer."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from annotations.formats.trec.errors import TrecFormatError
from annotations.formats.trec.fields import (
    DECIMAL,
    INTEGER,
    MAX_ID_LENGTH,
    RANK_RANGE,
    check_id,
    column_count,
    parse_score,
    require_id,
    require_int,
)
from annotations.formats.trec.lines import Source, TextSink, display_name, line_batches, nonempty


@dataclass(frozen=True, slots=True)
class RunLine:
    qid: str
    docno: str
    rank: int | None  # None: the line's rank is not a 32-bit integer, and is ignored
    score: float
    tag: str
    line: int


SPLIT_ADVICE = (
    "a file holds one run: import it with --split-tags (API: split_tags=true; import page: "
    "'One run per tag') for one run per tag, or split it by its tag column and import the "
    "files together"
)


def read_run(
    source: Source, *, name: str | None = None, split_tags: bool = False
) -> Iterator[RunLine]:
    """Yield the lines of a run file: ``qid Q0 docno rank score tag``, whitespace-separated.

    Six columns; the ``Q0`` column is ignored, and so is any text after the tag, as by
    trec_eval. The rank is informational (trec_eval ranks by score): kept when it is a
    32-bit integer, else None (the caller says so). ``score`` is a finite decimal float;
    nan, inf and values that overflow a double are errors. One file holds one run, so every
    line must carry the tag of the first, unless `split_tags` (one run per tag). A docno may
    appear once per qid (per tag and qid with `split_tags`). Lines need not be grouped by
    qid, so the duplicate check keeps, for the whole file, one docno -> line entry per line
    read (ids only, never the line text). Lines whose first column starts with ``#`` are
    comments, as for trec_eval.
    """
    path = display_name(source, name)
    rows = (RunLine(*row) for rows in _run(source, path, split_tags) for row in rows)
    return nonempty(rows, path)


def read_run_blocks(
    source: Source, *, name: str | None = None, split_tags: bool = False
) -> Iterator[list[RunRow]]:
    """`read_run` as lists of plain tuples (qid, docno, rank, score, tag, line), one list
    per block of lines: the same checks and errors, for imports of hundreds of thousands
    of lines."""
    path = display_name(source, name)
    return nonempty(_run(source, path, split_tags), path)


RunRow = tuple[str, str, int | None, float, str, int]  # qid, docno, rank, score, tag, line


@dataclass
class _RunState:
    """What checking a run file remembers from line to line."""

    split_tags: bool
    tag: tuple[str, int] | None = None  # the first line's tag and that line
    tags: set[str] = field(default_factory=set)  # with split_tags: the tags checked so far
    # qid (with split_tags: tag and qid) -> docno -> line
    first_seen: dict[str | tuple[str, str], dict[str, int]] = field(default_factory=dict)


def _run(source: Source, path: str, split_tags: bool) -> Iterator[list[RunRow]]:
    """The rows of a run file, a block of lines at a time (see `read_run`)."""
    state = _RunState(split_tags)
    for first, texts in line_batches(source, path):
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
    split_tags = state.split_tags
    is_integer = INTEGER.fullmatch
    is_decimal = DECIMAL.fullmatch
    low, high = RANK_RANGE
    for number, text in enumerate(texts, first):
        columns = text.split()
        if len(columns) != 6:
            if not columns or columns[0].startswith("#"):
                continue  # a blank or comment line, as trec_eval skips them
            if len(columns) < 6:
                raise column_count(path, number, "qid Q0 docno rank score tag", len(columns))
            # text after the run tag is ignored, as trec_eval ignores it
        elif columns[0].startswith("#"):
            continue
        qid, _q0, docno, rank_text, score_text, tag = columns[:6]
        if len(qid) > MAX_ID_LENGTH:
            check_id(qid, "qid", path, number)
        if len(docno) > MAX_ID_LENGTH:
            check_id(docno, "docno", path, number)
        rank: int | None = None
        if is_integer(rank_text):
            rank = int(rank_text)
            if not low <= rank <= high:
                rank = None  # informational, and beyond what is kept: ignored like text
        score = float(score_text) if is_decimal(score_text) else math.nan
        if not math.isfinite(score):
            score = parse_score(score_text, path, number)  # raises with the right message
        key: str | tuple[str, str] = qid
        if split_tags:
            if tag not in state.tags:
                state.tags.add(check_id(tag, "tag", path, number))
            key = (tag, qid)
        elif state.tag is None:
            state.tag = (check_id(tag, "tag", path, number), number)
        elif tag != state.tag[0]:
            problem = f"{tag!r} differs from {state.tag[0]!r} on line {state.tag[1]}"
            raise TrecFormatError(path, number, "tag", f"{problem}; {SPLIT_ADVICE}")
        seen = first_seen.get(key)
        if seen is None:
            seen = first_seen[key] = {}
        earlier = seen.setdefault(docno, number)
        if earlier != number:
            problem = f"{docno!r} is retrieved twice for qid {qid!r}, first on line {earlier}"
            if split_tags:
                problem = f"{problem} (tag {tag!r})"
            raise TrecFormatError(path, number, "docno", problem)
        rows.append((qid, docno, rank, score, tag, number))


def write_run(rows: Iterable[tuple[str, str, int, float, str]], out: TextSink) -> int:
    """Write ``(qid, docno, rank, score, tag)`` rows as ``qid Q0 docno rank score tag``.

    The score is required and must be finite: there is no honest stand-in for a missing one.
    It is written as ``repr(float(score))``, the shortest text that parses back to the same
    double, so export -> import preserves every bit (-0.0 included). Returns the count.
    """
    count = 0
    for count, (qid, docno, rank, score, tag) in enumerate(rows, start=1):
        require_id(qid, "qid", count)
        require_id(docno, "docno", count)
        require_id(tag, "tag", count)
        rank = require_int(rank, "rank", count)
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise ValueError(f"row {count}: score: {score!r} is not a number")
        value = float(score)
        if not math.isfinite(value):
            raise ValueError(f"row {count}: score: {score!r} is not a finite number")
        out.write(f"{qid} Q0 {docno} {rank} {value!r} {tag}\n")
    return count
