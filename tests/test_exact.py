"""Exact sums: incremental updates give the same bits as a sum from scratch."""

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotations.metrics.exact import ExactSum, fold


def test_mean_is_the_correctly_rounded_exact_mean() -> None:
    values = [0.1, 0.2, 0.3, 1e-300, 0.7850023719699]
    exact = sum(Fraction(v) for v in values) / len(values)
    assert ExactSum(values).mean(len(values)) == float(exact)


def test_adding_and_removing_in_any_order_equals_the_sum_from_scratch() -> None:
    rng = random.Random(3)
    values = [rng.random() for _ in range(200)]
    running = ExactSum()
    for value in values:
        running.add(value)
        running.add(0.123456789)
        running.remove(0.123456789)
    assert running == ExactSum(reversed(values))
    assert running.mean(200) == float(sum(Fraction(v) for v in values) / 200)


@pytest.mark.parametrize(
    "values", [[], [0.5], [0.5, 0.25, 0.1], [5e-324], [1e308, 1e308], [-0.5, 0.25]]
)
def test_text_form_round_trips_exactly(values: list[float]) -> None:
    total = ExactSum(values)
    text = total.to_text()
    assert ExactSum.from_text(text) == total
    assert len(text) < 300


def test_text_form_is_short_for_typical_scores() -> None:
    assert ExactSum([0.5, 0.25]).to_text() == "3:2"  # 3 * 2**-2
    assert ExactSum().to_text() == "0:0"


@pytest.mark.parametrize("text", ["", "zz:1", "1", "1:2000"])
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="exact-sum"):
        ExactSum.from_text(text)


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        ExactSum([math.inf])
    with pytest.raises(ValueError, match=">= 0"):
        ExactSum().mean(-1)


@given(
    st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=30),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.integers(min_value=0, max_value=500),
)
def test_fold_equals_removing_and_adding_on_an_exact_sum(
    values: list[float], old: float, new: float, count: int
) -> None:
    stored = ExactSum([*values, old])
    mean, text = fold(stored.to_text(), old, new, count)
    expected = ExactSum([*values, new])
    assert text == expected.to_text()
    assert ExactSum.from_text(text) == expected
    assert mean == expected.mean(count)
    assert math.copysign(1.0, mean) == math.copysign(1.0, expected.mean(count))
