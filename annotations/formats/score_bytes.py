"""PURE: the packed form of stored scores, every cutoff of a (run, query) or a run in one row.

A judgement moves one query's scores at every cutoff for every run, and a row per (run,
query, k) made that runs x cutoffs rows to write on each change; packed, it is one row per
run. The layout of a row is its cutoffs, ascending, written as text ("5,10,20"): readers
take the value at k from the position of k, and a row written for other cutoffs (a
collection whose cutoffs changed, pending its rescore) is told apart by its layout.

Per-query values: one column per measure (``ndcg``, ``dcg``, ``judged``, ``ndcg_condensed``),
one float64 per cutoff each: a judgement that moves only the IDCG rewrites two of them, and
a reader of one cutoff reads 8 bytes of a column. Run means: ``sums``, the exact sums of
nDCG, nDCG' and judged@k per cutoff in 12 bytes each (see `pack_sums`), and
``overflow`` the exact sums that do not fit them, as `exact` texts keyed
"measure:position"; a mean is its sum divided by ``queries``, correctly rounded, decoded
when read (a division per value, nothing recomputed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from annotations.metrics import exact, exact_arrays

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The three run means, in the order of a run's sums (and of RunMeans), and their sums' columns.
MEAN_MEASURES = ("ndcg", "ndcg_condensed", "judged")
SUM_COLUMNS = tuple(f"{measure}_sums" for measure in MEAN_MEASURES)
# The per-query measures of a score matrix row (scoring_arrays.MEASURES).
QUERY_MEASURES = ("ndcg", "dcg", "judged", "ndcg_condensed")
_FLOAT = np.dtype("<f8")


def layout(ks: Sequence[int]) -> str:
    """The layout text of ascending cutoffs: '5,10,20'."""
    return ",".join(str(int(k)) for k in ks)


def cutoffs_of(text: str) -> list[int]:
    """The cutoffs of a layout text; ValueError for anything else."""
    try:
        ks = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"not a cutoffs layout: {text!r}") from None
    if not ks or any(k < 1 for k in ks) or ks != sorted(set(ks)):
        raise ValueError(f"not a cutoffs layout: {text!r}")
    return ks


def position(text: str, k: int) -> int | None:
    """The 0-based position of cutoff k in a layout, None if the layout lacks it."""
    ks = cutoffs_of(text)
    try:
        return ks.index(k)
    except ValueError:
        return None


def floats(data: bytes | memoryview) -> FloatArray:
    """Little-endian float64s as a (read-only) array."""
    return np.frombuffer(bytes(data), dtype=_FLOAT).astype(np.float64, copy=False)


def float_bytes(values: npt.ArrayLike) -> bytes:
    return np.ascontiguousarray(values, dtype=_FLOAT).tobytes()


# --- per-query scores ---------------------------------------------------------------------


class QueryValues(NamedTuple):
    """One run's scores for one query at one cutoff."""

    k: int
    ndcg: float
    dcg: float
    judged: float
    ndcg_condensed: float


def pack_query(scores: FloatArray) -> tuple[bytes, bytes, bytes, bytes]:
    """The four packed columns (QUERY_MEASURES order) of one run's (4, K) score matrix."""
    return tuple(float_bytes(row) for row in scores)  # type: ignore[return-value]


def unpack_query(*columns: bytes | memoryview) -> FloatArray:
    """The (4, K) matrix in QUERY_MEASURES order from a row's four packed columns."""
    rows = [floats(column) for column in columns]
    if len(rows) != len(QUERY_MEASURES) or len({row.size for row in rows}) != 1:
        raise ValueError(f"packed values of sizes {[row.size for row in rows]}")
    return np.stack(rows)


def query_values(text: str, *columns: bytes | memoryview) -> dict[int, QueryValues]:
    """k -> values of one packed per-query row (its four columns)."""
    matrix = unpack_query(*columns)
    ks = cutoffs_of(text)
    if matrix.shape[1] != len(ks):
        raise ValueError(f"{matrix.shape[1]} packed values for the layout {text!r}")
    return {k: QueryValues(k, *(float(v) for v in matrix[:, i])) for i, k in enumerate(ks)}


# --- run means ----------------------------------------------------------------------------


class RunMeans(NamedTuple):
    """A run's means at one cutoff, with the exact sum of the per-query nDCG values."""

    k: int
    queries: int
    ndcg: float
    ndcg_condensed: float
    judged: float
    ndcg_sum: str


# A stored sum is a signed 96-bit integer in units of 2**-72, as three little-endian 32-bit
# words: 12 bytes, so that a run's row of three measures at 100 cutoffs (3.6 KB) is
# rewritten inside its page (a HOT update, no index or TOAST work). It holds every sum of
# scores from 2**-20 up (a double's last bit is then at or above 2**-72) below 2**23 in
# magnitude (eight million queries of scores up to 1); `ExactMeans.spill` keeps any other
# sum exactly as overflow text. Internally sums are exact_arrays limbs on a 2**-96 grid.
_STORED_WORD = np.dtype("<u4")
_WORDS = 3
_DROPPED_BITS = exact_arrays.GRID_BITS - 72  # low bits of the 2**-96 grid not stored
_MASK = (1 << 32) - 1
# Bytes of one packed exact sum: a reader of one cutoff takes these from its position.
SUM_BYTES = _WORDS * _STORED_WORD.itemsize


