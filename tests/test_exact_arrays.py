"""Exact sums on the 2**-96 grid: the numpy arithmetic equals exact.py's big integers."""

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from annotations.metrics import exact
from annotations.metrics import exact_arrays as ea
from annotations.metrics.exact import ExactSum

GRID_UNIT = 2.0**-96
MAX_COUNT = 2**31 - 1


def random_sums(rng: np.random.Generator, size: int, max_bits: int = 156) -> NDArray[np.int64]:
    """`size` normalised sums whose magnitudes have random bit lengths 0..max_bits (in grid
    units, so values from 0 to 2**60) and random signs: quotient limbs at every position."""
    lengths = rng.integers(0, max_bits + 1, size=size)
    limbs = rng.integers(0, 2**32, size=(size, ea.LIMBS), dtype=np.int64)
    for i in range(ea.LIMBS):
        bits = np.clip(lengths - 32 * i, 0, 32)
        limbs[:, i] &= (np.int64(1) << bits) - 1
    negative = rng.random(size) < 0.5
    limbs[negative] = -limbs[negative]
    return ea.normalise(limbs)


def python_means(sums: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """exact.total_mean of every sum, one at a time with Python integers."""
    flat_sums = sums.reshape(-1, ea.LIMBS)
    flat_counts = np.broadcast_to(counts, sums.shape[:-1]).reshape(-1)
    result = [
        exact.total_mean(ea.to_total(s), int(n))
        for s, n in zip(flat_sums, flat_counts, strict=True)
    ]
    return np.array(result, dtype=np.float64).reshape(sums.shape[:-1])


def assert_same_bits(actual: NDArray[np.float64], expected: NDArray[np.float64]) -> None:
    assert actual.dtype == np.float64
    assert actual.shape == expected.shape
    assert np.array_equal(actual, expected)
    assert np.array_equal(actual.view(np.int64), expected.view(np.int64))


def assert_normalised(sums: NDArray[np.int64]) -> None:
    assert sums.dtype == np.int64
    assert np.all((sums[..., :4] >= 0) & (sums[..., :4] < 2**32))


def grid_values() -> list[NDArray[np.float64]]:
    rng = np.random.default_rng(7)
    signs = np.where(rng.random(3000) < 0.5, -1.0, 1.0)
    boundaries = [
        0.0,
        -0.0,
        GRID_UNIT,
        -GRID_UNIT,
        2.0**31 - 1,
        -(2.0**31) + 0.5,
        2.0**31 - 2.0**-22,  # the largest double below 2**31
        2.0**-44,
        2.0**-44 * (1 + 2.0**-52),  # its last mantissa bit is the grid unit
        1.0,
        -1.0,
    ]
    return [
        rng.random(3000),
        rng.uniform(-1.0, 1.0, 3000),
        signs * np.exp2(rng.uniform(-44.0, 30.99, 3000)),
        np.array(boundaries),
    ]


@pytest.mark.parametrize("values", grid_values(), ids=["unit", "signed", "magnitudes", "edges"])
def test_limbs_are_the_exact_scaled_integers_of_exact_py(values: NDArray[np.float64]) -> None:
    assert np.all(ea.on_grid(values))
    limbs = ea.to_limbs(values)
    assert limbs.shape == (*values.shape, ea.LIMBS)
    assert_normalised(limbs)
    for value, sum_limbs in zip(values.tolist(), limbs, strict=True):
        assert ea.to_total(sum_limbs) == exact.scaled(value)
        back = ea.from_total(exact.scaled(value))
        assert back is not None
        assert np.array_equal(back, sum_limbs)


def test_negative_values_have_a_negative_top_limb() -> None:
    assert ea.to_limbs(-GRID_UNIT).tolist() == [2**32 - 1] * 4 + [-1]
    assert ea.to_limbs(-0.0).tolist() == [0] * 5
    assert ea.to_limbs(1.0).tolist() == [0, 0, 0, 1, 0]


def test_on_grid_marks_finite_multiples_of_the_grid_unit_below_2_31() -> None:
    off = np.array([1e-20, 2.0**-97, math.nan, math.inf, -math.inf, 2.0**31, -(2.0**31), 1e300])
    on = np.array([GRID_UNIT, 0.1, 1.0, 0.0, -0.0, -GRID_UNIT, 3 * GRID_UNIT])
    assert not np.any(ea.on_grid(off))
    assert np.all(ea.on_grid(on))
    assert ea.on_grid(np.zeros((2, 3))).shape == (2, 3)


@pytest.mark.parametrize("value", [1e-20, 2.0**-97, math.nan, math.inf, 2.0**31, 5e-324])
def test_off_grid_values_are_refused(value: float) -> None:
    with pytest.raises(ValueError, match="2\\*\\*-96"):
        ea.to_limbs([0.5, value])
    with pytest.raises(ValueError):
        ea.sum_values([0.5, value])


def test_normalise_propagates_carries_and_keeps_the_value() -> None:
    raw = np.array([[2**40 + 3, -5, 2**33, -(2**35), 3], [-1, 0, 0, 0, 0]], dtype=np.int64)
    normalised = ea.normalise(raw)
    assert_normalised(normalised)
    for before, after in zip(raw, normalised, strict=True):
        assert ea.to_total(after) == ea.to_total(before)
    assert normalised[1].tolist() == [2**32 - 1] * 4 + [-1]
    assert np.array_equal(ea.normalise(normalised), normalised)
    assert raw[0, 0] == 2**40 + 3  # the input is left alone


def test_sum_values_equals_exact_sum_along_each_axis() -> None:
    rng = np.random.default_rng(7)
    values = rng.uniform(-1.0, 1.0, (40, 300))
    values[::3] = rng.random((14, 300))
    values[5, :10] = np.exp2(rng.uniform(-44.0, 30.0, 10))
    for axis, lines in [(1, values), (-1, values), (0, values.T)]:
        sums = ea.sum_values(values, axis=axis)
        assert sums.shape == (lines.shape[0], ea.LIMBS)
        assert_normalised(sums)
        for line, line_sum in zip(lines, sums, strict=True):
            assert ea.to_text(line_sum) == ExactSum(line.tolist()).to_text()
    assert ea.to_text(ea.sum_values(values)) == ExactSum(values.ravel().tolist()).to_text()
    assert np.array_equal(ea.sum_values([]), ea.zeros(()))
    with pytest.raises(ValueError, match="axis"):
        ea.sum_values(values, axis=2)


def test_a_thousand_folds_equal_the_sum_from_scratch() -> None:
    rng = np.random.default_rng(7)
    runs, queries = 50, 200
    values = rng.random((runs, queries))
    values[:, ::7] = -values[:, ::7]
    sums = ea.sum_values(values, axis=1)
    python_sums = [ExactSum(row.tolist()) for row in values]
    rows = np.arange(runs)
    for step in range(1000):
        picked = rng.integers(0, queries, size=runs)
        old = values[rows, picked]
        new = rng.random(runs) if step % 2 else np.exp2(rng.uniform(-44.0, 2.0, runs))
        sums = ea.fold(sums, old, new)
        values[rows, picked] = new
        for python_sum, old_value, new_value in zip(python_sums, old, new, strict=True):
            python_sum.remove(float(old_value))
            python_sum.add(float(new_value))
    assert_normalised(sums)
    assert np.array_equal(sums, ea.sum_values(values, axis=1))
    for run_sum, python_sum in zip(sums, python_sums, strict=True):
        assert ea.to_text(run_sum) == python_sum.to_text()
    assert_same_bits(ea.means(sums, queries), np.array([s.mean(queries) for s in python_sums]))


def test_fold_broadcasts_and_refuses_off_grid_values() -> None:
    sums = ea.sum_values(np.full((3, 4), 0.25), axis=1)
    folded = ea.fold(sums, 0.25, -0.5)
    assert [ea.to_total(s) for s in folded] == [exact.scaled(0.75 - 0.5)] * 3
    assert np.array_equal(ea.fold(folded, -0.5, 0.25), sums)
    with pytest.raises(ValueError):
        ea.fold(sums, 0.25, 1e-20)
    with pytest.raises(ValueError):
        ea.fold(sums, [0.25, 0.25], 0.5)  # shape (2,) does not fit three sums


def test_means_of_random_sums_equal_exact_py_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    sums = random_sums(rng, 4000)
    small_counts = rng.integers(1, 301, size=4000)
    large_counts = rng.integers(2**20, 2**31, size=4000)
    large_counts[:50] = MAX_COUNT
    for counts in (small_counts, large_counts):
        assert_same_bits(ea.means(sums, counts), python_means(sums, counts))


def test_means_equal_exact_sum_means_of_the_values() -> None:
    rng = np.random.default_rng(7)
    for size in (1, 2, 3, 10, 299, 1000):
        values = rng.uniform(-1.0, 1.0, size)
        if size > 2:
            values[: size // 2] = rng.random(size // 2)
        total = ea.sum_values(values)
        for count in (size, 1, 7, 300, MAX_COUNT):
            expected = ExactSum(values.tolist()).mean(count)
            assert_same_bits(ea.means(total, count), np.array(expected))


def test_means_of_negative_sums_are_the_negated_means() -> None:
    rng = np.random.default_rng(7)
    sums = random_sums(rng, 1000)
    negated = ea.normalise(-sums)
    counts = rng.integers(1, 301, size=1000)
    # 0.0 - x rather than -x: a zero sum's mean stays +0.0
    assert_same_bits(ea.means(negated, counts), 0.0 - ea.means(sums, counts))
    assert_same_bits(ea.means(negated, counts), python_means(negated, counts))


def test_zero_sums_and_zero_counts_give_positive_zero() -> None:
    zero = ea.fold(ea.sum_values([-0.5]), -0.5, -0.0)
    sums = np.stack([ea.zeros(()), zero, ea.sum_values([0.75]), ea.sum_values([-0.75])])
    result = ea.means(sums, [5, 1, 0, 0])
    assert_same_bits(result, np.zeros(4))
    assert not np.any(np.signbit(result))
    assert_same_bits(ea.means(ea.zeros((2, 3)), 0), np.zeros((2, 3)))
    assert_same_bits(ea.means(ea.zeros(0), []), np.zeros(0))


def tie_sum(units: int) -> NDArray[np.int64]:
    limbs = ea.from_total(units << (1074 - ea.GRID_BITS))
    assert limbs is not None
    return limbs


@pytest.mark.parametrize("count", [1, 3, 7, 300, 1000, MAX_COUNT])
@pytest.mark.parametrize("shift", [0, 1, 5, 31, 32, 40])
def test_exact_ties_round_half_to_even(count: int, shift: int) -> None:
    rng = np.random.default_rng(count + shift)
    for _ in range(20):
        # m is an odd 54-bit integer: m * 2**shift grid units sit halfway between two doubles.
        m = int(rng.integers(2**53, 2**54)) | 1
        for sign in (1, -1):
            units = sign * m * count << shift
            mean = ea.means(tie_sum(units), count)
            halved = m >> 1  # the two neighbours are halved and halved + 1 (times 2)
            even = halved if halved % 2 == 0 else halved + 1
            expected = sign * math.ldexp(even, shift + 1 - ea.GRID_BITS)
            assert_same_bits(mean, np.array(expected))
            assert_same_bits(mean, np.array(exact.total_mean(units << 978, count)))


@pytest.mark.parametrize("shift", [1, 5, 31, 32, 40])
def test_one_grid_unit_off_a_tie_rounds_to_the_nearer_double(shift: int) -> None:
    rng = np.random.default_rng(shift)
    for _ in range(50):
        m = int(rng.integers(2**53, 2**54)) | 1
        for offset in (1, -1):
            units = (m << shift) + offset
            expected = math.ldexp((m + offset) >> 1, shift + 1 - ea.GRID_BITS)
            mean = ea.means(tie_sum(units), 1)
            assert_same_bits(mean, np.array(expected))
            assert_same_bits(mean, np.array(exact.total_mean(units << 978, 1)))


def test_means_cover_quotient_limbs_at_every_position() -> None:
    rng = np.random.default_rng(7)
    units = [1, 2**155 + 2**154, 2**156 - 1]
    units += [2**p for p in range(156)] + [2**p - 1 for p in range(1, 157)]
    units += [int(rng.integers(2**62)) << p for p in range(0, 94, 3)]
    sums = np.stack([tie_sum(sign * u) for u in units for sign in (1, -1)])
    # Top limbs far beyond from_total's range still divide exactly (values up to 2**95).
    extremes = random_sums(rng, 6)
    extremes[:, 4] = [2**62, -(2**62), 2**63 - 1, -(2**63), 1, -1]
    sums = np.concatenate([sums, extremes])
    for counts in (1, 2, 3, 255, 65537, MAX_COUNT, rng.integers(1, 2**31, len(sums))):
        count_array = np.broadcast_to(np.asarray(counts), len(sums))
        assert_same_bits(ea.means(sums, count_array), python_means(sums, count_array))


def test_means_are_vectorised_over_any_shape() -> None:
    rng = np.random.default_rng(7)
    sums = random_sums(rng, 110 * 100 * 3).reshape(110, 100, 3, ea.LIMBS)
    counts = rng.integers(0, 301, size=(110, 100, 3))
    assert_same_bits(ea.means(sums, counts), python_means(sums, counts))
    per_column = np.array([1, 17, MAX_COUNT])
    assert_same_bits(ea.means(sums, per_column), python_means(sums, per_column))


@pytest.mark.parametrize(
    "counts", [np.array([-1, 1]), np.array([1, 2**31]), np.array([1.0, 2.0]), np.ones(3, int)]
)
def test_means_refuse_bad_counts(counts: NDArray[np.generic]) -> None:
    with pytest.raises(ValueError):
        ea.means(ea.zeros(2), counts)


def test_bad_sums_are_refused() -> None:
    with pytest.raises(ValueError, match="limbs"):
        ea.means(np.zeros((3, 4), dtype=np.int64), 1)
    with pytest.raises(ValueError, match="integer"):
        ea.normalise(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="one sum"):
        ea.to_total(ea.zeros(2))


def test_text_forms_enter_and_leave_the_grid() -> None:
    values = [0.5, 0.25, -0.1, 2.0**-44]
    limbs = ea.sum_values(values)
    text = ExactSum(values).to_text()
    assert ea.to_text(limbs) == text
    back = ea.from_text(text)
    assert back is not None
    assert np.array_equal(back, limbs)
    assert ea.to_text(ea.zeros(())) == "0:0"
    assert ea.from_text(ExactSum([1e-20]).to_text()) is None
    with pytest.raises(ValueError, match="exact-sum"):
        ea.from_text("zz")


def test_from_total_refuses_totals_off_the_grid_or_too_large() -> None:
    assert ea.from_total(exact.scaled(1e-20)) is None
    assert ea.from_total(exact.scaled(2.0**-97)) is None
    assert ea.from_total(1 << (1074 + 60)) is None
    assert ea.from_total(-(1 << (1074 + 61))) is None
    largest = ea.from_total((1 << (1074 + 60)) - (1 << 978))
    assert largest is not None
    assert ea.to_total(largest) == (1 << (1074 + 60)) - (1 << 978)
    smallest_negative = ea.from_total(-(2**978))
    assert smallest_negative is not None
    assert ea.to_total(smallest_negative) == -(2**978)
