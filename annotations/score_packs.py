"""PURE: the packed form of stored scores, every cutoff of a (run, query) or a run in one row.

A judgement moves one query's scores at every cutoff for every run, and a row per (run,
query, k) made that runs x cutoffs rows to write on each change; packed, it is one row per
run. The layout of a row is its cutoffs, ascending, written as text ("5,10,20"): readers
take the value at k from the position of k, and a row written for other cutoffs (a
collection whose cutoffs changed, pending its rescore) is told apart by its layout.

Per-query values: one column per measure (``ndcg``, ``dcg``, ``judged``, ``ndcg_condensed``),
one float64 per cutoff each: a judgement that moves only the IDCG rewrites two of them, and
a reader of one cutoff reads 8 bytes of a column. Run means: ``sums``, the exact sums of
nDCG, nDCG' and judged@k per cutoff as `exact_arrays` limbs (32 bits each), and
``overflow`` the exact sums that do not fit those limbs, as `exact` texts keyed
"measure:position"; a mean is its sum divided by ``queries``, correctly rounded, decoded
when read (a division per value, nothing recomputed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from annotations import exact, exact_arrays

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The three run means, in the order of a run's sums and Triple, and their sums' columns.
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


# Limbs 0..3 of a sum are below 2**32 and its top limb below 2**30 in magnitude (on-grid
# values are below 2**31 and at most 2**31 of them are summed): 32 bits each suffice.
_STORED_LIMB = np.dtype("<i4")
# Bytes of one packed exact sum: a reader of one cutoff takes these from its position.
SUM_BYTES = exact_arrays.LIMBS * _STORED_LIMB.itemsize


def pack_sums(sums: IntArray) -> bytes:
    """Normalised exact sums (any shape ending in LIMBS: one measure's (K, LIMBS), or a
    run's (3, K, LIMBS)), 32 bits per limb."""
    limbs = np.ascontiguousarray(sums, dtype=np.int64)
    if limbs.size and not (
        int(limbs[..., -1].min()) >= -(2**31) and int(limbs[..., -1].max()) < 2**31
    ):
        raise ValueError("an exact sum too large to pack")
    # Limbs 0..3 (in [0, 2**32)) keep their low 32 bits: read back as unsigned.
    return limbs.astype(_STORED_LIMB).tobytes()


def unpack_sums(data: bytes | memoryview, cutoffs: int, measures: int = 1) -> IntArray:
    """The (cutoffs, LIMBS) sums of one measure, or (measures, cutoffs, LIMBS) of several."""
    values = np.frombuffer(bytes(data), dtype=_STORED_LIMB).astype(np.int64)
    if values.size != measures * cutoffs * exact_arrays.LIMBS:
        raise ValueError(f"{values.size} packed limbs for {cutoffs} cutoffs")
    shape = (cutoffs, exact_arrays.LIMBS) if measures == 1 else (measures, cutoffs, 5)
    sums = values.reshape(shape)
    sums[..., :-1] &= 0xFFFFFFFF  # the lower limbs are unsigned
    return sums


def overflow_key(measure: int, index: int) -> str:
    return f"{measure}:{index}"


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
        measure, index = map(int, key.split(":"))
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