def packable(sums: IntArray) -> npt.NDArray[np.bool_]:
    """Where normalised exact sums (shape (..., LIMBS)) fit the stored 12 bytes."""
    limbs = np.asarray(sums, dtype=np.int64)
    low = (limbs[..., 0] & ((1 << _DROPPED_BITS) - 1)) == 0
    # The bits above the stored integer's top word must all repeat its sign bit.
    # The stored integer's top bit is bit 119 of the 2**-96 grid's 160: bit 23 of limb 3.
    top = (limbs[..., 3] >> _DROPPED_BITS) | (limbs[..., 4] << (32 - _DROPPED_BITS))
    sign = -((limbs[..., 3] >> (_DROPPED_BITS - 1)) & 1)
    result: npt.NDArray[np.bool_] = low & (top == sign)
    return result


def pack_sums(sums: IntArray) -> bytes:
    """Normalised exact sums (any shape ending in LIMBS: one measure's (K, LIMBS), or a
    run's (3, K, LIMBS)) in their stored form; ValueError if one does not fit (see
    `packable`: `ExactMeans.spill` moves such sums to the overflow texts first)."""
    limbs = np.ascontiguousarray(sums, dtype=np.int64)
    if limbs.size and not packable(limbs).all():
        raise ValueError("an exact sum that does not fit the stored 12 bytes")
    shift = _DROPPED_BITS
    words = np.empty((*limbs.shape[:-1], _WORDS), dtype=np.int64)
    for w in range(_WORDS):
        words[..., w] = (limbs[..., w] >> shift) | (limbs[..., w + 1] << (32 - shift))
    return (words & _MASK).astype(_STORED_WORD).tobytes()


def unpack_sums(data: bytes | memoryview, cutoffs: int, measures: int = 1) -> IntArray:
    """The (cutoffs, LIMBS) normalised sums of one measure, or (measures, cutoffs, LIMBS)
    of several, from their stored form."""
    words = np.frombuffer(bytes(data), dtype=_STORED_WORD).astype(np.int64)
    if words.size != measures * cutoffs * _WORDS:
        raise ValueError(f"{words.size} packed words for {cutoffs} cutoffs")
    words = words.reshape(-1, _WORDS)
    shift = _DROPPED_BITS
    sign = -(words[:, 2] >> 31)  # -1 for a negative sum, else 0
    limbs = np.empty((len(words), exact_arrays.LIMBS), dtype=np.int64)
    limbs[:, 0] = (words[:, 0] << shift) & _MASK
    for i in range(1, _WORDS):
        limbs[:, i] = ((words[:, i - 1] >> (32 - shift)) | (words[:, i] << shift)) & _MASK
    limbs[:, 3] = ((words[:, 2] >> (32 - shift)) | (sign << shift)) & _MASK
    limbs[:, 4] = sign
    limbs_shape = (cutoffs, exact_arrays.LIMBS)
    shape = limbs_shape if measures == 1 else (measures, *limbs_shape)
    return limbs.reshape(shape)


def overflow_key(measure: int, index: int) -> str:
    return f"{measure}:{index}"


def overflow_place(key: str) -> tuple[int, int]:
    """The (measure, position) an overflow key names ("1:7" -> (1, 7))."""
    measure, index = key.split(":")
    return int(measure), int(index)


def exact_total(sums: IntArray, overflow: Mapping[str, str], measure: int, index: int) -> int:
    """The exact sum (an `exact` scaled integer) of one mean, wherever it is kept."""
    text = overflow.get(overflow_key(measure, index))
    if text is not None:
        return exact.total_from_text(text)
    return exact_arrays.to_total(sums[measure, index])


def means_of(sums: IntArray, overflow: Mapping[str, str], queries: int) -> FloatArray:
    """The (3, K) correctly rounded means of a run's exact sums over `queries`."""
    means = exact_arrays.means(sums, np.int64(queries))
    for key, text in overflow.items():
        measure, index = overflow_place(key)
        means[measure, index] = exact.total_mean(exact.total_from_text(text), queries)
    return means


def run_sums(columns: Sequence[bytes | memoryview], cutoffs: int) -> IntArray:
    """A run's (3, K, LIMBS) sums from its three packed sum columns (SUM_COLUMNS order)."""
    return np.stack([unpack_sums(column, cutoffs) for column in columns])


def run_means(
    text: str, queries: int, sums: Sequence[bytes | memoryview], overflow: Mapping[str, str]
) -> dict[int, RunMeans]:
    """k -> means of one packed run row (`sums`: its three sum columns)."""
    ks = cutoffs_of(text)
    limbs = run_sums(sums, len(ks))
    values = means_of(limbs, overflow, queries)
    return {
        k: RunMeans(
            k,
            queries,
            float(values[0, i]),
            float(values[1, i]),
            float(values[2, i]),
            exact.total_to_text(exact_total(limbs, overflow, 0, i)),
        )
        for i, k in enumerate(ks)
    }
