"""Run files read for an import: whole into columns when plain, else through the line reader."""

from __future__ import annotations

import gc
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from annotations.bulk import bulk_insert
from annotations.formats import trec
from annotations.models import Collection, Ranking, Run
from annotations.services.imports import Source, documents_ensure_column, queries_ensure
from annotations.services.run_storage import (
    RANKING_COLUMNS,
    RunCheck,
    column_ranking_rows,
    rankings_store,
    run_prepared,
)

if TYPE_CHECKING:  # Arrow loads with the first run file read into columns, not with Django
    import pyarrow as pa

    from annotations.formats.run_arrow import RunColumns


@dataclass(frozen=True, slots=True)
class RunImported:
    """One run an import stored, and what it ignored: ranks that are not 32-bit integers."""

    run: Run
    results: int
    file: str
    ignored_ranks: int = 0
    first_ignored_rank_line: int | None = None

    def __str__(self) -> str:
        """The import summary the command prints and the API returns."""
        text = f"run: {self.run.name}, {self.results} results"
        if self.ignored_ranks:
            lines = "line" if self.ignored_ranks == 1 else "lines"
            text += (
                f"; rank ignored on {self.ignored_ranks} {lines} (not a 32-bit integer; "
                f"results are ordered by score), first {self.file}:{self.first_ignored_rank_line}"
            )
        return text


@dataclass(frozen=True, slots=True)
class FileRead:
    """A run file as far as it can be read before it is stored."""

    # The whole file, when it could be read whole but not into columns (for the line reader)
    data: bytes | None
    runs: list[RunColumns] | None  # when the file is plain: its run, or one per tag
    # Where each run's docnos stood among the first `known` docnos the import had met when
    # the file was read; -1: not among them.
    positions: list[npt.NDArray[np.int64]] | None = None
    known: int = 0


@dataclass
class _TagRead:
    """One tag's results from the line reader, and the ranks it ignored."""

    results: dict[str, list[tuple[str, float | None, int | None]]] = field(default_factory=dict)
    ignored: int = 0
    first_ignored: int | None = None


class RunFiles:
    """The run files of one import, stored inside its transaction.

    Keeps the docno -> document id pairs the import has met, so a docno retrieved by many
    runs is looked up once (a TREC track's runs share most of their documents).
    """

    def __init__(
        self,
        *,
        collection: Collection,
        owner: User | None,
        description: str,
        replace: bool,
        may_replace: RunCheck | None = None,
        split_tags: bool = False,
    ) -> None:
        self.may_replace, self.split_tags = may_replace, split_tags
        self.collection = collection
        self.owner, self.description, self.replace = owner, description, replace
        self.files: dict[str, str] = {}  # run name -> the file that named it
        self.runs: list[int] = []
        self.docnos: pa.StringArray | None = None
        self.ids: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)

    def read(self, source: Source) -> FileRead:
        """Read a file (the import's reader thread may do this while a file is stored)."""
        from annotations.formats import run_arrow

        data = _whole_file(source)
        if data is None:
            return FileRead(None, None)
        if self.split_tags:
            runs = run_arrow.read_run_tag_columns(data)
        else:
            run = run_arrow.read_run_columns(data)
            runs = None if run is None else [run]
        if runs is None:
            return FileRead(data, None)
        del data  # not held while the file's runs are stored
        met = self.docnos  # the docnos met so far; later ones only ever extend it
        if met is None:
            return FileRead(None, runs)
        return FileRead(None, runs, [_positions(run.docnos, met) for run in runs], len(met))

    def add(
        self,
        source: Source,
        name: str | None,
        run_name: str | None,
        read: FileRead,
    ) -> list[RunImported]:
        """Store a file's run (with `split_tags`, one run per tag, in the file's order)."""
        name = trec.display_name(source, name)
        if read.runs is None:
            lines = source if read.data is None else io.BytesIO(read.data)
            imported = []
            for tag, tag_read in _results_read(lines, name, self.split_tags).items():
                run = self._run(run_name or tag, name)
                count = rankings_store(self.collection, run, tag_read.results)
                self.runs.append(run.id)
                imported.append(
                    RunImported(run, count, name, tag_read.ignored, tag_read.first_ignored)
                )
            return imported
        imported = []
        runs, positions = read.runs, read.positions
        while runs:  # each run's columns let go once stored
            columns = runs.pop(0)
            run = self._run(run_name or columns.tag, name)
            query_ids = queries_ensure(collection=self.collection, qids=columns.qids)
            doc_ids = self._ids(columns.docnos, positions.pop(0) if positions else None, read.known)
            rows = column_ranking_rows(run.id, columns, query_ids, doc_ids)
            bulk_insert(Ranking, RANKING_COLUMNS, rows, binary=True)
            self.runs.append(run.id)
            imported.append(RunImported(run, len(columns), name))
        return imported

    def _run(self, run_name: str, name: str) -> Run:
        earlier = self.files.get(run_name)
        self.files[run_name] = name
        if earlier is not None:
            raise ValidationError(
                {"name": f"{name} and {earlier} both hold run {run_name!r}; import one of them"}
            )
        return run_prepared(
            self.collection,
            run_name,
            self.owner,
            self.description,
            self.replace,
            self.may_replace,
        )

    def _ids(
        self, docnos: pa.StringArray, positions: npt.NDArray[np.int64] | None, known: int
    ) -> npt.NDArray[np.int64]:
        """Document ids of distinct docnos, asking the database only for those not met yet.

        `positions` place them among the first `known` docnos met (see `read`); the docnos
        met since then are searched here.
        """
        import pyarrow as pa

        if positions is None:
            positions = np.full(len(docnos), -1, dtype=np.int64)
        missing = positions < 0
        if missing.any() and self.docnos is not None and len(self.docnos) > known:
            later = _positions(docnos.filter(pa.array(missing)), self.docnos.slice(known))
            at = np.flatnonzero(missing)[later >= 0]
            positions[at] = later[later >= 0] + known
            missing = positions < 0
        ids = np.empty(len(docnos), dtype=np.int64)
        ids[~missing] = self.ids[positions[~missing]]
        if missing.any():
            unseen = docnos.filter(pa.array(missing))
            ids[missing] = unseen_ids = documents_ensure_column(
                collection=self.collection, docnos=unseen
            )
            met = unseen if self.docnos is None else pa.concat_arrays([self.docnos, unseen])
            self.ids = np.concatenate([self.ids, unseen_ids])
            self.docnos = met  # published last: `read` in the other thread may look at it
        return ids


