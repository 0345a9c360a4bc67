"""All-pairs comparison of runs by the randomised Tukey HSD test, and compact letter displays.

The randomised Tukey HSD test (Carterette, "Multiple testing in statistical analysis of
systems-based information retrieval experiments", TOIS 2012; Sakai 2014) compares every pair
of runs at once and controls the family-wise error rate over all pairs: one null distribution,
that of the range (largest minus smallest) of the run means when every query's scores are
shuffled across the runs, serves every pair. Unlike tests of adjacent runs only, the groups it
yields do not chain: two runs share a letter only when they are not significantly different.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import numpy.typing as npt

from annotations.metrics.significance import (
    TIE_TOLERANCE,
    bootstrap_ci,
    positive_count,
    seeded_generator,
)

__all__ = [
    "AllPairs",
    "PairComparison",
    "below_best",
    "compact_letters",
    "randomised_tukey_hsd",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

# A chunk of permutations holds at most this many shuffled values (4 MiB of float64), or one
# permutation when a single one is larger; with the per-chunk sums that is the whole working
# set, whatever runs x queries x permutations is.
CHUNK_ELEMENTS = 1 << 19

# Letters after "z": "A".."Z", then "aa", "ab", .. (see ``compact_letters``).
_SINGLE_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class PairComparison:
    """One pair of an ``AllPairs`` result, ``first`` against ``second`` (input positions)."""

    first: int
    second: int
    difference: float  # mean of first minus mean of second
    effect_size: float  # difference / sample standard deviation of the per-query differences
    ci_low: float
    ci_high: float
    confidence: float
    p_adjusted: float
    significant: bool


@dataclass(frozen=True, eq=False)
class AllPairs:
    """The randomised Tukey HSD test of every pair of runs; see ``randomised_tukey_hsd``.

    Arrays are read-only and indexed by the input position of the runs (row ``i`` of the
    score matrix is run ``i``): ``means[i]``; ``differences[i, j] = means[i] - means[j]``;
    ``p_adjusted[i, j]`` (symmetric, 1.0 on the diagonal); ``significant[i, j]`` is
    ``p_adjusted[i, j] < alpha`` (False on the diagonal). ``scores`` is the input matrix.
    ``critical`` is the half-width of the simultaneous ``1 - alpha`` intervals
    ``differences[i, j] +- critical``: the smallest shuffled range that an observed
    difference must exceed (by more than the tie tolerance) to be significant, so an
    interval excludes 0 exactly when its pair is significant; ``inf`` when no difference
    can be (too few permutations for ``alpha``), 0.0 with fewer than two runs.
    """

    runs: int
    queries: int
    means: FloatArray
    differences: FloatArray
    p_adjusted: FloatArray
    significant: BoolArray
    alpha: float
    permutations: int
    seed: int
    scores: FloatArray
    critical: float = 0.0

    def pair(
        self,
        first: int,
        second: int,
        *,
        resamples: int = 10_000,
        confidence: float = 0.95,
        seed: int | None = None,
    ) -> PairComparison:
        """Mean difference of run ``first`` minus run ``second``, its effect size and CI.

        - ``difference`` is ``differences[first, second]``.
        - ``effect_size`` is the paired standardised mean difference (Cohen's d_z): the mean
          of the per-query differences ``d_q = scores[first, q] - scores[second, q]`` over
          their sample standard deviation (``ddof=1``). When that spread is zero (one query,
          or the same difference on every query; a spread within ``1e-10 * max|d_q|`` is
          rounding and counts as zero) it is 0.0 for a zero difference and ``+-inf``
          otherwise.
        - ``ci_low, ci_high`` is the paired percentile bootstrap interval of the mean of the
          ``d_q``: ``significance.bootstrap_ci(d, resamples=resamples, confidence=confidence,
          seed=seed)``, ``resamples`` resamples of the queries with replacement, seeded by
          ``seed`` (default: the test's own seed), so the same call gives the same interval.
          It is a per-pair interval, not adjusted for the number of pairs.
        - ``p_adjusted`` and ``significant`` are the pair's entries of the HSD result.

        Raises ``ValueError`` for a position outside ``range(runs)`` and as ``bootstrap_ci``
        does for ``resamples``, ``confidence`` or ``seed``.
        """
        for position in (first, second):
            if (
                isinstance(position, bool)
                or not isinstance(position, Integral)
                or not 0 <= position < self.runs
            ):
                raise ValueError(f"run position must lie in range({self.runs}), got {position!r}")
        i, j = int(first), int(second)
        per_query = self.scores[i] - self.scores[j]
        low, high = bootstrap_ci(
            per_query,
            resamples=resamples,
            confidence=confidence,
            seed=self.seed if seed is None else seed,
        )
        mean = float(per_query.mean())
        spread = float(per_query.std(ddof=1)) if per_query.size > 1 else 0.0
        if spread > TIE_TOLERANCE * float(np.abs(per_query).max()):
            effect = mean / spread
        else:
            effect = 0.0 if mean == 0.0 else float(np.copysign(np.inf, mean))
        return PairComparison(
            first=i,
            second=j,
            difference=float(self.differences[i, j]),
            effect_size=effect,
            ci_low=low,
            ci_high=high,
            confidence=confidence,
            p_adjusted=float(self.p_adjusted[i, j]),
            significant=bool(self.significant[i, j]),
        )

    def letters(self) -> list[str]:
        """``compact_letters(self.means, self.significant)``: one string per run, in order."""
        return compact_letters(self.means, self.significant)

    def below_best(self) -> list[bool]:
        """``below_best(self.means, self.significant)``: one flag per run, in input order."""
        return below_best(self.means, self.significant)


def _score_matrix(scores: npt.ArrayLike) -> FloatArray:
    try:
        matrix = np.array(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("scores must be a (runs x queries) matrix of numbers") from None
    if matrix.ndim == 1 and matrix.size == 0:
        matrix = matrix.reshape(0, 0)
    if matrix.ndim != 2:
        raise ValueError(f"scores must be a (runs x queries) matrix, got {matrix.ndim} dimensions")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("scores must be finite (no NaN or infinity)")
    if matrix.shape[0] and not matrix.shape[1]:
        raise ValueError("scores need at least one query to compare runs on")
    return matrix


def _range_distribution(
    matrix: FloatArray, permutations: int, seed: int, chunk_permutations: int | None
) -> FloatArray:
    """Range (max - min) of the run means under ``permutations`` within-query shuffles."""
    runs, queries = matrix.shape
    if chunk_permutations is None:
        rows = max(1, CHUNK_ELEMENTS // (runs * queries))
    else:
        rows = int(chunk_permutations)
    rows = min(rows, permutations)
    rng = seeded_generator(seed)
    # block[b, q, :] is query q's values across the runs, contiguous, for permutation b.
    by_query = np.ascontiguousarray(matrix.T)
    block = np.empty((rows, queries, runs), dtype=np.float64)
    ranges = np.empty(permutations, dtype=np.float64)
    for start in range(0, permutations, rows):
        count = min(rows, permutations - start)
        view = block[:count]
        view[...] = by_query
        # One Fisher-Yates shuffle per (permutation, query), in C order of (b, q): the stream
        # is consumed in the same order however the permutations are chunked.
        rng.permuted(view, axis=2, out=view)
        means = view.sum(axis=1) / queries  # (count, runs)
        ranges[start : start + count] = means.max(axis=1) - means.min(axis=1)
    return ranges


def randomised_tukey_hsd(
    scores: npt.ArrayLike,
    *,
    permutations: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    chunk_permutations: int | None = None,
) -> AllPairs:
    """Randomised Tukey HSD test of every pair of runs over a (runs x queries) score matrix.

    ``scores[i, q]`` is run ``i``'s score on query ``q``; every run is scored on the same
    queries in the same column order. Conventions:

    - Observed statistic of the pair ``(i, j)``: ``|mean_i - mean_j|``, the row means.
    - Null distribution: ``permutations`` times, every query's (column's) values are shuffled
      across the runs, each column by its own random permutation, and the range
      ``max_r mean_r - min_r mean_r`` of the shuffled matrix's row means is recorded. Under
      the null hypothesis that the runs are exchangeable on every query, the range bounds
      every pair's difference at once, which is what controls the family-wise error rate.
    - Random stream: ``numpy.random.Generator(PCG64(seed))``; for permutation ``b = 0, 1, ..``
      and within it query ``q = 0, 1, ..``, one Fisher-Yates shuffle of the column's run
      values exactly as ``Generator.shuffle`` (equivalently ``Generator.permutation(runs)``
      applied to the column) would do it. Permutations are generated ``chunk_permutations``
      at a time (default: as many as fit in 4 MiB of values, at least one), so memory stays
      bounded; the chunking never changes the stream, hence never the result: the same
      matrix and seed give the same p-values whatever ``chunk_permutations`` is.
    - Adjusted p-value: ``(1 + #{b : range_b >= |mean_i - mean_j|}) / (1 + permutations)``,
      the observed assignment counted as one of the permutations (Phipson and Smyth, 2010);
      never 0. Shuffled means that equal the observed ones mathematically can differ by
      rounding, so a range within ``1e-10 * max|scores|`` below the observed difference
      still counts as reaching it. ``p_adjusted`` is symmetric with 1.0 on the diagonal;
      ``significant`` is ``p_adjusted < alpha``, strictly, so False on the diagonal.

    Identical rows give every p-value 1.0. One run gives 1 x 1 matrices without shuffling,
    and no runs (an empty sequence or a (0, n) matrix) give empty ones. Raises ``ValueError``
    for a matrix that is not two-dimensional or holds NaN or infinity, runs with no query,
    ``permutations < 1``, a negative seed, ``alpha`` outside (0, 1] or
    ``chunk_permutations < 1``.
    """
    matrix = _score_matrix(scores)
    positive_count(permutations, "permutations")
    if chunk_permutations is not None:
        positive_count(chunk_permutations, "chunk_permutations")
    seeded_generator(seed)
    if not (isinstance(alpha, Real) and 0.0 < alpha <= 1.0):  # also rejects NaN
        raise ValueError(f"alpha must lie in (0, 1], got {alpha!r}")
    runs, queries = matrix.shape
    means = matrix.mean(axis=1) if runs else np.empty(0, dtype=np.float64)
    differences = means[:, None] - means[None, :]
    p_adjusted = np.ones((runs, runs), dtype=np.float64)
    critical = 0.0
    if runs > 1:
        ranges = np.sort(
            _range_distribution(matrix, int(permutations), int(seed), chunk_permutations)
        )
        tolerance = TIE_TOLERANCE * float(np.abs(matrix).max())
        thresholds = np.abs(differences) - tolerance
        # The first sorted range >= the threshold: every later one reaches it too.
        reaching = permutations - np.searchsorted(ranges, thresholds, side="left")
        p_adjusted = (1.0 + reaching) / (1.0 + permutations)
        np.fill_diagonal(p_adjusted, 1.0)
        # p < alpha  <=>  reaching < alpha (1 + B) - 1  <=>  reaching <= allowed
        allowed = math.ceil(alpha * (1.0 + permutations) - 1.0) - 1
        critical = float(ranges[permutations - 1 - allowed]) if allowed >= 0 else math.inf
    significant = p_adjusted < alpha
    for array in (matrix, means, differences, p_adjusted, significant):
        array.setflags(write=False)
    return AllPairs(
        runs=runs,
        queries=queries,
        means=means,
        differences=differences,
        p_adjusted=p_adjusted,
        significant=significant,
        alpha=float(alpha),
        permutations=int(permutations),
        seed=int(seed),
        scores=matrix,
        critical=critical,
    )


# --- compact letter display ---------------------------------------------------------------


def _means_and_significance(
    means: Sequence[float] | FloatArray, significant: npt.ArrayLike
) -> tuple[FloatArray, BoolArray]:
    try:
        values = np.asarray(means, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("means must be a sequence of numbers") from None
    if values.ndim != 1:
        raise ValueError("means must be a flat sequence of numbers")
    if not np.all(np.isfinite(values)):
        raise ValueError("means must be finite (no NaN or infinity)")
    matrix = np.asarray(significant)
    count = values.size
    if count == 0 and matrix.size == 0:
        return values, np.zeros((0, 0), dtype=np.bool_)
    if matrix.dtype != np.bool_:
        raise ValueError("significant must be a matrix of booleans")
    if matrix.shape != (count, count):
        raise ValueError(f"significant must be {count} x {count}, got shape {matrix.shape}")
    if not np.array_equal(matrix, matrix.T):
        raise ValueError("significant must be symmetric")
    if np.any(np.diagonal(matrix)):
        raise ValueError("significant must be False on the diagonal (no run differs from itself)")
    return values, matrix


def _interval_groups(separated: BoolArray) -> list[tuple[int, ...]] | None:
    """Maximal groups when, in rank order, every run's non-separated successors form one
    contiguous stretch ending no earlier than its predecessor's; else None."""
    count = separated.shape[0]
    ends: list[int] = []
    for start in range(count):
        row = separated[start, start:]  # row[0] is the diagonal: False
        length = int(np.argmax(row)) if row.any() else row.size
        if row[length:].size and not row[length:].all():
            return None
        end = start + length - 1
        if ends and end < ends[-1]:
            return None
        ends.append(end)
    groups: list[tuple[int, ...]] = []
    for start, end in enumerate(ends):
        if start == 0 or end > ends[start - 1]:
            groups.append(tuple(range(start, end + 1)))
    return groups


def _insert_and_absorb(separated: BoolArray) -> list[tuple[int, ...]]:
    """Piepho's (2004) insert-and-absorb algorithm, then his sweep of redundant letters."""
    count = separated.shape[0]
    columns = [(1 << count) - 1]  # bit r set: the run at rank position r carries the letter
    for first in range(count):
        for second in range(first + 1, count):
            if not separated[first, second]:
                continue
            both = (1 << first) | (1 << second)
            kept = [column for column in columns if column & both != both]
            if len(kept) == len(columns):
                continue
            for column in columns:
                if column & both != both:
                    continue
                for part in (column & ~(1 << first), column & ~(1 << second)):
                    if not any(part | other == other for other in kept):
                        kept.append(part)
            columns = kept
    # Sweep: drop a letter when every run holding it, and every pair of them, keeps a common
    # letter elsewhere; the display stays valid and gets shorter.
    columns.sort(key=lambda column: (-column.bit_count(), column))
    position = 0
    while position < len(columns):
        column = columns[position]
        others = columns[:position] + columns[position + 1 :]
        members = [r for r in range(count) if column >> r & 1]
        redundant = all(
            any(other >> p & 1 and other >> q & 1 for other in others)
            for index, p in enumerate(members)
            for q in members[index:]
        )
        if redundant:
            columns.pop(position)
        else:
            position += 1
    return [tuple(r for r in range(count) if column >> r & 1) for column in columns]


def _letter(index: int) -> str:
    if index < len(_SINGLE_LETTERS):
        return _SINGLE_LETTERS[index]
    # Bijective base 26 in lower case, from two letters on: 52 -> "aa", 53 -> "ab", ..
    number = index - len(_SINGLE_LETTERS) + 27
    letters: list[str] = []
    while number:
        number, digit = divmod(number - 1, 26)
        letters.append(_SINGLE_LETTERS[digit])
    return "".join(reversed(letters))


def compact_letters(means: Sequence[float] | FloatArray, significant: npt.ArrayLike) -> list[str]:
    """Compact letter display: runs that share a letter are not significantly different.

    ``means[i]`` is run ``i``'s mean and ``significant`` the symmetric boolean matrix of
    significant pairs (False on the diagonal), e.g. an ``AllPairs``' ``means`` and
    ``significant``. Returns one string per run, in input order. Guarantees: every pair that
    is not significant shares at least one letter and every significant pair shares none.

    - Rank order: runs sorted by mean, highest first, ties by input position. Letters are
      given in that order: the best run carries "a", and letter ``n + 1`` is the letter
      whose best-ranked run ranks next (ties: the next-ranked runs decide).
    - Letters: "a".."z", then "A".."Z", then "aa", "ab", .., "zz", "aaa", ... When every
      letter is a single character a run's letters are concatenated ("ab"); when more than
      52 letters are needed they are joined by single spaces ("b aa") to stay unambiguous.
    - Significance consistent with the rank order (for ranks ``i < j < k``, ``i`` and ``k``
      not significantly different implies neither are ``i, j`` nor ``j, k``), which the
      Tukey HSD test always gives since its p-value falls as ``|mean_i - mean_j|`` grows:
      the letters are the maximal stretches of consecutive runs without a significant pair,
      in O(runs^2). Each covers a pair no other does, so none is redundant.
    - Any other pattern: Piepho's insert-and-absorb algorithm (2004) with his sweep of
      redundant letters. It is deterministic, but on large irregular patterns slow (the
      number of maximal groups can grow exponentially with the runs).

    No runs give ``[]``. Raises ``ValueError`` for non-finite means, a significance matrix of
    the wrong shape, not boolean, not symmetric or True on the diagonal.
    """
    values, matrix = _means_and_significance(means, significant)
    count = values.size
    if count == 0:
        return []
    order = sorted(range(count), key=lambda run: (-values[run], run))
    ranked = matrix[np.ix_(order, order)]
    groups = _interval_groups(ranked)
    if groups is None:
        groups = _insert_and_absorb(ranked)
    groups.sort()
    names = [_letter(index) for index in range(len(groups))]
    separator = "" if len(groups) <= len(_SINGLE_LETTERS) else " "
    held: list[list[str]] = [[] for _ in range(count)]
    for name, group in zip(names, groups, strict=True):
        for position in group:
            held[position].append(name)
    result = [""] * count
    for position, run in enumerate(order):
        result[run] = separator.join(held[position])
    return result


def below_best(means: Sequence[float] | FloatArray, significant: npt.ArrayLike) -> list[bool]:
    """Whether each run is significantly below the best run, in input order.

    The best run is the one with the highest mean (the first in input order among equal
    highest means); run ``i`` is flagged when ``significant[best, i]``. The best run itself,
    and any run tied with it that is not significantly different from it, is not flagged.
    No runs give ``[]``. Raises ``ValueError`` as ``compact_letters`` does.
    """
    values, matrix = _means_and_significance(means, significant)
    if values.size == 0:
        return []
    best = int(np.argmax(values))
    return [bool(flag) for flag in matrix[best]]
