"""The grade prior of the impact model: P(grade) of an unjudged document by its best rank and
the number of runs retrieving it, estimated from the collection's judged documents."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from annotations.metrics.impact.pool import FloatArray, IntArray, QueryTop, check_scale

__all__ = ["SMOOTHING", "GradePrior", "bucket", "buckets", "grade_prior", "scale_indices"]

SMOOTHING = 4.0  # pseudo-judgements pulling a prior cell towards its parent


def bucket(value: int) -> int:
    """floor(log2(value)) for value >= 1: 1 -> 0, 2-3 -> 1, 4-7 -> 2, 8-15 -> 3, ..."""
    return value.bit_length() - 1


@dataclass(frozen=True)
class GradePrior:
    """P(grade) for an unjudged document by (best-rank bucket, runs bucket); see
    ``grade_prior``. ``table[i, j]`` is a distribution over ``scale``."""

    scale: tuple[int, ...]
    table: FloatArray  # (rank buckets, runs buckets, grades)

    def distribution(self, best_rank: IntArray, runs: IntArray) -> FloatArray:
        """(documents, grades): each document's prior; buckets past the table's last one
        use the last (a deeper k or more runs than the prior was estimated with)."""
        ranks = np.minimum(buckets(best_rank), self.table.shape[0] - 1)
        counts = np.minimum(buckets(runs), self.table.shape[1] - 1)
        distributions: FloatArray = self.table[ranks, counts]
        return distributions


def buckets(values: IntArray) -> IntArray:
    """``bucket`` of every value."""
    return np.array([bucket(int(v)) for v in values], dtype=np.int64).reshape(-1)


def grade_prior(
    queries: Sequence[QueryTop],
    grades: Sequence[IntArray],
    *,
    scale: Sequence[int],
    smoothing: float = SMOOTHING,
) -> GradePrior:
    """The grade distribution of unjudged top-k documents, estimated from the judged ones.

    A document's features are its best rank in any run's top k and the number of runs with
    it in their top k, each bucketed by floor(log2): ranks 1 / 2-3 / 4-7 / 8-15 ..., runs 1 /
    2-3 / 4-7 .... Counts ``n`` of judged top-k documents of every query are smoothed in
    three levels, each towards its parent with ``smoothing`` pseudo-judgements:

    - collection: ``(n_g + 1) / (N + G)`` (Laplace: with nothing judged, uniform over the
      ``G`` grades of the scale);
    - rank bucket: ``(n_g + s * p_collection) / (N + s)``;
    - (rank bucket, runs bucket): ``(n_g + s * p_rank) / (N + s)``.

    So a cell with few judgements borrows from its rank, a rank with few from the whole
    collection, and nothing judged gives the uniform prior. Judged documents outside every
    top k have no features and are not counted. ``grades[q][d]`` is the grade of pool
    document ``d`` of query ``q`` or ``UNJUDGED``; a grade off the scale: ``ValueError``.
    """
    values = check_scale(scale)
    if smoothing <= 0 or not math.isfinite(smoothing):
        raise ValueError(f"smoothing must be a positive number, got {smoothing!r}")
    if len(queries) != len(grades):
        raise ValueError("one grade array per query is required")
    k = max((query.top.shape[1] for query in queries), default=1)
    n_runs = max((query.top.shape[0] for query in queries), default=1)
    shape = (bucket(k) + 1, bucket(max(n_runs, 1)) + 1, len(values))
    counts = np.zeros(shape)
    for query, row in zip(queries, grades, strict=True):
        indices = scale_indices(row, values)
        judged = indices >= 0
        np.add.at(
            counts,
            (buckets(query.best_rank[judged]), buckets(query.runs[judged]), indices[judged]),
            1.0,
        )
    by_rank = counts.sum(axis=1)
    overall = by_rank.sum(axis=0)
    p_collection = (overall + 1.0) / (overall.sum() + len(values))
    p_rank = (by_rank + smoothing * p_collection) / (by_rank.sum(axis=1, keepdims=True) + smoothing)
    table = (counts + smoothing * p_rank[:, None, :]) / (
        counts.sum(axis=2, keepdims=True) + smoothing
    )
    return GradePrior(scale=values, table=table)


def scale_indices(grades: IntArray, scale: tuple[int, ...]) -> IntArray:
    """Index of each grade on the scale, -1 for an unjudged (negative) grade; ``ValueError``
    for a grade off the scale."""
    row = np.asarray(grades, dtype=np.int64)
    positions = np.searchsorted(np.array(scale), row)
    judged = row >= 0
    inside = positions < len(scale)
    if not (inside[judged].all() and (np.array(scale)[positions[judged]] == row[judged]).all()):
        raise ValueError(f"a grade is not on the scale {scale}")
    indices: IntArray = np.where(judged, positions, -1)
    return indices
