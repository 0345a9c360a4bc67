"""PURE packing of a ranking's document ids, scores and ranks into compact little-endian bytes,
and of where it holds its query's qrels documents."""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from annotations.metrics.qrels_ranks import QrelsRanks

_SWAP = sys.byteorder != "little"
_LITTLE_ENDIAN = {"q": "<i8", "d": "<f8", "i": "<i4"}


def _pack(typecode: str, values: Sequence[int] | Sequence[float]) -> bytes:
    packed = array(typecode, values)
    if _SWAP:
        packed.byteswap()
    return packed.tobytes()


def _unpack(typecode: str, data: bytes | memoryview, count: int | None = None) -> array:  # type: ignore[type-arg]
    values = array(typecode)
    raw = bytes(data)
    if count is not None:
        raw = raw[: count * values.itemsize]
    if len(raw) % values.itemsize:
        raise ValueError(f"{len(raw)} bytes are not a whole number of {typecode!r} items")
    values.frombytes(raw)
    if _SWAP:
        values.byteswap()
    return values


def pack_ids(ids: Sequence[int]) -> bytes:
    """Document ids as signed 64-bit integers."""
    return _pack("q", ids)


def unpack_ids(data: bytes | memoryview, count: int | None = None) -> list[int]:
    """The ids, or only the first `count` of them (a top-k read)."""
    return _unpack("q", data, count).tolist()


def unpack_id_array(data: bytes | memoryview, count: int | None = None) -> npt.NDArray[np.int64]:
    """`unpack_ids` as an int64 array (no Python ints): the scoring path's read."""
    raw = memoryview(data)
    if count is not None:
        raw = raw[: count * 8]
    if len(raw) % 8:
        raise ValueError(f"{len(raw)} bytes are not a whole number of 'q' items")
    return np.frombuffer(raw, dtype="<i8").astype(np.int64)


def pack_scores(scores: Sequence[float]) -> bytes:
    """Scores as IEEE doubles: every bit of the submitted value survives."""
    return _pack("d", scores)


def unpack_scores(data: bytes | memoryview) -> list[float]:
    return _unpack("d", data).tolist()


def pack_ranks(ranks: Sequence[int]) -> bytes:
    """Submitted ranks as signed 32-bit integers."""
    return _pack("i", ranks)


def unpack_ranks(data: bytes | memoryview) -> list[int]:
    return _unpack("i", data).tolist()


def pack_column(typecode: str, values: npt.NDArray[np.generic]) -> bytes:
    """A NumPy column packed as the functions above pack a sequence: `typecode` "q" (ids),
    "d" (scores) or "i" (ranks), little-endian; slice it for one ranking."""
    return values.astype(_LITTLE_ENDIAN[typecode], copy=False).tobytes()


# --- where rankings hold their query's qrels documents (metrics.qrels_ranks) ---------------

# A query with more qrels documents than this has 4-byte indices, others 2-byte ones.
_SHORT_INDICES = 1 << 16


def qrels_digest(documents: npt.NDArray[np.int64]) -> bytes:
    """16 bytes that name a set of qrels documents (its ids, ascending): stored ranks are
    read only for the set they were found for."""
    data = np.ascontiguousarray(documents, dtype="<i8").tobytes()
    return hashlib.blake2b(data, digest_size=16).digest()


def _index_type(documents: int) -> str:
    return "<u2" if documents <= _SHORT_INDICES else "<u4"


def pack_qrels_ranks(ranks: QrelsRanks) -> list[bytes]:
    """Each run's ranks as bytes: a bit per result of its ranking, set where it holds a qrels
    document (numpy's packbits order, the last byte padded with 0 bits), then the index in
    `ranks.documents` of each of those in rank order, 2 bytes each (little-endian) when the
    qrels hold at most 65,536 documents, else 4. At most 1/64 of the ranking's own bytes,
    plus 2 per qrels document it holds."""
    spans = (ranks.lengths + 7) // 8 * 8  # bits per run, whole bytes
    ends = np.cumsum(spans)
    bits = np.zeros(int(ends[-1]) if ends.size else 0, dtype=bool)
    bits[(ends - spans)[ranks.rows] + ranks.positions] = True
    maps = np.packbits(bits).tobytes()
    index_type = np.dtype(_index_type(ranks.documents.size))
    indices = ranks.indices.astype(index_type).tobytes()
    counts = np.bincount(ranks.rows, minlength=ranks.runs) * index_type.itemsize
    packed = []
    map_at = index_at = 0
    for size, count in zip((spans // 8).tolist(), counts.tolist(), strict=True):
        packed.append(maps[map_at : map_at + size] + indices[index_at : index_at + count])
        map_at += size
        index_at += count
    return packed


def unpack_qrels_ranks(
    documents: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    packed: list[bytes | memoryview],
) -> QrelsRanks:
    """The ranks of every run from its `pack_qrels_ranks` bytes (one per run, ranking lengths
    `lengths`), found for `documents`; ValueError if they do not fit the lengths."""
    index_type = np.dtype(_index_type(documents.size))
    spans = (lengths + 7) // 8 * 8  # bits per run, whole bytes
    sizes = (spans // 8).tolist()
    views = [memoryview(data) for data in packed]
    maps = b"".join(view[:size] for view, size in zip(views, sizes, strict=True))
    # As booleans: np.flatnonzero is several times faster on them than on bytes.
    hits = np.flatnonzero(np.unpackbits(np.frombuffer(maps, dtype=np.uint8)).view(np.bool_))
    indices = np.frombuffer(
        b"".join(view[size:] for view, size in zip(views, sizes, strict=True)), dtype=index_type
    ).astype(np.int64)
    # A run holds as many qrels documents as its bytes hold indices; a run whose bits say
    # otherwise moves a position out of its ranking.
    held = np.fromiter(map(len, views), dtype=np.int64, count=len(views)) - spans // 8
    rows = np.repeat(np.arange(len(views)), held // index_type.itemsize)
    if not rows.size == hits.size == indices.size:
        raise ValueError("packed qrels ranks do not fit their rankings")
    positions = hits - (np.cumsum(spans) - spans)[rows]
    if rows.size and ((positions < 0) | (positions >= lengths[rows])).any():
        raise ValueError("packed qrels ranks do not fit their rankings")
    if indices.size and indices.max() >= documents.size:
        raise ValueError("packed qrels ranks name a document beyond the qrels")
    return QrelsRanks(documents, lengths, rows, positions, indices)
