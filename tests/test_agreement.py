"""annotations.metrics.agreement: hand-computed cases, published values, independent oracles."""

from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import permutations

import numpy as np
import pytest

from annotations.metrics.agreement import (
    cohen_kappa_quadratic,
    confusion_matrix,
    krippendorff_alpha_ordinal,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section E: four
# observers A-D, twelve units, grades 1-5, missing judgements left out (unit 12 has a single
# grade, so it is not pairable). Published: nominal alpha 0.743, ordinal alpha 0.815 (the
# ordinal value is also pinned by the `krippendorff` PyPI package's test_ordinal_metric).
PAPER_UNITS: list[list[int]] = [
    [1, 1, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [5, 5, 5],
    [1, 1],
    [3],
]

# The Wikipedia "computational example" (3 coders, 15 units, two units with no grade),
# also used by the `krippendorff` package's tests: nominal 0.691358, interval 0.810845.
WIKIPEDIA_UNITS: list[list[int]] = [
    [1],
    [],
    [2, 2],
    [1, 1],
    [3, 3],
    [3, 3, 4],
    [4, 4, 4],
    [1, 3],
    [2, 2],
    [1, 1],
    [1, 1],
    [3, 3],
    [3, 3],
    [],
    [3, 4],
]

Delta = Callable[[int, int, Counter[int]], Fraction]


def _nominal(c: int, k: int, _: Counter[int]) -> Fraction:
    return Fraction(int(c != k))


def _interval(c: int, k: int, _: Counter[int]) -> Fraction:
    return Fraction((c - k) ** 2)


def _ordinal(c: int, k: int, totals: Counter[int]) -> Fraction:
    low, high = min(c, k), max(c, k)
    between = sum(count for grade, count in totals.items() if low <= grade <= high)
    return (between - Fraction(totals[c] + totals[k], 2)) ** 2


def _alpha_by_pairs(units: Sequence[Sequence[int]], delta: Delta) -> Fraction:
    """Oracle: alpha from its pairwise definition, in exact arithmetic, no coincidence matrix.

    D_o = (1/n) sum_u 1/(m_u - 1) sum_{i != j in u} delta(v_i, v_j) and
    D_e = 1/(n(n - 1)) sum_{i != j over all pairable values} delta(v_i, v_j).
    """
    pairable = [list(unit) for unit in units if len(unit) >= 2]
    values = [grade for unit in pairable for grade in unit]
    totals = Counter(values)
    n = len(values)

    def disagreement(grades: Sequence[int]) -> Fraction:
        return sum((delta(x, y, totals) for x, y in permutations(grades, 2)), Fraction(0))

    observed = sum((disagreement(unit) / (len(unit) - 1) for unit in pairable), Fraction(0)) / n
    expected = disagreement(values) / (n * (n - 1))
    return 1 - observed / expected


def test_confusion_matrix_rows_are_first_assessor_columns_second() -> None:
    pairs = [(0, 0), (0, 2), (2, 0), (2, 0), (1, 1)]
    assert confusion_matrix(pairs, [0, 1, 2]) == [[1, 0, 1], [0, 1, 0], [2, 0, 0]]


def test_confusion_matrix_without_pairs_is_all_zero() -> None:
    assert confusion_matrix([], [0, 1]) == [[0, 0], [0, 0]]


def test_confusion_matrix_accepts_a_generator() -> None:
    assert confusion_matrix(((g, g) for g in (1, 3)), [1, 3]) == [[1, 0], [0, 1]]


@pytest.mark.parametrize(
    ("pairs", "levels"),
    [
        ([(0, 4)], [0, 1, 2]),  # unknown grade
        ([(0,)], [0, 1]),  # not a pair
        ([7], [0, 1]),  # not a sequence
        ([(0, 0)], []),  # empty scale
        ([(0, 0)], [0, 2, 1]),  # unordered scale
        ([(0, 0)], [0, 0, 1]),  # repeated level
    ],
)
def test_confusion_matrix_rejects_bad_input(pairs: list, levels: list[int]) -> None:
    with pytest.raises(ValueError):
        confusion_matrix(pairs, levels)


def test_kappa_hand_computed_partial_agreement() -> None:
    """levels [0, 1, 2]; pairs (0,0) (1,1) (2,2) (0,1); N = 4.

    Rows (first) = [2, 1, 1], columns (second) = [1, 2, 1]; squared index gaps (the
    1/(L-1)^2 factor cancels). Observed: only (0,1), gap^2 1 -> 1. Expected = sum
    row_i * col_j * gap^2 / N: row 0: 2 * (0*1 + 1*2 + 4*1) = 12, row 1: 1 * (1 + 0 + 1)
    = 2, row 2: 1 * (4*1 + 1*2 + 0) = 6; (12 + 2 + 6) / 4 = 5. kappa = 1 - 1/5 = 0.8.
    """
    assert cohen_kappa_quadratic([(0, 0), (1, 1), (2, 2), (0, 1)], [0, 1, 2]) == pytest.approx(0.8)


def test_kappa_hand_computed_chance_level_is_zero() -> None:
    """levels [0, 1]; pairs (0,0) (0,1) (1,0) (1,1): rows = columns = [2, 2].

    Observed = 2 (the two off-diagonal cells); expected = (2*2 + 2*2) / 4 = 2; kappa = 0.
    """
    assert cohen_kappa_quadratic([(0, 0), (0, 1), (1, 0), (1, 1)], [0, 1]) == pytest.approx(0.0)


def test_kappa_hand_computed_systematic_disagreement_is_minus_one() -> None:
    """levels [1, 2]; pairs (1,2) (2,1): observed 2, expected (1*1 + 1*1) / 2 = 1 -> -1."""
    assert cohen_kappa_quadratic([(1, 2), (2, 1)], [1, 2]) == pytest.approx(-1.0)


def test_kappa_perfect_agreement_is_one() -> None:
    assert cohen_kappa_quadratic([(0, 0), (1, 1), (3, 3), (3, 3)], [0, 1, 2, 3]) == 1.0


def test_kappa_weights_use_level_positions_not_grade_values() -> None:
    pairs = [(0, 0), (1, 3), (3, 3), (0, 1), (3, 0)]
    as_positions = [(0, 0), (1, 2), (2, 2), (0, 1), (2, 0)]
    assert cohen_kappa_quadratic(pairs, [0, 1, 3]) == pytest.approx(
        cohen_kappa_quadratic(as_positions, [0, 1, 2])
    )


def test_kappa_is_symmetric_in_the_two_assessors() -> None:
    pairs = [(0, 1), (1, 2), (2, 2), (3, 1), (0, 0), (2, 3)]
    swapped = [(second, first) for first, second in pairs]
    levels = [0, 1, 2, 3]
    assert cohen_kappa_quadratic(pairs, levels) == pytest.approx(
        cohen_kappa_quadratic(swapped, levels)
    )


def test_kappa_when_both_assessors_use_one_grade_is_one() -> None:
    # Expected disagreement 0 forces observed disagreement 0: kappa is 0/0, reported as 1.0.
    assert cohen_kappa_quadratic([(2, 2), (2, 2), (2, 2)], [0, 1, 2, 3]) == 1.0


@pytest.mark.parametrize("seed", range(20))
def test_kappa_equals_the_moment_identity(seed: int) -> None:
    """Oracle: quadratic kappa = 2 s_xy / (s_x^2 + s_y^2 + (mean_x - mean_y)^2).

    Population moments of the two assessors' level positions (Schuster 2004); it follows
    from E(x - y)^2 under the observed and the independence joint distribution.
    """
    rng = np.random.default_rng(seed)
    levels = [0, 1, 2, 3]
    first = rng.integers(0, 4, size=25)
    second = np.clip(first + rng.integers(-2, 3, size=25), 0, 3)
    covariance = np.mean((first - first.mean()) * (second - second.mean()))
    denominator = first.var() + second.var() + (first.mean() - second.mean()) ** 2
    pairs = [(int(x), int(y)) for x, y in zip(first, second, strict=True)]
    assert cohen_kappa_quadratic(pairs, levels) == pytest.approx(2 * covariance / denominator)


@pytest.mark.parametrize(
    ("pairs", "levels"),
    [
        ([], [0, 1]),  # no data
        ([(0, 0)], [0]),  # a one-level scale has no ordinal distance
        ([(0, 5)], [0, 1]),  # unknown grade
        ([(1, 1)], [1, 0]),  # unordered scale
    ],
)
def test_kappa_rejects_bad_input(pairs: list[tuple[int, int]], levels: list[int]) -> None:
    with pytest.raises(ValueError):
        cohen_kappa_quadratic(pairs, levels)


def test_alpha_paper_example_matches_published_values() -> None:
    levels = [1, 2, 3, 4, 5]
    # The transcription is right: the oracle reproduces the paper's nominal value.
    assert round(float(_alpha_by_pairs(PAPER_UNITS, _nominal)), 3) == 0.743
    oracle = _alpha_by_pairs(PAPER_UNITS, _ordinal)
    assert round(float(oracle), 3) == 0.815
    assert krippendorff_alpha_ordinal(PAPER_UNITS, levels) == pytest.approx(float(oracle))
    assert krippendorff_alpha_ordinal(PAPER_UNITS, levels) == pytest.approx(0.8153875037548813)


def test_alpha_wikipedia_example_matches_the_pairwise_oracle() -> None:
    assert round(float(_alpha_by_pairs(WIKIPEDIA_UNITS, _nominal)), 6) == 0.691358
    assert round(float(_alpha_by_pairs(WIKIPEDIA_UNITS, _interval)), 6) == 0.810845
    oracle = _alpha_by_pairs(WIKIPEDIA_UNITS, _ordinal)
    assert krippendorff_alpha_ordinal(WIKIPEDIA_UNITS, [1, 2, 3, 4]) == pytest.approx(float(oracle))


def test_alpha_hand_computed_three_units() -> None:
    """levels [1, 2, 3]; units (1,1) (1,2) (2,3), two grades each so 1/(m_u - 1) = 1.

    Coincidences: o11 = 2, o12 = o21 = 1, o23 = o32 = 1; n1 = 3, n2 = 2, n3 = 1, n = 6.
    Ordinal delta^2: d12 = (3 + 2 - 5/2)^2 = 6.25, d23 = (2 + 1 - 3/2)^2 = 2.25,
    d13 = (3 + 2 + 1 - 2)^2 = 16. Observed sum o * d = 2 * 6.25 + 2 * 2.25 = 17.
    Expected sum n_c n_k d = 2 * (3*2*6.25 + 3*1*16 + 2*1*2.25) = 180.
    alpha = 1 - (n - 1) * 17 / 180 = 1 - 85/180 = 19/36.
    """
    assert krippendorff_alpha_ordinal([(1, 1), (1, 2), (2, 3)], [1, 2, 3]) == pytest.approx(19 / 36)


def test_alpha_drops_units_with_fewer_than_two_grades() -> None:
    units = [(1, 1), (1, 2), (2, 3)]
    with_singletons = [(3,), *units, (), (1,)]
    assert krippendorff_alpha_ordinal(with_singletons, [1, 2, 3]) == pytest.approx(19 / 36)


def test_alpha_ignores_grade_values_and_unused_levels() -> None:
    units = [(1, 1), (1, 2), (2, 3)]
    relabelled = [(0, 0), (0, 5), (5, 9)]
    assert krippendorff_alpha_ordinal(relabelled, [0, 4, 5, 7, 9]) == pytest.approx(
        krippendorff_alpha_ordinal(units, [1, 2, 3])
    )


def test_alpha_perfect_agreement_is_one() -> None:
    assert krippendorff_alpha_ordinal([(0, 0, 0), (1, 1), (3, 3, 3, 3)], [0, 1, 2, 3]) == 1.0


def test_alpha_without_any_variation_is_one() -> None:
    # Observed and expected disagreement are both 0: reported as 1.0, not NaN.
    assert krippendorff_alpha_ordinal([(2, 2), (2, 2, 2), (2,)], [0, 1, 2]) == 1.0


def test_alpha_accepts_a_generator_of_units() -> None:
    units = [(1, 1), (1, 2), (2, 3)]
    assert krippendorff_alpha_ordinal((unit for unit in units), [1, 2, 3]) == pytest.approx(19 / 36)


@pytest.mark.parametrize("seed", range(15))
def test_alpha_matches_the_pairwise_oracle_on_random_units(seed: int) -> None:
    rng = np.random.default_rng(seed)
    units = [
        [int(grade) for grade in rng.integers(0, 4, size=rng.integers(0, 5))] for _ in range(12)
    ]
    units.append([0, 3])  # guarantees variation, so the oracle's D_e is not 0
    oracle = _alpha_by_pairs(units, _ordinal)
    assert krippendorff_alpha_ordinal(units, [0, 1, 2, 3]) == pytest.approx(float(oracle))


@pytest.mark.parametrize(
    ("units", "levels"),
    [
        ([], [0, 1]),  # no units
        ([(1,), (0,)], [0, 1]),  # nothing pairable
        ([(0, 3)], [0, 1, 2]),  # unknown grade
        ([(0, 0)], [0]),  # one-level scale
        ([(0, 1)], [1, 0]),  # unordered scale
        ([5], [0, 1]),  # unit is not a sequence
    ],
)
def test_alpha_rejects_bad_input(units: list, levels: list[int]) -> None:
    with pytest.raises(ValueError):
        krippendorff_alpha_ordinal(units, levels)
