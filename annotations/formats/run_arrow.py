"""PURE: a whole run file read into columns in native code, exactly as `trec.read_run` reads it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from annotations.formats.trec import MAX_ID_LENGTH, RANK_RANGE

__all__ = ["MAX_BYTES", "RunColumns", "read_run_columns", "read_run_tag_columns"]

# Larger files go through the streaming line reader: this one holds the file and its columns.
MAX_BYTES = 1 << 30

_NAMES = ("qid", "q0", "docno", "rank", "score", "tag")
_BOM = b"\xef\xbb\xbf"
# Printable ASCII, the space and the newline: a line made only of these splits into the same
# columns on single spaces (this reader) as on any whitespace (`trec.read_run`) when none of
# its columns is empty (a leading, trailing or doubled space would make one). Anything else
# goes to the line reader.
_PLAIN = bytes(range(0x21, 0x7F)) + b" \n"
_INTEGER = r"^[+-]?[0-9]+$"  # trec.fields.INTEGER and DECIMAL, anchored
_DECIMAL = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_MAX_FIELD = 1 << 20  # keeps every line far below trec.MAX_LINE_BYTES
# Arrow parses a file in blocks of this size, on several threads; the columns come back in
# chunks, one per block.
_BLOCK_BYTES = 1 << 22
# Freed memory is given back after this many parts of a large file (see `_release`): often
# enough that its peak stays near what it keeps, rarely enough to cost little.
_PARTS_PER_RELEASE = 8
# Files up to this size are parsed at once on several threads (see `_parts`).
_WHOLE_PARSE_BYTES = 1 << 25


@dataclass(frozen=True, slots=True, eq=False)
class RunColumns:
    """A run file's results grouped by query, each query's in effective order (trec_eval's:
    score descending, ties by docno descending in code point order).

    Query ``i`` (``qids[i]``) holds rows ``bounds[i]:bounds[i + 1]``; ``documents`` are
    indexes into ``docnos``, the file's distinct docnos.
    """

    tag: str
    qids: list[str]
    bounds: npt.NDArray[np.int64]
    docnos: pa.StringArray
    documents: npt.NDArray[np.int32]
    scores: npt.NDArray[np.float64]
    ranks: npt.NDArray[np.int32]

    def __len__(self) -> int:
        return len(self.documents)

    def results(self) -> dict[str, list[tuple[str, float, int]]]:
        """{qid: [(docno, score, rank), ...]} in effective order (for tests and small runs)."""
        names = self.docnos.to_pylist()
        rows = list(
            zip(
                [names[i] for i in self.documents.tolist()],
                self.scores.tolist(),
                self.ranks.tolist(),
                strict=True,
            )
        )
        edges = self.bounds.tolist()
        return {qid: rows[edges[i] : edges[i + 1]] for i, qid in enumerate(self.qids)}


def read_run_columns(data: bytes) -> RunColumns | None:
    """The results of a whole run file, checked as `trec.read_run` checks them; None when
    the file is not plain or has any problem, for the line reader to read it or to name the
    line and field at fault.

    Accepted here only what both readers take identically: printable ASCII, single spaces
    between columns, "\\n" or "\\r\\n" line ends, blank lines. Values are parsed by Arrow
    (correctly rounded, as Python's ``float``) after the same regular expressions.
    """
    runs = _read(data, split_tags=False)
    return None if runs is None else runs[0]


def read_run_tag_columns(data: bytes) -> list[RunColumns] | None:
    """`read_run_columns` for a file of several runs told apart by their tags (the line
    reader's ``split_tags``): one run per tag, in the order the tags first appear, a docno
    once per tag and qid. None as for `read_run_columns`."""
    return _read(data, split_tags=True)


def _read(data: bytes, *, split_tags: bool) -> list[RunColumns] | None:
    if len(data) > MAX_BYTES:
        return None
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if b"\r" in data:
        if data.count(b"\r") != data.count(b"\r\n"):
            return None
        data = data.replace(b"\r\n", b"\n")
    if data.translate(None, _PLAIN):
        return None
    if data.startswith(b"#") or b"\n#" in data:
        return None  # comment lines: the line reader skips them
    large = len(data) > _WHOLE_PARSE_BYTES
    try:
        rows = _rows(data, split_tags)
        del data  # a copy when line ends were rewritten: not held while the runs are made
        return None if rows is None else _runs(rows, release=large)
    finally:
        if large:
            _release()


def _release() -> None:
    """Give what Arrow (and, through the C library's allocator, numpy) freed back to the
    system: between the blocks of a file and the runs split from it, freed memory lies
    between what is kept and is otherwise held until the end of the read."""
    pa.default_memory_pool().release_unused()


@dataclass(slots=True)
class _Rows:
    """A file's checked rows: the ids as text (chunks of the blocks read), the rest as
    numbers; `tags[tag_codes[i]]` is row i's tag."""

    qids: pa.ChunkedArray
    docnos: pa.ChunkedArray
    tags: list[str]
    tag_codes: npt.NDArray[np.int32]
    scores: npt.NDArray[np.float64]
    ranks: npt.NDArray[np.int32]


def _rows(data: bytes, split_tags: bool) -> _Rows | None:
    """The file's rows, checked a part at a time (see `_parts`): each part's rank, score and
    tag texts become numbers before the next part is parsed, so a large file is never held
    as six columns of text. None at the first problem, or when there are no rows."""
    qids: list[pa.Array] = []
    docnos: list[pa.Array] = []
    tags: dict[str, int] = {}
    tag_codes: list[npt.NDArray[np.int32]] = []
    scores: list[npt.NDArray[np.float64]] = []
    ranks: list[npt.NDArray[np.int32]] = []
    try:
        for part in _parts(data):
            if not _part_checked(part):
                return None
            part_ranks, part_scores = _numbers(part)
            if part_ranks is None or part_scores is None:
                return None
            names = _codes(part["tag"])
            codes = [tags.setdefault(tag, len(tags)) for tag in names.dictionary.to_pylist()]
            if len(tags) > 1 and not split_tags:
                return None
            tag_codes.append(np.array(codes, dtype=np.int32)[names.indices.to_numpy()])
            qids.extend(part["qid"].chunks)
            docnos.extend(part["docno"].chunks)
            scores.append(part_scores)
            ranks.append(part_ranks)
            del part
            if len(ranks) % _PARTS_PER_RELEASE == 0:
                _release()
    except pa.ArrowInvalid:  # a line without six columns
        return None
    if not tags:
        return None
    return _Rows(
        qids=pa.chunked_array(qids, pa.string()),
        docnos=pa.chunked_array(docnos, pa.string()),
        tags=list(tags),
        tag_codes=np.concatenate(tag_codes),
        scores=np.concatenate(scores),
        ranks=np.concatenate(ranks),
    )


def _parts(data: bytes) -> Iterator[pa.Table]:
    """The file's lines split into six columns of text, in parts; raises ArrowInvalid when a
    line has not six.

    A file of up to `_WHOLE_PARSE_BYTES` is one part, its blocks parsed on several threads
    (a track's run files: the import reads the next while it stores one); a larger one (a
    bundle of runs) is parsed block after block, one part each, so its text is never held
    whole.
    """
    options = {
        "read_options": pa_csv.ReadOptions(column_names=list(_NAMES), block_size=_BLOCK_BYTES),
        "parse_options": pa_csv.ParseOptions(
            delimiter=" ",
            quote_char=False,
            double_quote=False,
            escape_char=False,
            newlines_in_values=False,
            ignore_empty_lines=True,
        ),
        "convert_options": pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in _NAMES},
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    }
    if len(data) <= _WHOLE_PARSE_BYTES:
        whole = pa_csv.read_csv(pa.py_buffer(data), **options)
        if whole.num_rows:
            yield whole
        return
    for block in pa_csv.open_csv(pa.BufferReader(data), **options):
        if block.num_rows:
            yield pa.Table.from_batches([block])


def _lengths(column: pa.ChunkedArray) -> tuple[int, int]:
    """The shortest and longest value's length in bytes."""
    bounds = pc.min_max(pc.binary_length(column)).as_py()
    return int(bounds["min"]), int(bounds["max"])


def _part_checked(part: pa.Table) -> bool:
    """No column empty (spaces where the line reader sees other columns); ids up to
    MAX_ID_LENGTH, other fields up to _MAX_FIELD."""
    for name in _NAMES:
        shortest, longest = _lengths(part[name])
        limit = MAX_ID_LENGTH if name in ("qid", "docno", "tag") else _MAX_FIELD
        if shortest == 0 or longest > limit:
            return False
    return True


def _numbers(
    part: pa.Table,
) -> tuple[npt.NDArray[np.int32] | None, npt.NDArray[np.float64] | None]:
    """A part's ranks and scores, each None when one of its texts is not as the line
    reader would take it (or a rank beyond 32 bits, which it would ignore)."""
    rank_texts, score_texts = part["rank"], part["score"]
    if not _all(pc.match_substring_regex(rank_texts, _INTEGER)):
        return None, None
    if not _all(pc.match_substring_regex(score_texts, _DECIMAL)):
        return None, None
    if pc.any(pc.starts_with(rank_texts, "+")).as_py():
        rank_texts = pc.utf8_ltrim(rank_texts, "+")  # Arrow's integer parser refuses a sign
    try:
        ranks = pc.cast(rank_texts, pa.int64()).to_numpy()
        scores = pc.cast(score_texts, pa.float64()).to_numpy()
    except pa.ArrowInvalid:  # beyond 64 bits
        return None, None
    if ranks.min() < RANK_RANGE[0] or ranks.max() > RANK_RANGE[1] or not np.isfinite(scores).all():
        return None, None
    return ranks.astype(np.int32), scores


def _all(mask: pa.ChunkedArray) -> bool:
    return bool(pc.all(mask).as_py())


def _codes(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """The column's distinct values (in the order they first appear) and each row's index
    among them."""
    encoded = pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        return encoded.combine_chunks()
    return encoded


def _runs(rows: _Rows, *, release: bool) -> list[RunColumns] | None:
    """The file's runs, one per tag in the order the tags first appear; None when a docno
    is retrieved twice for a qid of one run."""
    if len(rows.tags) == 1:
        run = _run(rows.tags[0], rows.qids, rows.docnos, rows.scores, rows.ranks)
        return None if run is None else [run]
    # Taking rows from chunks joins the chunks first: joined once, not once per run.
    all_qids, all_docnos = rows.qids.combine_chunks(), rows.docnos.combine_chunks()
    rows.qids = rows.docnos = pa.chunked_array([], pa.string())
    if release:
        _release()
    runs = []
    for code, tag in enumerate(rows.tags):
        at = np.flatnonzero(rows.tag_codes == code)
        taken = pa.array(at)
        qids, docnos = all_qids.take(taken), all_docnos.take(taken)
        run = _run(tag, qids, docnos, rows.scores[at], rows.ranks[at])
        if run is None:
            return None
        runs.append(run)
        del qids, docnos
        if release:
            _release()
    return runs


def _run(
    tag: str,
    qids: pa.ChunkedArray | pa.Array,
    docnos: pa.ChunkedArray | pa.Array,
    scores: npt.NDArray[np.float64],
    ranks: npt.NDArray[np.int32],
) -> RunColumns | None:
    """One run's checked values grouped by query in effective order; None when a docno is
    retrieved twice for a qid."""
    queries, documents = _codes(qids), _codes(docnos)
    query_codes = queries.indices.to_numpy().astype(np.int64)
    document_codes = documents.indices.to_numpy()
    pairs = np.sort(query_codes * len(documents.dictionary) + document_codes)
    if (pairs[1:] == pairs[:-1]).any():  # a docno retrieved twice for one qid
        return None
    del pairs
    order = pc.sort_indices(
        pa.table({"q": query_codes, "s": scores, "d": docnos}),
        sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")],
    ).to_numpy()
    grouped = query_codes[order]
    starts = np.flatnonzero(np.diff(grouped)) + 1
    bounds = np.concatenate(([0], starts, [len(order)])).astype(np.int64)
    names = queries.dictionary.to_pylist()
    return RunColumns(
        tag=tag,
        qids=[names[code] for code in grouped[bounds[:-1]].tolist()],
        bounds=bounds,
        docnos=documents.dictionary,
        documents=document_codes[order].astype(np.int32),
        scores=scores[order],
        ranks=ranks[order],
    )
