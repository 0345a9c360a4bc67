"""PURE: the packed form of stored scores, every cutoff of a (run, query) or a run in one row.

A judgement moves one query's scores at every cutoff for every run, and a row per (run,
query, k) made that runs x cutoffs rows to write on each change; packed, it is one row per
run. The layout of a row is its cutoffs, ascending, written as text ("5,10,20"): readers
take the value at k from the position of k, and a row written for other cutoffs (a
collection whose cutoffs changed, pending its rescore) is told apart by its layout.

Per-query values: ``ndcg`` (one float64 per cutoff, apart because leaderboards read only
it, one element per row) and ``values`` (dcg, judged@k, nDCG' per cutoff, in that order).
Run means: ``means`` (nDCG, nDCG', judged@k per cutoff), ``sums`` their exact sums as
`exact_arrays` limbs, and ``overflow`` the exact sums that do not fit those limbs, as
`exact` texts keyed "measure:position".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from annotations import exact, exact_arrays

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The three run means, in the order of `means`, `sums` and Triple.
MEAN_MEASURES = ("ndcg", "ndcg_condensed", "judged")
# The per-query measures of a score matrix row (scoring_arrays.MEASURES).
QUERY_MEASURES = ("ndcg", "dcg", "judged", "ndcg_condensed")
_FLOAT = np.dtype("<f8")
_LIMB = np.dtype("<i8")


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


def pack_query(scores: FloatArray) -> tuple[bytes, bytes]:
    """(ndcg, values) of one run's (4, K) score matrix in QUERY_MEASURES order."""
    return float_bytes(scores[0]), float_bytes(scores[1:])


def unpack_query(ndcg: bytes | memoryview, values: bytes | memoryview) -> FloatArray:
    """The (4, K) matrix in QUERY_MEASURES order from a row's two packed columns."""
    first = floats(ndcg)
    rest = floats(values)
    if rest.size != 3 * first.size:
        raise ValueError(f"{rest.size} packed values for {first.size} cutoffs")
    return np.concatenate([first[np.newaxis], rest.reshape(3, first.size)])


def query_values(
    text: str, ndcg: bytes | memoryview, values: bytes | memoryview
) -> dict[int, QueryValues]:
    """k -> values of one packed per-query row."""
    matrix = unpack_query(ndcg, values)
    return {
        k: QueryValues(k, *(float(v) for v in matrix[:, i])) for i, k in enumerate(cutoffs_of(text))
    }


# --- run means ----------------------------------------------------------------------------


class RunMeans(NamedTuple):
    """A run's means at one cutoff, with the exact sum of the per-query nDCG values."""

    k: int
    queries: int
    ndcg: float
    ndcg_condensed: float
    judged: float
    ndcg_sum: str


def pack_means(means: FloatArray) -> bytes:
    """A run's (3, K) means in MEAN_MEASURES order."""
    return float_bytes(means)


def unpack_means(data: bytes | memoryview) -> FloatArray:
    values = floats(data)
    if values.size % 3:
        raise ValueError(f"{values.size} packed means are not three per cutoff")
    return values.reshape(3, values.size // 3)


def pack_sums(sums: IntArray) -> bytes:
    """A run's (3, K, LIMBS) exact sums."""
    return np.ascontiguousarray(sums, dtype=_LIMB).tobytes()


def unpack_sums(data: bytes | memoryview, cutoffs: int) -> IntArray:
    values = np.frombuffer(bytes(data), dtype=_LIMB).astype(np.int64, copy=False)
    if values.size != 3 * cutoffs * exact_arrays.LIMBS:
        raise ValueError(f"{values.size} packed limbs for {cutoffs} cutoffs")
    return values.reshape(3, cutoffs, exact_arrays.LIMBS)


def overflow_key(measure: int, index: int) -> str:
    return f"{measure}:{index}"


def exact_total(sums: IntArray, overflow: Mapping[str, str], measure: int, index: int) -> int:
    """The exact sum (an `exact` scaled integer) of one mean, wherever it is kept."""
    text = overflow.get(overflow_key(measure, index))
    if text is not None:
        return exact.total_from_text(text)
    return exact_arrays.to_total(sums[measure, index])


def run_means(
    text: str,
    queries: int,
    means: bytes | memoryview,
    sums: bytes | memoryview,
    overflow: Mapping[str, str],
) -> dict[int, RunMeans]:
    """k -> means of one packed run row."""
    ks = cutoffs_of(text)
    values = unpack_means(means)
    limbs = unpack_sums(sums, len(ks))
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
