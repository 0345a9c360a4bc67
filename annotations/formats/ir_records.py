"""Standard collections through ir_datasets, as the platform's own import files read them.

A dataset's parts are written, record by record, as the lines of the files the import
services already read (JSONL topics and documents, TREC qrels and runs) and handed over as
byte streams: so an ir_datasets collection is checked by the same parsers, refused with the
same messages (named `DATASET/part`, with the line of the record), and never held in
memory. Field names follow ir_datasets' record types: a query's `title` (or its `text`),
`description` and `narrative`; a document's `title`, its `text` or `body` (else its
`default_text()`), and `url`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import ir_datasets

PARTS = ("queries", "docs", "qrels", "scoreddocs")


class UnknownDataset(ValueError):
    """No dataset of that id in ir_datasets' registry."""


def dataset_load(dataset_id: str) -> Any:
    """The registered dataset (nothing is downloaded until a part is read)."""
    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        raise UnknownDataset(f"{dataset_id!r} is not a dataset ir_datasets knows") from None


def dataset_parts(dataset: Any) -> list[str]:
    """The parts of PARTS the dataset provides, in import order."""
    return [part for part in PARTS if getattr(dataset, f"has_{part}")()]


def _text(record: Any, *names: str) -> str:
    for name in names:
        value = getattr(record, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _json_line(record: dict[str, str]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode()


def topic_lines(queries: Iterable[Any]) -> Iterator[bytes]:
    """JSONL topics (qid, title, description, narrative) of ir_datasets query records."""
    for query in queries:
        yield _json_line(
            {
                "qid": str(query.query_id),
                "title": _text(query, "title", "text"),
                "description": _text(query, "description"),
                "narrative": _text(query, "narrative"),
            }
        )


def document_lines(documents: Iterable[Any]) -> Iterator[bytes]:
    """JSONL documents (docno, title, text, url) of ir_datasets document records."""
    for document in documents:
        text = _text(document, "text", "body")
        if not text and hasattr(document, "default_text"):
            text = str(document.default_text())
        yield _json_line(
            {
                "docno": str(document.doc_id),
                "title": _text(document, "title"),
                "text": text,
                "url": _text(document, "url"),
            }
        )


def qrels_lines(qrels: Iterable[Any]) -> Iterator[bytes]:
    """TREC qrels lines (qid 0 docno grade) of ir_datasets qrel records."""
    for qrel in qrels:
        yield f"{qrel.query_id} 0 {qrel.doc_id} {qrel.relevance}\n".encode()


def run_lines(scored: Iterable[Any], tag: str) -> Iterator[bytes]:
    """TREC run lines of ir_datasets scored documents, ranked per query in the dataset's
    order (the platform ranks by score, as trec_eval does; the rank column is informative)."""
    ranks: dict[str, int] = {}
    for item in scored:
        qid = str(item.query_id)
        ranks[qid] = ranks.get(qid, 0) + 1
        yield f"{qid} Q0 {item.doc_id} {ranks[qid]} {float(item.score)!r} {tag}\n".encode()


@dataclass
class Progress:
    """Records read so far from one part (`lines`), reported through `report` as it grows."""

    part: str
    total: int | None = None
    lines: int = 0
    report: Callable[[Progress], None] | None = None


class LineStream(io.RawIOBase):
    """A readable byte stream over an iterator of lines, counting them into `progress`."""

    def __init__(self, lines: Iterator[bytes], name: str, progress: Progress | None = None):
        super().__init__()
        self.name = name
        self._lines = lines
        self._pending = b""
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._pending:
            line = next(self._lines, None)
            if line is None:
                return 0
            self._pending = line
            if self._progress is not None:
                self._progress.lines += 1
                if self._progress.report is not None and self._progress.lines % 1000 == 0:
                    self._progress.report(self._progress)
        size = min(len(view), len(self._pending))
        view[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def part_stream(
    dataset: Any, dataset_id: str, part: str, *, tag: str = "", progress: Progress | None = None
) -> io.BufferedReader:
    """One part of the dataset as the byte stream of its import file."""
    lines = {
        "queries": lambda: topic_lines(dataset.queries_iter()),
        "docs": lambda: document_lines(dataset.docs_iter()),
        "qrels": lambda: qrels_lines(dataset.qrels_iter()),
        "scoreddocs": lambda: run_lines(dataset.scoreddocs_iter(), tag),
    }[part]()
    return io.BufferedReader(LineStream(lines, f"{dataset_id}/{part}", progress))


def part_count(dataset: Any, part: str) -> int | None:
    """How many records the part holds, when ir_datasets knows without reading it."""
    counter = getattr(dataset, f"{part}_count", None)
    try:
        return int(counter()) if callable(counter) else None
    except Exception:  # a count ir_datasets cannot give without downloading
        return None
