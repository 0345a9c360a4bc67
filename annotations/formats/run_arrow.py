"""PURE: a whole run file read into columns in native code, exactly as `trec.read_run` reads it."""

from __future__ import annotations

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
    columns = _parse(data)
    del data  # a copy when line ends were rewritten: not held while the columns are checked
    if columns is None:
        return None
    pa.default_memory_pool().release_unused()  # what the parse freed
    try:
        return _checked(columns, split_tags)
    finally:
        columns.clear()
        pa.default_memory_pool().release_unused()  # the text columns' memory


def _parse(data: bytes) -> dict[str, pa.ChunkedArray] | None:
    """The file's six columns as text, by name; None when a line has not six columns or
    there are no lines."""
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(data),
            read_options=pa_csv.ReadOptions(column_names=list(_NAMES), block_size=_BLOCK_BYTES),
            parse_options=pa_csv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types={name: pa.string() for name in _NAMES},
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid:  # a line without six columns
        return None
    if table.num_rows == 0:
        return None
    return {name: table[name] for name in _NAMES}


def _longest(column: pa.ChunkedArray) -> int:
    return int(pc.max(pc.binary_length(column)).as_py())


def _all(mask: pa.ChunkedArray | pa.Array) -> bool:
    return bool(pc.all(mask).as_py())


def _shortest(column: pa.ChunkedArray) -> int:
    return int(pc.min(pc.binary_length(column)).as_py())


def _codes(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """The column's distinct values (in the order they first appear) and each row's index
    among them."""
    encoded = pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        return encoded.combine_chunks()
    return encoded


def _checked(columns: dict[str, pa.ChunkedArray], split_tags: bool) -> list[RunColumns] | None:
    """The runs of a file's text columns, or None. Each column is dropped from `columns`
    once read, so that its memory goes before the next is made."""
    if any(_shortest(column) == 0 for column in columns.values()):
        return None  # an empty column: spaces where the line reader sees other columns
    for name in ("qid", "docno", "tag"):
        if _longest(columns[name]) > MAX_ID_LENGTH:
            return None
    for name in ("q0", "rank", "score"):
        if _longest(columns[name]) > _MAX_FIELD:
            return None
    del columns["q0"]
    tags = _codes(columns.pop("tag"))
    if len(tags.dictionary) > 1 and not split_tags:
        return None
    rank_texts, score_texts = columns.pop("rank"), columns.pop("score")
    if not _all(pc.match_substring_regex(rank_texts, _INTEGER)):
        return None
    if not _all(pc.match_substring_regex(score_texts, _DECIMAL)):
        return None
    if pc.any(pc.starts_with(rank_texts, "+")).as_py():
        # Arrow's integer parser refuses a sign
        rank_texts = pc.utf8_ltrim(rank_texts, "+")
    try:
        ranks = pc.cast(rank_texts, pa.int64()).to_numpy()
        scores = pc.cast(score_texts, pa.float64()).to_numpy()
    except pa.ArrowInvalid:  # beyond 64 bits
        return None
    del rank_texts, score_texts
    if ranks.min() < RANK_RANGE[0] or ranks.max() > RANK_RANGE[1] or not np.isfinite(scores).all():
        return None
    qids, docnos = columns.pop("qid"), columns.pop("docno")
    names = tags.dictionary.to_pylist()
    if len(names) == 1:
        run = _run(names[0], qids, docnos, scores, ranks.astype(np.int32))
        return None if run is None else [run]
    codes = tags.indices.to_numpy()
    runs = []
    for code, tag in enumerate(names):  # in the order the tags first appear
        rows = np.flatnonzero(codes == code)
        at = pa.array(rows)
        qid_rows = pc.take(qids, at)
        docno_rows = pc.take(docnos, at)
        run = _run(tag, qid_rows, docno_rows, scores[rows], ranks[rows].astype(np.int32))
        if run is None:
            return None
        runs.append(run)
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
