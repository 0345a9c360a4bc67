"""System comparison statistics over per-query scores: bootstrap, randomization, Holm, tiers."""

from collections.abc import Sequence
from numbers import Integral

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_EXACT_QUERIES",
    "bootstrap_ci",
    "holm",
    "paired_randomization_test",
    "rank_tiers",
    "win_tie_loss",
]

FloatArray = npt.NDArray[np.float64]

# Resampling draws at most this many indices or signs at a time (8 MiB of int64), so memory
# stays bounded however many queries or resamples are asked for.
CHUNK_ELEMENTS = 1 << 20

# exact=True enumerates 2^n sign flips; 2^20 is about a million, still well under a second.
MAX_EXACT_QUERIES = 20

# Sign-flipped sums that equal the observed sum mathematically can differ from it by
# floating-point rounding (about n * eps * sum|d|); within this share of sum|d| they tie.
TIE_TOLERANCE = 1e-10


def finite_array(values: Sequence[float] | FloatArray, name: str) -> FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


def paired_differences(a: Sequence[float], b: Sequence[float]) -> FloatArray:
    first = finite_array(a, "a")
    second = finite_array(b, "b")
    if first.size != second.size:
        raise ValueError(
            f"a and b must score the same queries in the same order: {first.size} != {second.size}"
        )
    return first - second


