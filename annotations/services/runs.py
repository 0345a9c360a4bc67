"""Run imports, replacement and deletion."""

from __future__ import annotations

import gc
import io
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from annotations import packing, scoring, selectors, trec
from annotations.bulk import bulk_insert
from annotations.models import (
    Collection,
    Ranking,
    Run,
)
from annotations.scores import scores_schedule
from annotations.services.imports import (
    Source,
    documents_ensure,
    documents_ensure_column,
    queries_ensure,
)

if TYPE_CHECKING:  # Arrow loads with the first run file read into columns, not with Django
    import pyarrow as pa

    from annotations.run_columns import RunColumns

# --- runs -------------------------------------------------------------------------------


# Decides whether the caller may replace or delete a run (given the locked row).
RunCheck = Callable[[Run], bool]

_RANKING_COLUMNS = ("run_id", "query_id", "size", "documents", "scores", "ranks")


def run_import(
    *,
    collection: Collection,
    source: Source,
    name: str | None = None,
    run_name: str | None = None,
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
    may_replace: RunCheck | None = None,
) -> tuple[Run, int]:
    """Import a TREC run file (all or nothing); returns the run and its number of results.

    The run is named by `run_name`, else by the file's tag. An existing run of that name is
    replaced only with `replace`. A plain file up to `run_columns.MAX_BYTES` is read whole
    into columns; any other file, and any file with a problem (to name its line), goes
    through the streaming line reader. `may_replace` decides, on the locked existing run
    inside the writing transaction, whether the caller may replace it (else PermissionDenied).
    """
    files = _RunFiles(
        collection=collection, owner=owner, description=description, replace=replace,
        may_replace=may_replace,
    )  # fmt: skip
    with transaction.atomic():
        run, count = files.add(source, name, run_name, files.read(source))
        files.schedule()
    return run, count


def runs_import(
    *,
    collection: Collection,
    sources: Sequence[Source],
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
) -> list[tuple[Run, int]]:
    """Import several run files in one transaction (all or nothing), each named by its tag.

    `run_import` for a whole track's runs: a document id is looked up in the database only
    by the first file that retrieves it, and the next file is read (and its docnos matched
    with those met so far) while the current one is stored. Two files of one tag are refused.
    """
    files = _RunFiles(collection=collection, owner=owner, description=description, replace=replace)
    imported: list[tuple[Run, int]] = []
    with transaction.atomic(), ThreadPoolExecutor(max_workers=1) as reader:
        upcoming = [reader.submit(files.read, source) for source in sources[:1]]
        for index, source in enumerate(sources):
            read = upcoming.pop().result()
            if index + 1 < len(sources):
                upcoming.append(reader.submit(files.read, sources[index + 1]))
            imported.append(files.add(source, None, None, read))
        files.schedule()
    return imported


@dataclass(frozen=True, slots=True)
class _FileRead:
    """A run file as far as it can be read before it is stored."""

    data: bytes | None  # the whole file, when it could be read whole
    columns: RunColumns | None  # when the file is plain
    # Where each of the columns' docnos stood among the first `known` docnos the import had
    # met when the file was read; -1: not among them.
    positions: npt.NDArray[np.int64] | None = None
    known: int = 0


class _RunFiles:
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
    ) -> None:
        self.may_replace = may_replace
        self.collection = collection
        self.owner, self.description, self.replace = owner, description, replace
        self.files: dict[str, str] = {}  # run name -> the file that named it
        self.runs: list[int] = []
        self.docnos: pa.StringArray | None = None
        self.ids: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)

    def read(self, source: Source) -> _FileRead:
        """Read a file (the import's reader thread may do this while a file is stored)."""
        from annotations import run_columns

        data = _whole_file(source)
        columns = None if data is None else run_columns.read_run_columns(data)
        if columns is None:
            return _FileRead(data, None)
        met = self.docnos  # the docnos met so far; later ones only ever extend it
        if met is None:
            return _FileRead(data, columns)
        return _FileRead(data, columns, _positions(columns.docnos, met), len(met))

    def add(
        self, source: Source, name: str | None, run_name: str | None, read: _FileRead
    ) -> tuple[Run, int]:
        name = trec.display_name(source, name)
        columns = read.columns
        if columns is None:
            lines = source if read.data is None else io.BytesIO(read.data)
            tag, results = _results_read(lines, name)
            run = self._run(run_name or tag, name)
            count = _rankings_store(self.collection, run, results)
        else:
            run = self._run(run_name or columns.tag, name)
            query_ids = queries_ensure(collection=self.collection, qids=columns.qids)
            doc_ids = self._ids(columns.docnos, read.positions, read.known)
            rows = _column_ranking_rows(run.id, columns, query_ids, doc_ids)
            bulk_insert(Ranking, _RANKING_COLUMNS, rows, binary=True)
            count = len(columns)
        self.runs.append(run.id)
        return run, count

    def schedule(self) -> None:
        Run.objects.filter(id__in=self.runs).update(scored_at=None)
        scores_schedule(run_ids=self.runs)

    def _run(self, run_name: str, name: str) -> Run:
        earlier = self.files.get(run_name)
        self.files[run_name] = name
        if earlier is not None:
            raise ValidationError(
                {"name": f"{name} and {earlier} both hold run {run_name!r}; import one of them"}
            )
        return _run_prepared(
            self.collection, run_name, self.owner, self.description, self.replace,
            self.may_replace,
        )  # fmt: skip

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


