"""One query's top k of every run as arrays: the pool and the rank weights of the impact model."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["UNJUDGED", "FloatArray", "IntArray", "QueryTop", "check_scale", "discounts"]

UNJUDGED = -1  # the grade of an unjudged document in the array interface

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def discounts(k: int) -> FloatArray:
    """1 / log2(r + 1) for ranks r = 1..k, from the same doubles as ``ndcg.dcg``."""
    return np.array([1.0 / math.log2(i + 2) for i in range(k)])


def check_scale(scale: Sequence[int]) -> tuple[int, ...]:
    """The grade scale sorted and deduplicated; ``ValueError`` unless integers >= 0 (a
    negative grade means unjudged, as in ``ndcg.is_judged``)."""
    values = tuple(sorted(set(scale)))
    if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"a grade scale is one or more integers, got {scale!r}")
    if values[0] < 0:
        raise ValueError(f"grades on the scale must be >= 0 (negative means unjudged): {scale!r}")
    return values


@dataclass(frozen=True)
class QueryTop:
    """One query's top k of every run, as arrays: the input of ``impact_compute``.

    ``top[a, i]`` is the pool index of the document run ``a`` ranks at ``i + 1`` (ranks in
    effective order, see ``ndcg.order_ranking``), ``-1`` past the end of a short ranking
    or for a run without the query (it scores 0 there, as ``ndcg.run_mean`` counts it).
    The pool is ``0 .. pool - 1``: every document some run has in its top k.
    """

    top: IntArray  # (runs, k)
    weights: FloatArray  # (runs, pool): c[a, d]
    best_rank: IntArray  # (pool,) the best 1-based rank any run gives d
    runs: IntArray  # (pool,) how many runs have d in their top k

    @classmethod
    def of(cls, top: Sequence[Sequence[int]] | IntArray, pool: int) -> "QueryTop":
        """Build from the ``(runs, k)`` index matrix; ``ValueError`` on an index outside the
        pool, a document twice in one ranking, a pool document no run retrieves, or a gap
        (a document after a ``-1``)."""
        matrix = np.asarray(top, dtype=np.int64)
        if matrix.ndim != 2 or matrix.shape[1] < 1:
            raise ValueError("top must be a (runs, k) matrix with k >= 1")
        n_runs, k = matrix.shape
        if ((matrix < -1) | (matrix >= pool)).any():
            raise ValueError(f"a top-k index lies outside the pool 0..{pool - 1}")
        present = matrix >= 0
        if (present[:, 1:] & ~present[:, :-1]).any():
            raise ValueError("a ranking has a document after its end (-1 then an index)")
        ordered = np.sort(matrix, axis=1)
        twice = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1)
        if twice.any():
            raise ValueError(f"run {int(np.flatnonzero(twice)[0])} ranks a document twice")
        # Rankings have no gaps, so a present entry's column is its 0-based rank.
        rows, ranks = np.nonzero(present)
        documents = matrix[rows, ranks]
        weights = np.zeros((n_runs, pool))
        weights[rows, documents] = discounts(k)[ranks]
        best = np.full(pool, k + 1, dtype=np.int64)
        np.minimum.at(best, documents, ranks + 1)
        runs = np.zeros(pool, dtype=np.int64)
        np.add.at(runs, matrix[present], 1)
        if (runs == 0).any():
            raise ValueError("a pool document is in no run's top k")
        return cls(top=matrix, weights=weights, best_rank=best, runs=runs)