def positive_count(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def seeded_generator(seed: int) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.Generator(np.random.PCG64(int(seed)))


def _probability(value: float, name: str) -> None:
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")


def bootstrap_ci(
    values: Sequence[float],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean over queries.

    Draws ``resamples`` samples of ``len(values)`` queries with replacement from
    ``numpy.random.Generator(PCG64(seed))``, takes each sample's mean and returns the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those means
    (numpy's default linear interpolation, as ``scipy.stats.bootstrap(method="percentile")``).
    The result depends only on the arguments: same inputs and seed, same interval,
    whatever the chunking used to bound memory.

    One value, or values that are all equal, give ``(v, v)`` without resampling.
    Raises ``ValueError`` for no values, non-finite values, ``resamples < 1``,
    ``confidence`` outside (0, 1) or a negative seed.
    """
    data = finite_array(values, "values")
    if data.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    positive_count(resamples, "resamples")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    rng = seeded_generator(seed)
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])

    size = data.size
    rows = max(1, CHUNK_ELEMENTS // size)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        indices = rng.integers(0, size, size=(stop - start, size))
        means[start:stop] = data[indices].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def _count_at_least(signs: FloatArray, differences: FloatArray, threshold: float) -> int:
    return int(np.count_nonzero(np.abs(signs @ differences) >= threshold))


def paired_randomization_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    permutations: int = 10_000,
    seed: int = 0,
    exact: bool = False,
) -> float:
    """Two-sided paired randomization (sign-flip) test of the mean difference ``a - b``.

    ``a[i]`` and ``b[i]`` are two systems' scores on the same query ``i``. Under the null
    hypothesis the two systems are exchangeable on every query, so each difference
    ``d_i = a_i - b_i`` is equally likely to carry either sign. The statistic is
    ``|mean(s * d)|`` over sign vectors ``s``; a flip counts as at least as extreme when
    it reaches ``|mean(d)|`` (sums within 1e-10 * sum|d| of it tie, absorbing rounding).

    - Monte Carlo (default): ``permutations`` random sign vectors from
      ``numpy.random.Generator(PCG64(seed))``; ``p = (hits + 1) / (permutations + 1)``,
      counting the observed assignment as one of the permutations (Phipson and Smyth,
      2010). It is never 0, and is a valid, slightly conservative p-value.
    - ``exact=True``: enumerates all ``2^n`` sign vectors (``n <= MAX_EXACT_QUERIES``);
      ``p = hits / 2^n``, the identity included. ``permutations`` and ``seed`` are
      ignored. Equals ``scipy.stats.permutation_test(permutation_type="samples")``.

    All differences zero gives ``p = 1.0``. Raises ``ValueError`` when ``a`` and ``b``
    differ in length or are empty, hold non-finite values, for ``permutations < 1``, a
    negative seed, or ``exact=True`` with more than ``MAX_EXACT_QUERIES`` queries.
    """
    differences = paired_differences(a, b)
    size = differences.size
    if size == 0:
        raise ValueError("paired_randomization_test needs at least one query")
    positive_count(permutations, "permutations")
    rng = seeded_generator(seed)
    if exact and size > MAX_EXACT_QUERIES:
        raise ValueError(
            f"exact=True enumerates 2^n sign flips; n={size} exceeds {MAX_EXACT_QUERIES}"
        )
    if not np.any(differences):
        return 1.0

    # Sums rather than means: the same ordering, one division fewer.
    threshold = abs(float(differences.sum())) - TIE_TOLERANCE * float(np.abs(differences).sum())
    rows = max(1, CHUNK_ELEMENTS // size)
    hits = 0
    if exact:
        total = 1 << size
        bits = np.left_shift(1, np.arange(size, dtype=np.int64))
        for start in range(0, total, rows):
            codes = np.arange(start, min(start + rows, total), dtype=np.int64)
            signs = np.where((codes[:, None] & bits) != 0, -1.0, 1.0)
            hits += _count_at_least(signs, differences, threshold)
        return hits / total

    for start in range(0, permutations, rows):
        count = min(rows, permutations - start)
        signs = np.where(rng.integers(0, 2, size=(count, size)) != 0, -1.0, 1.0)
        hits += _count_at_least(signs, differences, threshold)
    return (hits + 1) / (permutations + 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, returned in input order.

    With the ``m`` p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted
    value is ``max_{j <= i} min(1, (m - j + 1) * p_(j))``: step-down, monotone in the
    sorted order and capped at 1. Reject hypothesis ``i`` at level alpha when its adjusted
    p-value is ``< alpha`` (or ``<=``, as the caller's convention goes); this controls the
    family-wise error rate. Ties receive equal adjusted values. No p-values give ``[]``.
    Raises ``ValueError`` for a p-value outside [0, 1] or NaN.
    """
    raw = finite_array(pvalues, "pvalues")
    for value in raw:
        _probability(float(value), "every p-value")
    count = raw.size
    if count == 0:
        return []
    order = np.argsort(raw, kind="stable")
    multipliers = np.arange(count, 0, -1, dtype=np.float64)
    stepped = np.minimum(1.0, np.maximum.accumulate(raw[order] * multipliers))
    adjusted = np.empty(count, dtype=np.float64)
    adjusted[order] = stepped
    return [float(value) for value in adjusted]


def rank_tiers(
    means: Sequence[float],
    adjusted_p_between_adjacent: Sequence[float],
    alpha: float = 0.05,
) -> list[int]:
    """Group runs sorted by mean score into tiers of statistically tied systems.

    ``means`` must already be sorted descending (ties allowed);
    ``adjusted_p_between_adjacent[i]`` is the (Holm-)adjusted p-value comparing run ``i``
    with run ``i + 1``, so it has ``len(means) - 1`` entries. Tiers are numbered from 1;
    a new tier starts after every adjacent pair whose difference is significant
    (adjusted p ``< alpha``, strictly). Tiers chain: if A~B and B~C are not significant,
    A, B and C share a tier even if A vs C would be, so a shared tier means "not separable
    step by step", not "pairwise indistinguishable". No runs give ``[]``.
    Raises ``ValueError`` for unsorted or non-finite means, a wrong number of p-values,
    p-values outside [0, 1] or ``alpha`` outside (0, 1].
    """
    scores = finite_array(means, "means")
    pvalues = finite_array(adjusted_p_between_adjacent, "adjusted_p_between_adjacent")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha!r}")
    if scores.size == 0:
        if pvalues.size:
            raise ValueError("adjusted_p_between_adjacent must be empty when means is")
        return []
    if pvalues.size != scores.size - 1:
        raise ValueError(
            f"need len(means) - 1 = {scores.size - 1} adjacent p-values, got {pvalues.size}"
        )
    if np.any(np.diff(scores) > 0):
        raise ValueError("means must be sorted in descending order")
    for value in pvalues:
        _probability(float(value), "every adjacent p-value")
    tiers = [1]
    for pvalue in pvalues:
        tiers.append(tiers[-1] + (1 if pvalue < alpha else 0))
    return tiers


def win_tie_loss(
    a: Sequence[float], b: Sequence[float], *, tolerance: float = 0.0
) -> tuple[int, int, int]:
    """Count the queries where system ``a`` beats, ties with and loses to system ``b``.

    Paired by position: query ``i`` is a win when ``a[i] - b[i] > tolerance``, a loss
    when ``b[i] - a[i] > tolerance`` and a tie when ``|a[i] - b[i]| <= tolerance``; with
    the default 0.0 only exactly equal scores tie. Returns ``(wins, ties, losses)``.
    Raises ``ValueError`` for unequal lengths, non-finite values or a negative or
    non-finite tolerance.
    """
    differences = paired_differences(a, b)
    if not 0.0 <= tolerance < float("inf"):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    wins = int(np.count_nonzero(differences > tolerance))
    losses = int(np.count_nonzero(differences < -tolerance))
    return wins, differences.size - wins - losses, losses