def _results_read(
    source: Source, name: str
) -> tuple[str, dict[str, list[tuple[str, float | None, int]]]]:
    """A run file through the line reader: its tag and {qid: [(docno, score, rank)]}."""
    by_query: dict[str, list[tuple[str, float | None, int]]] = defaultdict(list)
    tag: str | None = None
    with _cyclic_gc_paused():
        for rows in trec.read_run_blocks(source, name=name):
            tag = rows[0][4]  # every line carries the same tag (checked)
            for qid, docno, rank, score, _, _ in rows:
                by_query[qid].append((docno, score, rank))
    if tag is None:  # read_run already refuses an empty file; this keeps the type honest
        raise ValidationError({"file": "the run file has no results"})
    return tag, by_query


def _whole_file(source: Source) -> bytes | None:
    """The file's bytes when it can be read whole (a path, or a seekable binary stream of
    at most `run_columns.MAX_BYTES` from its position on); else None, nothing read."""
    from annotations import run_columns

    if isinstance(source, str | os.PathLike):
        if os.stat(source).st_size > run_columns.MAX_BYTES:
            return None
        with open(source, "rb") as stream:
            return stream.read()
    if not source.seekable():
        return None
    start = source.tell()
    size = source.seek(0, io.SEEK_END) - start
    source.seek(start)
    if size > run_columns.MAX_BYTES:
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


def run_store(
    *,
    collection: Collection,
    run_name: str,
    results: dict[str, list[tuple[str, float | None, int]]],
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
    may_replace: RunCheck | None = None,
) -> tuple[Run, int]:
    """Store a run's results {qid: [(docno, score, rank)]} and schedule its scoring
    (`may_replace` as in `run_import`)."""
    with transaction.atomic():
        run = _run_prepared(collection, run_name, owner, description, replace, may_replace)
        count = _rankings_store(collection, run, results)
        Run.objects.filter(id=run.id).update(scored_at=None)
        scores_schedule(run_ids=[run.id])
    return run, count


def _rankings_store(
    collection: Collection, run: Run, results: dict[str, list[tuple[str, float | None, int]]]
) -> int:
    query_ids = queries_ensure(collection=collection, qids=results.keys())
    doc_ids = documents_ensure(
        collection=collection,
        docnos=(docno for docs in results.values() for docno, _, _ in docs),
    )
    rows = _ranking_rows(run.id, results, query_ids, doc_ids)
    bulk_insert(Ranking, _RANKING_COLUMNS, rows, binary=True)
    return sum(len(docs) for docs in results.values())


def _run_prepared(
    collection: Collection,
    run_name: str,
    owner: User | None,
    description: str,
    replace: bool,
    may_replace: RunCheck | None = None,
) -> Run:
    """The run to fill, created or (with `replace`) emptied and locked; inside a transaction.

    Whether an existing run may be replaced is decided here, on the locked row: a run
    created meanwhile by someone else is never replaced by a caller who may not.
    """
    problem = trec.id_problem(run_name)
    if problem is not None:
        raise ValidationError({"name": f"not a valid run name: {problem}"})
    run = Run.objects.select_for_update().filter(collection=collection, name=run_name).first()
    if run is not None and not replace:
        raise ValidationError(
            {
                "name": f"run {run_name!r} already exists in {collection.slug}; replace it "
                "explicitly (--replace, or PUT in the API)"
            }
        )
    if run is None:
        try:
            with transaction.atomic():
                return Run.objects.create(
                    collection=collection, name=run_name, owner=owner, description=description
                )
        except IntegrityError:  # created by a concurrent request: decide on that run
            run = Run.objects.select_for_update().get(collection=collection, name=run_name)
            if not replace:
                raise ValidationError(
                    {"name": f"run {run_name!r} was just created in {collection.slug}"}
                ) from None
    if may_replace is not None and not may_replace(run):
        raise PermissionDenied("System owners may change only their own runs.")
    run.rankings.all().delete()
    run.query_scores.all().delete()
    run.run_scores.all().delete()
    run.description = description or run.description
    run.scored_at = None
    run.save()
    return run


def _ranking_rows(
    run_id: int,
    results: dict[str, list[tuple[str, float | None, int]]],
    query_ids: dict[str, int],
    doc_ids: dict[str, int],
) -> Iterable[tuple[object, ...]]:
    """One packed row per query, documents in trec_eval's order (fixed here, once)."""
    for qid, docs in results.items():
        docnos, scores, ranks = zip(*scoring.order_results(docs), strict=True)
        yield (
            run_id,
            query_ids[qid],
            len(docnos),
            packing.pack_ids(list(map(doc_ids.__getitem__, docnos))),
            b"" if scores[0] is None else packing.pack_scores(scores),
            packing.pack_ranks(ranks),
        )


def _column_ranking_rows(
    run_id: int,
    columns: RunColumns,
    query_ids: dict[str, int],
    doc_ids: npt.NDArray[np.int64],
) -> Iterable[tuple[object, ...]]:
    """`_ranking_rows` for a file read into columns (already in effective order)."""
    ids = packing.pack_column("q", doc_ids[columns.documents])
    scores = packing.pack_column("d", columns.scores)
    ranks = packing.pack_column("i", columns.ranks)
    edges = columns.bounds.tolist()
    for index, qid in enumerate(columns.qids):
        start, end = edges[index], edges[index + 1]
        yield (
            run_id,
            query_ids[qid],
            end - start,
            ids[start * 8 : end * 8],
            scores[start * 8 : end * 8],
            ranks[start * 4 : end * 4],
        )


def run_delete(*, run: Run, may_delete: RunCheck | None = None) -> None:
    """Delete a run with its results and scores; other runs' scores are unaffected.

    `may_delete` decides on the locked row, inside the deleting transaction.
    """
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(id=run.id).first()
        if locked is None:
            return
        if may_delete is not None and not may_delete(locked):
            raise PermissionDenied("System owners may change only their own runs.")
        locked.delete()


def run_export(*, run: Run, out: trec.TextSink) -> None:
    trec.write_run(selectors.run_rows(run=run), out)
