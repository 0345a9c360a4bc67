"""PURE packing of a ranking's document ids, scores and ranks into compact little-endian bytes."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

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
