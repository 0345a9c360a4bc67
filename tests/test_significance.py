"""annotations.metrics.significance: hand-computed cases, seeds, and scipy as the oracle."""

import numpy as np
import pytest
from scipy import stats

from annotations.metrics import significance
from annotations.metrics.significance import (
    MAX_EXACT_QUERIES,
    bootstrap_ci,
    holm,
    paired_randomization_test,
    rank_tiers,
    win_tie_loss,
)

# Thirty per-query nDCG-like scores in [0, 1] (beta(2, 3) draws, rounded), fixed literally.
SCORES = [
    0.1812,
    0.4204,
    0.1124,
    0.3470,
    0.5538,
    0.3853,
    0.1118,
    0.8350,
    0.3905,
    0.6111,
    0.4951,
    0.2216,
    0.6004,
    0.2806,
    0.1705,
    0.3452,
    0.2310,
    0.4046,
    0.4784,
    0.8019,
    0.0836,
    0.2168,
    0.2816,
    0.5486,
    0.2080,
    0.6468,
    0.3364,
    0.4068,
    0.0595,
    0.4940,
]

# Two systems on ten queries, paired by position.
SYSTEM_A = [0.625, 0.897, 0.776, 0.225, 0.300, 0.874, 0.005, 0.821, 0.797, 0.468]
SYSTEM_B = [0.724, 0.983, 0.837, 0.182, 0.347, 0.994, 0.000, 0.825, 0.657, 0.389]
SYSTEM_C = [0.410, 0.700, 0.530, 0.100, 0.250, 0.650, 0.000, 0.600, 0.560, 0.300]


# bootstrap_ci


def test_bootstrap_ci_contains_the_mean_and_is_ordered() -> None:
    low, high = bootstrap_ci(SCORES)
    assert low < float(np.mean(SCORES)) < high


def test_bootstrap_ci_is_reproducible_with_the_seed() -> None:
    assert bootstrap_ci(SCORES, seed=3) == bootstrap_ci(SCORES, seed=3)
    assert bootstrap_ci(SCORES, seed=3) != bootstrap_ci(SCORES, seed=4)


def test_bootstrap_ci_widens_with_confidence() -> None:
    narrow = bootstrap_ci(SCORES, confidence=0.80)
    wide = bootstrap_ci(SCORES, confidence=0.99)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_bootstrap_ci_agrees_with_scipy_percentile_bootstrap() -> None:
    low, high = bootstrap_ci(SCORES, resamples=10_000)
    reference = stats.bootstrap(
        (np.array(SCORES),),
        np.mean,
        method="percentile",
        n_resamples=10_000,
        confidence_level=0.95,
        rng=np.random.default_rng(1),
    ).confidence_interval
    # Different random streams: agree up to Monte Carlo error (the CI is about 0.14 wide).
    assert low == pytest.approx(reference.low, abs=0.01)
    assert high == pytest.approx(reference.high, abs=0.01)


def test_bootstrap_ci_does_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = bootstrap_ci(SCORES, resamples=2_000)
    monkeypatch.setattr(significance, "CHUNK_ELEMENTS", 7 * len(SCORES) + 3)
    assert bootstrap_ci(SCORES, resamples=2_000) == expected


def test_bootstrap_ci_of_one_value_is_that_value() -> None:
    assert bootstrap_ci([0.42]) == (0.42, 0.42)


def test_bootstrap_ci_of_identical_values_is_that_value() -> None:
    assert bootstrap_ci([0.1, 0.1, 0.1]) == (0.1, 0.1)


@pytest.mark.parametrize(
    ("values", "options"),
    [
        ([], {}),
        ([0.1, float("nan")], {}),
        ([0.1, float("inf")], {}),
        ([0.1, 0.2], {"resamples": 0}),
        ([0.1, 0.2], {"confidence": 1.0}),
        ([0.1, 0.2], {"confidence": 0.0}),
        ([0.1, 0.2], {"seed": -1}),
        ([[0.1, 0.2]], {}),
    ],
)
def test_bootstrap_ci_rejects_bad_input(values: list, options: dict) -> None:
    with pytest.raises(ValueError):
        bootstrap_ci(values, **options)


# paired_randomization_test


def test_exact_randomization_hand_computed() -> None:
    """d = (1, 2, 3): the 8 sign flips sum to 6, 4, 2, 0, 0, -2, -4, -6.

    |sum| >= 6 for 2 of them (the identity and its mirror): p = 2/8.
    """
    assert paired_randomization_test([1, 2, 3], [0, 0, 0], exact=True) == 0.25


