"""PURE: the packed form of stored scores, every cutoff of a (run, query) in one row.

A judgement moves one query's scores at every cutoff for every run, and a row per (run,
query, k) made that runs x cutoffs rows to write on each change; packed, it is one row per
run. The layout of a row is its cutoffs, ascending, written as text ("5,10,20"): readers
take the value at k from the position of k, and a row written for other cutoffs (a
collection whose cutoffs changed, pending its rescore) is told apart by its layout.

Per-query values: one column per measure (``ndcg``, ``dcg``, ``judged``, ``ndcg_condensed``),
one float64 per cutoff each: a judgement that moves only the IDCG rewrites two of them, and
a reader of one cutoff reads 8 bytes of a column. Run means are not stored: they are
computed from these values when read (`annotations.selectors.stored_scores`).

The measures a collection keeps beside nDCG@k (AP, P@10, ...) share the row:
``measure_values`` holds one float64 per measure, in the order of the collection's list of
names (stored once, in the collection), and ``measures`` the layout key of that list (16
hex digits of its digest: ``measures_layout``), not the names again. A judgement rewrites
the row it rewrites anyway, 8 bytes longer per measure; a row whose key is not the
collection's holds values of another measure set (pending the rescore that rebuilds it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The per-query measures of a score matrix row (ndcg_arrays.MEASURES).
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


def measures_layout(names: Sequence[str]) -> str:
    """The layout key of a measure set, stored in each row that holds its values: the first
    16 hex digits of the SHA-256 of its names in order, separated by spaces ("" for no
    measure). Rows name their set by it; the names are the collection's, stored once. Two
    orders or spellings of a set are two keys (the collection stores one canonical list)."""
    if any(not name or any(c.isspace() for c in name) for name in names):
        raise ValueError(f"measure names must be non-empty and hold no space: {names!r}")
    if not names:
        return ""
    return hashlib.sha256(" ".join(names).encode()).hexdigest()[:LAYOUT_KEY_LENGTH]


# 64 bits of the digest: a collection's successive sets never meet by chance, and the key
# costs 17 bytes in a row where the names cost about 5 per measure.
LAYOUT_KEY_LENGTH = 16


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
