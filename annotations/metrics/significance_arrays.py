"""Bootstrap CIs and paired randomization tests for many runs at once, bit for bit as one by one.

The leaderboard needs a bootstrap CI for every run and a randomization test for every adjacent
pair. Run one by one (``significance.bootstrap_ci``, ``significance.paired_randomization_test``)
each call regenerates the same random draws from the same seed and reduces them alone: at
110 runs x 249 queries that is seconds. Here the draws are generated once per (queries,
resamples, seed), kept while they are small, and every run is reduced against them in one
matrix product. Matrix products round differently from the per-run reductions, so wherever
rounding could matter the per-run arithmetic is redone for just those few draws; the results
are therefore *identical* to the one-by-one functions, not merely close (tested property).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from annotations.metrics.significance import (
    CHUNK_ELEMENTS,
    TIE_TOLERANCE,
    finite_array,
    paired_differences,
    positive_count,
    seeded_generator,
)

__all__ = ["bootstrap_cis", "draws_warm", "paired_randomization_tests"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Draws are kept (per process) only while one set stays under this many elements: 249 queries
# x 10,000 resamples is 2.5 M (about 30 MB with the counts). Larger sets are never held
# whole: they are generated block by block from the seeded stream, as the one-run functions
# draw them, and generated again for the few resamples the exact pass redoes, so memory stays
# at a block (``CHUNK_ELEMENTS``) plus the runs x resamples means whatever the query count.
_CACHE_ELEMENTS = 1 << 23

# Runs whose resample means are ordered at once: bounds the sort's copy and the masks to
# about this many doubles each, whatever the run count.
_GROUP_ELEMENTS = 1 << 21

# Double rounding bound per unit of sum|x|: a sum of n terms computed in any order is within
# n * u * sum|x| of the exact sum (u = 2^-53); two such sums differ by at most twice that. A
# margin of four times covers both sides of every comparison below with room to spare.
_UNIT = float(np.finfo(np.float64).eps) / 2


def _chunks(count: int, size: int) -> Iterator[tuple[int, int]]:
    """The (start, stop) row blocks the one-run functions draw in (they fix the RNG stream)."""
    rows = max(1, CHUNK_ELEMENTS // size)
    for start in range(0, count, rows):
        yield start, min(start + rows, count)


def _draw_indices(size: int, resamples: int, seed: int) -> tuple[IntArray, FloatArray]:
    """The bootstrap's resample indices exactly as ``bootstrap_ci`` draws them, and per-row
    multiplicities (row r, column j: how often query j is in resample r)."""
    rng = seeded_generator(seed)
    indices = np.empty((resamples, size), dtype=np.int64)
    for start, stop in _chunks(resamples, size):
        indices[start:stop] = rng.integers(0, size, size=(stop - start, size))
    offsets = indices + (np.arange(resamples, dtype=np.int64) * size)[:, None]
    counts = np.bincount(offsets.ravel(), minlength=resamples * size).reshape(resamples, size)
    return indices, counts.astype(np.float64)


def _draw_signs(size: int, permutations: int, seed: int) -> FloatArray:
    """The sign vectors exactly as ``paired_randomization_test`` draws them."""
    rng = seeded_generator(seed)
    signs = np.empty((permutations, size), dtype=np.float64)
    for start, stop in _chunks(permutations, size):
        draws = rng.integers(0, 2, size=(stop - start, size))
        signs[start:stop] = np.where(draws != 0, -1.0, 1.0)
    return signs


@functools.lru_cache(maxsize=4)
def _cached_indices(size: int, resamples: int, seed: int) -> tuple[IntArray, FloatArray]:
    indices, counts = _draw_indices(size, resamples, seed)
    indices.setflags(write=False)
    counts.setflags(write=False)
    return indices, counts


@functools.lru_cache(maxsize=4)
def _cached_signs(size: int, permutations: int, seed: int) -> FloatArray:
    signs = _draw_signs(size, permutations, seed)
    signs.setflags(write=False)
    return signs


def _cached(size: int, draws: int) -> bool:
    return size * draws <= _CACHE_ELEMENTS


def _index_blocks(
    size: int, resamples: int, seed: int
) -> Iterator[tuple[int, int, IntArray, FloatArray]]:
    """(start, stop, indices, counts) for each block of resamples, in stream order: slices of
    the kept draws when they are small, else each block generated and dropped in turn."""
    if _cached(size, resamples):
        indices, counts = _cached_indices(size, resamples, seed)
        for start, stop in _chunks(resamples, size):
            yield start, stop, indices[start:stop], counts[start:stop]
        return
    rng = seeded_generator(seed)
    for start, stop in _chunks(resamples, size):
        block = rng.integers(0, size, size=(stop - start, size))
        offsets = block + (np.arange(stop - start, dtype=np.int64) * size)[:, None]
        tally = np.bincount(offsets.ravel(), minlength=(stop - start) * size)
        yield start, stop, block, tally.reshape(stop - start, size).astype(np.float64)


def _sign_blocks(size: int, permutations: int, seed: int) -> Iterator[tuple[int, int, FloatArray]]:
    """(start, stop, signs) for each block of permutations, in stream order (kept or not, as
    ``_index_blocks``)."""
    if _cached(size, permutations):
        signs = _cached_signs(size, permutations, seed)
        for start, stop in _chunks(permutations, size):
            yield start, stop, signs[start:stop]
        return
    rng = seeded_generator(seed)
    for start, stop in _chunks(permutations, size):
        draws = rng.integers(0, 2, size=(stop - start, size))
        yield start, stop, np.where(draws != 0, -1.0, 1.0)


def draws_warm(
    size: int, *, resamples: int = 10_000, permutations: int = 10_000, seed: int = 0
) -> None:
    """Make (and keep) the draws for `size` queries now, so the first leaderboard a process
    computes does not pay for them (a web worker calls this as it starts)."""
    if size >= 1 and _cached(size, resamples):
        _cached_indices(size, resamples, seed)
    if size >= 1 and _cached(size, permutations):
        _cached_signs(size, permutations, seed)


def _by_size(lengths: Sequence[int]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for position, length in enumerate(lengths):
        groups.setdefault(length, []).append(position)
    return groups


# --- bootstrap ----------------------------------------------------------------------------


def bootstrap_cis(
    rows: Sequence[Sequence[float] | FloatArray],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """``significance.bootstrap_ci`` of every row (one run's per-query values), identical bits.

    Rows may differ in length; rows of one length share one set of draws. For each run the
    resample means come from one product of the multiplicity matrix with the run's values.
    That product rounds differently from ``bootstrap_ci``'s mean of gathered values, by at
    most ``delta = 3 n u max|x|``. The percentile interval reads only a few order
    statistics of the means; every resample whose approximate mean lies within ``5 delta`` of
    the range of approximate order statistics that one quantile reads is recomputed exactly as
    ``bootstrap_ci`` does. Any other resample is more than ``3 delta`` from every true order
    statistic read, so its approximate mean sits on the same side of each as its exact
    mean, and the quantiles of the mixed vector equal those of the exact one.
    Raises ``ValueError`` as ``bootstrap_ci`` does, for any row.
    """
    positive_count(resamples, "resamples")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    seeded_generator(seed)  # validates the seed
    data = [finite_array(row, "values") for row in rows]
    if any(row.size == 0 for row in data):
        raise ValueError("bootstrap_ci needs at least one value")
    results: list[tuple[float, float] | None] = [None] * len(data)
    varying: list[int] = []
    for position, row in enumerate(data):
        if np.all(row == row[0]):
            results[position] = (float(row[0]), float(row[0]))
        else:
            varying.append(position)
    tail = (1.0 - confidence) / 2.0
    quantiles = [tail, 1.0 - tail]
    needed = _order_positions(resamples, quantiles)
    for size, members in _by_size([data[p].size for p in varying]).items():
        positions = [varying[m] for m in members]
        matrix = np.stack([data[p] for p in positions], axis=1)  # (size, runs)
        # (runs, resamples), each run's means contiguous, block by block of the stream
        means = np.empty((len(positions), resamples), dtype=np.float64)
        for start, stop, _, counts in _index_blocks(size, resamples, seed):
            means[:, start:stop] = ((counts @ matrix) / size).T
        margins = 16.0 * size * _UNIT * np.abs(matrix).max(axis=0)  # per run
        group = max(1, _GROUP_ELEMENTS // resamples)
        chosen: list[IntArray] = []
        for first in range(0, len(positions), group):
            chosen.extend(
                _near_order(means[first : first + group], margins[first : first + group], needed)
            )
        # The chosen resamples' means again, as bootstrap_ci takes them, block by block.
        if any(picked.size for picked in chosen):
            for start, stop, indices, _ in _index_blocks(size, resamples, seed):
                for column, position in enumerate(positions):
                    picked = chosen[column]
                    inside = picked[(picked >= start) & (picked < stop)]
                    if inside.size:
                        exact = data[position][indices[inside - start]].mean(axis=1)
                        means[column, inside] = exact
        for first in range(0, len(positions), group):
            part = means[first : first + group]
            # numpy's quantile reads the order statistics at ``needed`` only, so any rows
            # holding those same order statistics there give the same quantiles (unless a
            # zero's sign could move, as in ``_near_order``).
            if not (part == 0.0).any():
                part = _order_statistics_rows(part, needed)
            bounds = np.quantile(part, quantiles, axis=1)  # (2, runs in the group)
            for offset in range(part.shape[0]):
                results[positions[first + offset]] = (
                    float(bounds[0, offset]),
                    float(bounds[1, offset]),
                )
    return [result for result in results if result is not None]


def _near_order(means: FloatArray, margins: FloatArray, needed: Sequence[int]) -> list[IntArray]:
    """Per row of approximate ``means``, the resamples within ``margins`` of the order
    statistics at ``needed`` that a quantile reads: those the exact pass recomputes."""
    # A partition at the few positions read costs a fraction of a sort of 10,000 means.
    order = np.partition(means, needed, axis=1)[:, needed]  # (runs, positions)
    near = np.zeros(means.shape, dtype=bool)
    for cluster in _clusters(needed):
        low = order[:, cluster].min(axis=1) - margins
        high = order[:, cluster].max(axis=1) + margins
        near |= (means >= low[:, None]) & (means <= high[:, None])
    return [np.flatnonzero(row) for row in near]


def _order_statistics_rows(part: FloatArray, needed: Sequence[int]) -> FloatArray:
    """Sorted rows as long as `part`'s that hold its rows' order statistics at `needed` (the
    positions a quantile reads) and, between them, copies of the one before: a quantile of
    them reads the same values as of `part`, and finds them in place instead of partitioning
    10,000 means again. `part` is partitioned in place."""
    part.partition(needed, axis=1)
    rows = np.empty_like(part)
    start = 0
    for index, position in enumerate(needed):
        stop = needed[index + 1] if index + 1 < len(needed) else part.shape[1]
        rows[:, start:stop] = part[:, position : position + 1]
        start = stop
    return rows


def _clusters(positions: Sequence[int]) -> list[list[int]]:
    """Indices into `positions` grouped into runs of neighbouring positions (one per quantile):
    a resample near any order statistic of a group lies within the group's range +- margin."""
    groups: list[list[int]] = []
    for index, position in enumerate(positions):
        if groups and position - positions[groups[-1][-1]] <= 1:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _order_positions(count: int, quantiles: Sequence[float]) -> list[int]:
    """Sorted positions around every quantile's virtual index (numpy's linear method reads
    the floor and the next one); one more on each side absorbs rounding of q * (n - 1)."""
    positions: set[int] = set()
    for q in quantiles:
        base = int(np.floor(q * (count - 1)))
        positions.update(p for p in range(base - 1, base + 3) if 0 <= p < count)
    return sorted(positions)


# --- randomization test -------------------------------------------------------------------


def paired_randomization_tests(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    permutations: int = 10_000,
    seed: int = 0,
) -> list[float]:
    """``significance.paired_randomization_test(a, b)`` (Monte Carlo) of every pair, same bits.

    Pairs of one length share the sign matrix, and all their flipped sums come from one
    matrix product. A flipped sum the product puts within ``4 n u sum|d|`` of the threshold
    is decided again with the one-pair arithmetic (the same block product), so every count,
    and every p-value, equals the one-pair function's. Raises ``ValueError`` as it does.
    """
    positive_count(permutations, "permutations")
    seeded_generator(seed)
    differences = [paired_differences(a, b) for a, b in pairs]
    if any(d.size == 0 for d in differences):
        raise ValueError("paired_randomization_test needs at least one query")
    results = [1.0] * len(differences)
    active = [p for p, d in enumerate(differences) if np.any(d)]
    for size, members in _by_size([differences[p].size for p in active]).items():
        positions = [active[m] for m in members]
        matrix = np.stack([differences[p] for p in positions], axis=1)  # (size, pairs)
        # One-dimensional sums, as the one-pair function takes them (same rounding).
        absolute = np.array([float(np.abs(differences[p]).sum()) for p in positions])
        thresholds = np.array(
            [
                abs(float(differences[p].sum())) - TIE_TOLERANCE * float(absolute[c])
                for c, p in enumerate(positions)
            ]
        )
        margins = 8.0 * size * _UNIT * absolute
        hits = np.zeros(len(positions), dtype=np.int64)
        for _, _, signs in _sign_blocks(size, permutations, seed):
            block = np.abs(signs @ matrix)  # (rows, pairs)
            hits += np.count_nonzero(block >= thresholds, axis=0)
            unsure = np.abs(block - thresholds) <= margins
            for column in np.flatnonzero(unsure.any(axis=0)):
                exact = np.abs(signs @ matrix[:, column])
                approximate_hits = np.count_nonzero(block[:, column] >= thresholds[column])
                hits[column] += np.count_nonzero(exact >= thresholds[column]) - approximate_hits
        for index, position in enumerate(positions):
            results[position] = (int(hits[index]) + 1) / (permutations + 1)
    return results
