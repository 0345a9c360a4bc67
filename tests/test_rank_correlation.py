"""Rank correlations: hand-computed cases, scipy's kendalltau as the oracle for tau-b."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import kendalltau

from annotations.metrics.rank_correlation import (
    kendall_tau_b,
    rank_swings,
    ranking,
    tau_ap,
    tau_ap_symmetric,
)


def test_ranking_orders_by_score_then_name() -> None:
    assert ranking({"b": 0.5, "a": 0.5, "c": 0.9}) == ["c", "a", "b"]
    with pytest.raises(ValueError, match="finite"):
        ranking({"a": math.nan})


def test_kendall_tau_b_by_hand() -> None:
    # x = 1 2 3 4, y = 1 3 2 4: of the 6 pairs, (2,3) is discordant, 5 concordant.
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx((5 - 1) / 6)
    # a tie in y: pairs untied in x = 3, untied in y = 2; concordant 2, discordant 0.
    # tau_b = (2 - 0) / sqrt(3 * 2)
    assert kendall_tau_b([1, 2, 3], [1, 2, 2]) == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau_b([1, 2], [2, 1]) == -1.0
    assert kendall_tau_b([1, 1, 1], [1, 2, 3]) is None  # constant: undefined
    assert kendall_tau_b([1], [1]) is None
    with pytest.raises(ValueError, match="same length"):
        kendall_tau_b([1, 2], [1])


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=2, max_size=30))
def test_kendall_tau_b_equals_scipy(pairs: list[tuple[int, int]]) -> None:
    x = [float(a) for a, _ in pairs]
    y = [float(b) for _, b in pairs]
    ours = kendall_tau_b(x, y)
    theirs = kendalltau(x, y).statistic
    if math.isnan(theirs):
        assert ours is None
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_tau_ap_by_hand() -> None:
    truth = ["a", "b", "c", "d"]
    assert tau_ap(truth, truth) == 1.0
    assert tau_ap(truth, list(reversed(truth))) == -1.0
    # other = b a c d: i=2 (a): above it b, truth puts b below a -> C=0 -> 0/1
    # i=3 (c): above a, b, both above c in truth -> 2/2; i=4 (d): 3/3.
    # tau_ap = 2/3 * (0 + 1 + 1) - 1 = 1/3
    assert tau_ap(truth, ["b", "a", "c", "d"]) == pytest.approx(1 / 3)
    # a swap at the bottom costs less: a b d c -> 2/3 * (1 + 1 + 2/3) - 1 = 7/9
    assert tau_ap(truth, ["a", "b", "d", "c"]) == pytest.approx(7 / 9)
    # (Kendall's tau gives both swaps the same 2/3.)
    assert tau_ap(["a"], ["a"]) is None
    with pytest.raises(ValueError, match="same systems"):
        tau_ap(["a", "b"], ["a", "c"])


def test_tau_ap_symmetric_is_the_mean_of_both_directions() -> None:
    first, second = ["a", "b", "c", "d"], ["b", "a", "d", "c"]
    expected = (tau_ap(first, second) + tau_ap(second, first)) / 2  # type: ignore[operator]
    assert tau_ap_symmetric(first, second) == pytest.approx(expected)
    assert tau_ap_symmetric(first, second) == tau_ap_symmetric(second, first)


def test_rank_swings_are_best_and_worst_ranks() -> None:
    swings = rank_swings(
        {"effective": ["a", "b", "c"], "alice": ["b", "a", "c"], "bob": ["c", "a", "b"]}
    )
    assert swings == {"a": (1, 2), "b": (1, 3), "c": (1, 3)}
    assert rank_swings({}) == {}
    with pytest.raises(ValueError, match="same systems"):
        rank_swings({"x": ["a", "b"], "y": ["a"]})
