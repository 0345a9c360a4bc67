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

import importlib.util
import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARTS = ("queries", "docs", "qrels", "scoreddocs")
INSTALL = "pip install 'ndcg-platform[ir-datasets]' (make install includes it)"
NOT_INSTALLED = f"ir_datasets is not installed: {INSTALL}"


class UnknownDataset(ValueError):
    """No dataset of that id in ir_datasets' registry."""


class DatasetUnavailable(Exception):
    """ir_datasets is not installed, or a dataset's files are neither on disk nor reachable."""


def installed() -> bool:
    """Whether ir_datasets can be imported, asked without importing it."""
    try:
        return importlib.util.find_spec("ir_datasets") is not None
    except ValueError:  # a module object without a spec stands in for it
        return True


def _ir_datasets() -> Any:
    """ir_datasets, an optional extra: loaded only when a standard collection is imported."""
    try:
        import ir_datasets
    except ImportError:
        raise DatasetUnavailable(NOT_INSTALLED) from None
    return ir_datasets


def dataset_load(dataset_id: str) -> Any:
    """The registered dataset (nothing is downloaded until a part is read)."""
    try:
        return _ir_datasets().load(dataset_id)
    except KeyError:
        raise UnknownDataset(f"{dataset_id!r} is not a dataset ir_datasets knows") from None


def missing_files(dataset_id: str) -> list[tuple[Path, str]]:
    """The files ir_datasets would download for `dataset_id` that are not under
    IR_DATASETS_HOME yet, each with the address it comes from (from ir_datasets' own list of
    downloads: a dataset's files and those its family shares)."""
    irds = _ir_datasets()
    listed = Path(irds.__file__).parent / "etc" / "downloads.json"
    try:
        downloads = json.loads(listed.read_text())
    except (OSError, ValueError):
        return []
    family, _, rest = dataset_id.partition("/")
    home = Path(irds.util.home_path()) / family
    wanted = [
        (home / entry["cache_path"], str(entry.get("url", "")))
        for key, entry in downloads.get(family, {}).items()
        if isinstance(entry, dict)
        and "cache_path" in entry
        and ("/" not in key or f"{rest}/".startswith(key.rsplit("/", 1)[0] + "/"))
    ]
    return [(path, url) for path, url in wanted if not path.exists()]


def unavailable(dataset_id: str, part: str, error: BaseException) -> DatasetUnavailable:
    """What to tell when a part's files could not be read or downloaded: the dataset, the
    files missing and how to place a local copy."""
    missing = missing_files(dataset_id)
    home = _ir_datasets().util.home_path()
    files = "; ".join(f"{path} (from {url})" for path, url in missing[:6])
    more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
    cause = error.args[0] if error.args and isinstance(error.args[0], str) else type(error).__name__
    return DatasetUnavailable(
        f"{dataset_id} ({part}): ir_datasets could not read or download its files ({cause}). "
        + (f"Missing: {files}{more}. " if missing else "")
        + f"Place a copy of them under IR_DATASETS_HOME ({home}), or set IR_DATASETS_HOME to a "
        "folder that holds them, and run the import again"
    )


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
    }[part]

    def read() -> Iterator[bytes]:
        try:
            yield from lines()
        except (OSError, RuntimeError) as error:  # a download that failed, a file missing
            raise unavailable(dataset_id, part, error) from None

    return io.BufferedReader(LineStream(read(), f"{dataset_id}/{part}", progress))


def records_total(dataset: Any, parts: Iterable[str]) -> int | None:
    """How many records the parts hold together, when ir_datasets knows each count."""
    counts = [part_count(dataset, part) for part in parts]
    return None if any(count is None for count in counts) else sum(c or 0 for c in counts)


def part_count(dataset: Any, part: str) -> int | None:
    """How many records the part holds, when ir_datasets knows without reading it."""
    counter = getattr(dataset, f"{part}_count", None)
    try:
        return int(counter()) if callable(counter) else None
    except Exception:  # a count ir_datasets cannot give without downloading
        return None
