"""TREC qrels (`qid iter docno grade`): the streaming reader and the writers."""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from annotations.formats.trec.errors import TrecFormatError
from annotations.formats.trec.fields import (
    MAX_ID_LENGTH,
    check_id,
    column_count,
    parse_grade,
    require_id,
    require_int,
)
from annotations.formats.trec.lines import Source, TextSink, data_lines, display_name, nonempty


@dataclass(frozen=True, slots=True)
class QrelLine:
    qid: str
    iteration: str
    docno: str
    grade: int
    line: int


def read_qrels(
    source: Source, *, name: str | None = None, grades: Collection[int] | None = None
) -> Iterator[QrelLine]:
    """Yield the judgements of a qrels file: ``qid iter docno grade``, whitespace-separated.

    Exactly four columns. ``iter`` is kept verbatim and otherwise ignored, as by trec_eval.
    ``grade`` is a base-10 integer (negative allowed unless ``grades`` excludes it); when
    ``grades`` is given every grade must be one of them. A second judgement of the same
    (qid, docno) is an error naming the first, rather than letting one silently win.
    Lines starting with ``#`` are data, as for trec_eval, so they fail the column checks.
    Memory: about 16 bytes a judgement (`_SeenPairs`), never the line text.
    """
    path = display_name(source, name)
    return nonempty(_qrels(source, path, None if grades is None else frozenset(grades)), path)


class _SeenPairs:
    """The (qid, docno) pairs a qrels file judged so far, and on which line, compactly.

    Qrels files come grouped by qid. Within the current run of lines of one qid the docnos
    are held as they are (exact); once the file moves on, a qid keeps only its docnos'
    64-bit string hashes and line numbers, 16 bytes a line instead of about 300 for a
    (qid, docno) -> line dict entry (3.1 million lines: about 50 MB instead of 930). A qid
    that comes back after another is checked against those hashes: two different docnos of
    one such qid with the same 64-bit hash (odds about n^2 / 2^65 for n docnos) would be
    reported as judged twice. Such a qid's hashes are then held as a dict (about 100 bytes
    a line), so a file interleaving its qids costs about a third of the plain dict.
    """

    def __init__(self) -> None:
        self._qid: str | None = None
        self._group: dict[str, int] = {}  # docno -> line, the current run of the current qid
        self._hashes: dict[str, array[int]] = {}  # qid -> hash(docno) of its earlier runs
        self._lines: dict[str, array[int]] = {}  # qid -> their lines
        self._again: dict[str, dict[int, int]] = {}  # a qid seen after another: hash -> line

    def first(self, qid: str, docno: str, number: int) -> int:
        """The line that judged (qid, docno) first: `number`, unless an earlier line did."""
        if qid != self._qid:
            self._qid = qid
            self._group = {}
            if qid in self._hashes and qid not in self._again:
                hashes, lines = self._hashes.pop(qid), self._lines.pop(qid)
                self._again[qid] = dict(zip(hashes, lines, strict=True))
        first = self._group.setdefault(docno, number)
        if first != number:
            return first
        again = self._again.get(qid)
        if again is not None:
            return again.setdefault(hash(docno), number)
        if qid not in self._hashes:
            self._hashes[qid], self._lines[qid] = array("q"), array("q")
        self._hashes[qid].append(hash(docno))
        self._lines[qid].append(number)
        return number


def _qrels(source: Source, path: str, allowed: frozenset[int] | None) -> Iterator[QrelLine]:
    seen = _SeenPairs()
    for number, text in data_lines(source, path):
        columns = text.split()
        if columns[0].startswith("#"):
            continue  # a comment line, as trec_eval skips it
        if len(columns) != 4:
            raise column_count(path, number, "qid iter docno grade", len(columns))
        qid, iteration, docno, grade_text = columns
        # split() leaves no whitespace and no empty piece: only the length can be wrong.
        if len(qid) > MAX_ID_LENGTH:
            check_id(qid, "qid", path, number)
        if len(docno) > MAX_ID_LENGTH:
            check_id(docno, "docno", path, number)
        grade = parse_grade(grade_text, path, number)
        if allowed is not None and grade not in allowed:
            levels = ", ".join(str(level) for level in sorted(allowed))
            problem = f"{grade} is not one of the allowed levels {levels}"
            raise TrecFormatError(path, number, "grade", problem)
        first = seen.first(qid, docno, number)
        if first != number:
            problem = f"{docno!r} is judged twice for qid {qid!r}, first on line {first}"
            raise TrecFormatError(path, number, "docno", problem)
        yield QrelLine(qid, iteration, docno, grade, number)


def qrels_text(lines: Iterable[tuple[str, str, int]], *, chunk: int = 4096) -> Iterator[str]:
    """``(qid, docno, grade)`` rows as ``qid 0 docno grade`` lines, ``chunk`` lines per piece
    (what a streamed download sends); ids and grades are checked as ``write_qrels`` does."""
    buffer: list[str] = []
    for count, (qid, docno, grade) in enumerate(lines, start=1):
        require_id(qid, "qid", count)
        require_id(docno, "docno", count)
        buffer.append(f"{qid} 0 {docno} {require_int(grade, 'grade', count)}\n")
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
