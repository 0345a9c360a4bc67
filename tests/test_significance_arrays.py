"""batch_statistics equals the one-run statistics bit for bit, on any data."""

import contextlib
import itertools
from collections.abc import Iterator
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics import significance, significance_arrays

# nDCG-like values: many exact ties (zeros, ones, a few repeated grades' values) and noise.
_value = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5, 0.6309297535714575, 0.25]),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
_rows = st.integers(min_value=1, max_value=40).flatmap(
    lambda n: st.lists(st.lists(_value, min_size=n, max_size=n), min_size=1, max_size=6)
)


@settings(max_examples=60, deadline=None)
@given(rows=_rows, seed=st.integers(min_value=0, max_value=3))
def test_bootstrap_cis_equal_bootstrap_ci_of_each_row(rows: list[list[float]], seed: int) -> None:
    expected = [significance.bootstrap_ci(row, resamples=500, seed=seed) for row in rows]
    assert significance_arrays.bootstrap_cis(rows, resamples=500, seed=seed) == expected


@settings(max_examples=60, deadline=None)
@given(rows=_rows, seed=st.integers(min_value=0, max_value=3))
def test_randomization_tests_equal_the_one_pair_test(rows: list[list[float]], seed: int) -> None:
    pairs = [(a, b) for a, b in zip(rows, rows[1:] + rows[:1], strict=True)]
    expected = [
        significance.paired_randomization_test(a, b, permutations=400, seed=seed) for a, b in pairs
    ]
    assert significance_arrays.paired_randomization_tests(pairs, permutations=400, seed=seed) == (
        expected
    )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(min_value=2, max_value=30).flatmap(
        lambda n: st.lists(
            st.lists(st.sampled_from([-0.0, 0.0, -0.5, 0.5, 1.0]), min_size=n, max_size=n),
            min_size=1,
            max_size=4,
        )
    ),
    seed=st.integers(min_value=0, max_value=3),
)
def test_bootstrap_cis_keep_the_sign_of_a_zero_bound_bit_for_bit(
    rows: list[list[float]], seed: int
) -> None:
    # -0.0 == 0.0, so compare bits: sorting and partitioning may settle signed zeros apart.
    expected = [significance.bootstrap_ci(row, resamples=300, seed=seed) for row in rows]
    got = significance_arrays.bootstrap_cis(rows, resamples=300, seed=seed)
    assert np.array(got).tobytes() == np.array(expected).tobytes()


def test_rows_of_different_lengths_each_get_their_own_draws() -> None:
    rows = [[0.1, 0.9, 0.4], [0.2, 0.3, 0.8, 0.8, 0.0], [0.5]]
    assert significance_arrays.bootstrap_cis(rows, resamples=300) == [
        significance.bootstrap_ci(row, resamples=300) for row in rows
    ]
    assert significance_arrays.bootstrap_cis(rows[2:], resamples=300) == [(0.5, 0.5)]


def test_at_leaderboard_scale_the_numbers_are_the_default_functions_numbers() -> None:
    # 30 runs x 249 queries with the defaults (10,000 resamples and sign flips, seed 0).
    rng = np.random.default_rng(7)
    matrix = np.round(rng.beta(2, 3, size=(30, 249)), 3)
    matrix[:, rng.random(249) < 0.2] = 0.0
    rows = [list(row) for row in matrix]
    got = significance_arrays.bootstrap_cis(rows)
    assert (
        np.array(got).tobytes() == np.array([significance.bootstrap_ci(r) for r in rows]).tobytes()
    )
    pairs = list(itertools.pairwise(rows))
    assert significance_arrays.paired_randomization_tests(pairs) == [
        significance.paired_randomization_test(a, b) for a, b in pairs
    ]


def test_identical_pairs_give_one_and_bad_input_is_refused() -> None:
    assert significance_arrays.paired_randomization_tests([([0.3, 0.4], [0.3, 0.4])]) == [1.0]
    with pytest.raises(ValueError, match="same queries"):
        significance_arrays.paired_randomization_tests([([0.1, 0.2], [0.1])])
    with pytest.raises(ValueError, match="at least one"):
        significance_arrays.bootstrap_cis([[]])
    with pytest.raises(ValueError, match="finite"):
        significance_arrays.bootstrap_cis([[0.1, float("nan")]])
    with pytest.raises(ValueError, match="confidence"):
        significance_arrays.bootstrap_cis([[0.1, 0.2]], confidence=1.0)


@contextlib.contextmanager
def _streamed() -> Iterator[None]:
    """No draws kept and one run ordered at a time: the path of 2,500-query collections."""
    with (
        mock.patch.object(significance_arrays, "_CACHE_ELEMENTS", 0),
        mock.patch.object(significance_arrays, "_GROUP_ELEMENTS", 1),
    ):
        yield


@settings(max_examples=40, deadline=None)
@given(rows=_rows, seed=st.integers(min_value=0, max_value=3))
def test_streamed_draws_give_the_same_bits(rows: list[list[float]], seed: int) -> None:
    expected = [significance.bootstrap_ci(row, resamples=700, seed=seed) for row in rows]
    pairs = [(a, b) for a, b in zip(rows, rows[1:] + rows[:1], strict=True)]
    tests = [
        significance.paired_randomization_test(a, b, permutations=400, seed=seed) for a, b in pairs
    ]
    with _streamed():
        got = significance_arrays.bootstrap_cis(rows, resamples=700, seed=seed)
        assert (
            significance_arrays.paired_randomization_tests(pairs, permutations=400, seed=seed)
            == tests
        )
    assert np.array(got).tobytes() == np.array(expected).tobytes()


def test_at_2500_queries_nothing_is_kept_and_the_numbers_are_the_same() -> None:
    # Past the kept size the draws stream block by block (bounded memory); same numbers.
    rng = np.random.default_rng(11)
    matrix = np.round(rng.beta(2, 3, size=(4, 2500)), 4)
    matrix[:, rng.random(2500) < 0.1] = 0.0
    rows = [list(row) for row in matrix]
    assert significance_arrays._CACHE_ELEMENTS < 2500 * 10_000
    significance_arrays._cached_indices.cache_clear()
    got = significance_arrays.bootstrap_cis(rows)
    assert significance_arrays._cached_indices.cache_info().currsize == 0
    assert (
        np.array(got).tobytes() == np.array([significance.bootstrap_ci(r) for r in rows]).tobytes()
    )


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(_value.filter(lambda v: v != 0.0), min_size=1, max_size=6),
    count=st.integers(min_value=1, max_value=3_000),
    confidence=st.sampled_from([0.5, 0.9, 0.95, 0.99]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_rows_of_order_statistics_give_the_quantiles_of_the_means(
    values: list[float], count: int, confidence: float, seed: int
) -> None:
    """The stand-in rows a quantile reads instead of 10,000 partitioned means: same bits,
    ties included, for any count of means and any confidence."""
    rng = np.random.default_rng(seed)
    means = rng.choice(np.array(values), size=(3, count))
    nudged = rng.random(size=means.shape) < 0.3  # near-ties: one unit in the last place up
    means[nudged] = np.nextafter(means[nudged], np.inf)
    tail = (1.0 - confidence) / 2.0
    quantiles = [tail, 1.0 - tail]
    needed = significance_arrays._order_positions(count, quantiles)
    expected = np.quantile(means, quantiles, axis=1)
    rows = significance_arrays._order_statistics_rows(means.copy(), needed)
    assert (np.diff(rows, axis=1) >= 0).all()
    assert np.quantile(rows, quantiles, axis=1).tobytes() == expected.tobytes()