def _positions(values: pa.StringArray, among: pa.StringArray) -> npt.NDArray[np.int64]:
    """Index of each value in `among` (distinct values), -1 where absent."""
    import pyarrow.compute as pc

    found = pc.index_in(values, value_set=among)
    return np.array(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _results_read(source: Source, name: str, split_tags: bool) -> dict[str, _TagRead]:
    """A run file through the line reader: {tag: its results and ignored ranks}, tags in the
    order they first appear (one tag unless `split_tags`)."""
    by_tag: dict[str, _TagRead] = {}
    last_tag: str | None = None
    current = _TagRead()
    with _cyclic_gc_paused():
        for rows in trec.read_run_blocks(source, name=name, split_tags=split_tags):
            for qid, docno, rank, score, tag, line in rows:
                if tag != last_tag:
                    last_tag = tag
                    current = by_tag.setdefault(tag, _TagRead())
                docs = current.results.get(qid)
                if docs is None:
                    docs = current.results[qid] = []
                docs.append((docno, score, rank))
                if rank is None:
                    current.ignored += 1
                    if current.first_ignored is None:
                        current.first_ignored = line
    return by_tag


def _whole_file(source: Source) -> bytes | None:
    """The file's bytes when it can be read whole (a path, or a seekable binary stream of
    at most `run_arrow.MAX_BYTES` from its position on); else None, nothing read."""
    from annotations.formats import run_arrow

    if isinstance(source, str | os.PathLike):
        if os.stat(source).st_size > run_arrow.MAX_BYTES:
            return None
        with open(source, "rb") as stream:
            return stream.read()
    if not source.seekable():
        return None
    start = source.tell()
    size = source.seek(0, io.SEEK_END) - start
    source.seek(start)
    if size > run_arrow.MAX_BYTES:
        return None
    data = source.read()
    if not isinstance(data, bytes):  # a text-mode file: the line reader says what is wrong
        source.seek(start)
        return None
    return data


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a run file becomes a few hundred thousand tuples.

    The collector runs after every few hundred new objects and each full pass walks every
    live one, so building many long-lived objects costs it time that grows with their
    number; these tuples form no cycles, and it catches up when resumed.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