def test_exact_randomization_counts_float_ties_with_the_observed() -> None:
    """d = (1, 2, -3, 4) / 10: sum = 10 - 2S for S the subset sum of {1, 2, 3, 4} flipped.

    Subset sums 0..10 occur 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1 times; |10 - 2S| >= 4 when
    S <= 3 or S >= 7: 5 + 5 = 10 of 16, p = 0.625. In floating point 0.1 + 0.2 - 0.3 + 0.4
    and -0.1 - 0.2 + 0.3 + 0.4 differ by rounding; the test must still call them tied.
    """
    assert paired_randomization_test([1, 2, -3, 4], [0, 0, 0, 0], exact=True) == 0.625
    assert paired_randomization_test([0.1, 0.2, -0.3, 0.4], [0, 0, 0, 0], exact=True) == 0.625


@pytest.mark.parametrize("other", [SYSTEM_B, SYSTEM_C])
def test_exact_randomization_equals_scipy_permutation_test(other: list[float]) -> None:
    result = stats.permutation_test(
        (np.array(SYSTEM_A), np.array(other)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,  # 2^10 sign flips: scipy enumerates them all
        alternative="two-sided",
    )
    assert paired_randomization_test(SYSTEM_A, other, exact=True) == pytest.approx(result.pvalue)


def test_exact_randomization_does_not_depend_on_the_chunk_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = paired_randomization_test(SYSTEM_A, SYSTEM_B, exact=True)
    monkeypatch.setattr(significance, "CHUNK_ELEMENTS", 37)
    assert paired_randomization_test(SYSTEM_A, SYSTEM_B, exact=True) == expected


def test_monte_carlo_randomization_does_not_depend_on_the_chunk_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = paired_randomization_test(SYSTEM_A, SYSTEM_B, permutations=1_000, seed=2)
    monkeypatch.setattr(significance, "CHUNK_ELEMENTS", 7 * len(SYSTEM_A) + 3)
    assert paired_randomization_test(SYSTEM_A, SYSTEM_B, permutations=1_000, seed=2) == expected


def test_monte_carlo_randomization_approaches_the_exact_p_value() -> None:
    exact = paired_randomization_test(SYSTEM_A, SYSTEM_C, exact=True)
    sampled = paired_randomization_test(SYSTEM_A, SYSTEM_C, permutations=20_000)
    assert sampled == pytest.approx(exact, abs=0.01)


def test_monte_carlo_p_value_counts_the_observed_assignment() -> None:
    # Every query favours A by the same margin: only 2 of 2^15 sign flips reach |observed|,
    # so 99 random flips find none and p = (0 + 1) / (99 + 1), never 0.
    a = [0.9] * 15
    b = [0.1] * 15
    assert paired_randomization_test(a, b, permutations=99, seed=0) == 1 / 100


def test_monte_carlo_randomization_is_reproducible_with_the_seed() -> None:
    first = paired_randomization_test(SYSTEM_A, SYSTEM_B, permutations=500, seed=11)
    again = paired_randomization_test(SYSTEM_A, SYSTEM_B, permutations=500, seed=11)
    assert first == again


def test_randomization_is_symmetric_in_the_two_systems() -> None:
    assert paired_randomization_test(SYSTEM_A, SYSTEM_B, seed=5) == paired_randomization_test(
        SYSTEM_B, SYSTEM_A, seed=5
    )


@pytest.mark.parametrize("exact", [False, True])
def test_randomization_with_all_differences_zero_is_one(exact: bool) -> None:
    assert paired_randomization_test(SYSTEM_A, SYSTEM_A, exact=exact) == 1.0


def test_exact_randomization_handles_the_largest_allowed_n() -> None:
    a = [1.0] * MAX_EXACT_QUERIES
    b = [0.0] * MAX_EXACT_QUERIES
    assert paired_randomization_test(a, b, exact=True) == 2 / 2**MAX_EXACT_QUERIES


@pytest.mark.parametrize(
    ("a", "b", "options"),
    [
        ([0.1, 0.2], [0.1], {}),  # unequal lengths
        ([], [], {}),  # no queries
        ([0.1, float("nan")], [0.1, 0.2], {}),
        ([0.1, 0.2], [0.3, 0.4], {"permutations": 0}),
        ([0.1, 0.2], [0.3, 0.4], {"seed": -3}),
        ([0.5] * (MAX_EXACT_QUERIES + 1), [0.4] * (MAX_EXACT_QUERIES + 1), {"exact": True}),
    ],
)
def test_randomization_rejects_bad_input(a: list, b: list, options: dict) -> None:
    with pytest.raises(ValueError):
        paired_randomization_test(a, b, **options)


# holm


def test_holm_hand_computed_in_input_order() -> None:
    """Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.04.

    The running maximum makes the last 0.06; back in input order
    (0.01, 0.04, 0.03, 0.005) -> (0.03, 0.06, 0.06, 0.02).
    """
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one() -> None:
    """Sorted 0.3, 0.5 times 2, 1 -> 0.6, 0.5, monotone 0.6, 0.6; 0.6, 0.7 -> 1.2 capped, 1."""
    assert holm([0.5, 0.3]) == pytest.approx([0.6, 0.6])
    assert holm([0.6, 0.7]) == [1.0, 1.0]


def test_holm_gives_ties_equal_values() -> None:
    assert holm([0.02, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])


def test_holm_single_and_empty() -> None:
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


def test_holm_is_never_below_the_raw_p_value() -> None:
    raw = [0.001, 0.2, 0.04, 0.5, 0.013, 0.9]
    adjusted = holm(raw)
    assert all(adj >= p for adj, p in zip(adjusted, raw, strict=True))
    order = sorted(range(len(raw)), key=raw.__getitem__)
    assert [adjusted[i] for i in order] == sorted(adjusted)


@pytest.mark.parametrize("pvalues", [[0.1, 1.2], [-0.1], [float("nan")]])
def test_holm_rejects_values_outside_zero_one(pvalues: list[float]) -> None:
    with pytest.raises(ValueError):
        holm(pvalues)


# rank_tiers


def test_rank_tiers_start_a_new_tier_after_each_significant_gap() -> None:
    means = [0.50, 0.40, 0.30, 0.20]
    assert rank_tiers(means, [0.01, 0.20, 0.03]) == [1, 2, 2, 3]


def test_rank_tiers_p_equal_to_alpha_is_not_significant() -> None:
    assert rank_tiers([0.5, 0.4], [0.05], alpha=0.05) == [1, 1]
    assert rank_tiers([0.5, 0.4], [0.049], alpha=0.05) == [1, 2]


def test_rank_tiers_allows_equal_means() -> None:
    assert rank_tiers([0.3, 0.3, 0.1], [1.0, 0.001]) == [1, 1, 2]


def test_rank_tiers_small_inputs() -> None:
    assert rank_tiers([], []) == []
    assert rank_tiers([0.7], []) == [1]


@pytest.mark.parametrize(
    ("means", "pvalues", "alpha"),
    [
        ([0.1, 0.2], [0.01], 0.05),  # not sorted descending
        ([0.3, 0.2, 0.1], [0.01], 0.05),  # too few p-values
        ([0.3, 0.2], [0.01, 0.02], 0.05),  # too many p-values
        ([], [0.01], 0.05),
        ([0.3, 0.2], [1.5], 0.05),
        ([0.3, 0.2], [0.01], 0.0),
        ([0.3, float("nan")], [0.01], 0.05),
    ],
)
def test_rank_tiers_rejects_bad_input(means: list, pvalues: list, alpha: float) -> None:
    with pytest.raises(ValueError):
        rank_tiers(means, pvalues, alpha)


# win_tie_loss


def test_win_tie_loss_exact_ties_by_default() -> None:
    assert win_tie_loss([0.5, 0.3, 0.2, 0.1], [0.4, 0.3, 0.25, 0.1]) == (1, 2, 1)


def test_win_tie_loss_tolerance_widens_ties() -> None:
    # 0.5 - 0.4 is a win beyond 0.05; 0.2 - 0.25 is within it and becomes a tie.
    assert win_tie_loss([0.5, 0.3, 0.2, 0.1], [0.4, 0.3, 0.25, 0.1], tolerance=0.05) == (1, 3, 0)


def test_win_tie_loss_of_no_queries() -> None:
    assert win_tie_loss([], []) == (0, 0, 0)


@pytest.mark.parametrize(
    ("a", "b", "tolerance"),
    [
        ([0.1], [0.1, 0.2], 0.0),
        ([0.1], [0.2], -0.01),
        ([0.1], [0.2], float("nan")),
        ([0.1], [0.2], float("inf")),
        ([float("inf")], [0.2], 0.0),
    ],
)
def test_win_tie_loss_rejects_bad_input(a: list, b: list, tolerance: float) -> None:
    with pytest.raises(ValueError):
        win_tie_loss(a, b, tolerance=tolerance)
