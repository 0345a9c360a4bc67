"""Exact sums of doubles on a 2**-96 fixed-point grid, vectorised with numpy."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotations.metrics import exact

# A sum is an int64 array whose last axis holds LIMBS limbs: its value is
# sum(limb[i] * 2**(LIMB_BITS * i)) * 2**-GRID_BITS. Normalised, limbs 0..3 are in
# [0, 2**32) and limb 4 is signed (a negative sum has a negative top limb), so each value
# has exactly one normalised form and equal sums compare equal limb by limb.
GRID_BITS = 96
LIMB_BITS = 32
LIMBS = 5

_MASK = (1 << LIMB_BITS) - 1
_LIMIT = 2.0**31  # |value| < 2**31: ldexp(value, 96) < 2**127 fills limbs 0..3 only
_SCALE_SHIFT = 1074 - GRID_BITS  # exact.py's integers count units of 2**-1074
_TOTAL_LIMIT = 1 << (60 + GRID_BITS)  # from_total keeps |sum| < 2**60 (top limb < 2**28)
# means() divides the sum with this many zero limbs appended below it, so that even the
# smallest quotient (2**-96 / (2**31 - 1)) has more than 64 significant bits to round from.
_EXTRA_LIMBS = 3
_MAX_COUNT = 1 << 31


def _sums(sums: ArrayLike) -> NDArray[np.int64]:
    """`sums` as an int64 array with a last axis of LIMBS; ValueError otherwise."""
    array = np.asarray(sums)
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"exact sums must be an integer array, got dtype {array.dtype}")
    if array.ndim == 0 or array.shape[-1] != LIMBS:
        raise ValueError(f"exact sums need a last axis of {LIMBS} limbs, got {array.shape}")
    return array.astype(np.int64)


def on_grid(values: ArrayLike) -> NDArray[np.bool_]:
    """True where a double is finite, |x| < 2**31 and an exact multiple of 2**-96.

    Every double with 2**-44 <= |x| < 2**31 is on the grid (its 53-bit mantissa ends at or
    above 2**-96), as are 0.0 and -0.0; NaN and infinities are not.
    """
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        small = np.abs(x) < _LIMIT  # False for NaN
    # Zero the rest before scaling, so a huge value cannot overflow to inf with a warning.
    scaled = np.ldexp(np.where(small, x, 0.0), GRID_BITS)
    result: NDArray[np.bool_] = small & (np.floor(scaled) == scaled)
    return result


def to_limbs(values: ArrayLike) -> NDArray[np.int64]:
    """The normalised exact limbs (shape values.shape + (5,)) of on-grid doubles;
    ValueError if any value is off the grid (see `on_grid`)."""
    x = np.asarray(values, dtype=np.float64)
    if not np.all(on_grid(x)):
        raise ValueError("values must be finite multiples of 2**-96 with |value| < 2**31")
    # An integral double of magnitude < 2**127. Each step is exact: scaling by a power of
    # two is exact for these integers, and the remainder y - q * 2**32 is an integer in
    # [0, 2**32), which a double holds, so the correctly rounded subtraction is exact.
    # floor() makes the remainder non-negative for negative y: two's complement limbs.
    y = np.ldexp(x, GRID_BITS)
    limbs = np.empty((*x.shape, LIMBS), dtype=np.int64)
    for i in range(LIMBS - 1):
        quotient = np.floor(np.ldexp(y, -LIMB_BITS))
        limbs[..., i] = y - np.ldexp(quotient, LIMB_BITS)
        y = quotient
    limbs[..., LIMBS - 1] = y  # 0, or -1 for a negative value
    return limbs


def normalise(sums: ArrayLike) -> NDArray[np.int64]:
    """The normalised form of `sums` (same value): limbs 0..3 in [0, 2**32), limb 4 signed.

    Limbs may hold any int64 with |limb| < 2**62 (so carries cannot overflow), as after
    adding or subtracting normalised sums; the value must keep its top limb inside int64.
    """
    result = _sums(sums)  # astype copies: the caller's array is left alone
    for i in range(LIMBS - 1):
        # Arithmetic shift and mask: floor division and a remainder in [0, 2**32), also
        # for negative limbs.
        carry = result[..., i] >> LIMB_BITS
        result[..., i] &= _MASK
        result[..., i + 1] += carry
    return result


def zeros(shape: int | tuple[int, ...]) -> NDArray[np.int64]:
    """Exact zero sums of the given shape (an array of shape shape + (5,))."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return np.zeros((*shape, LIMBS), dtype=np.int64)


def sum_values(values: ArrayLike, axis: int | None = None) -> NDArray[np.int64]:
    """The exact sum of on-grid values along `axis` (all of them for None), normalised.

    Each term adds less than 2**32 to a limb, so the int64 limb sums cannot overflow for
    up to 2**30 terms (far more than any run has queries). ValueError off the grid.
    """
    limbs = to_limbs(values)
    if axis is None:
        limbs = limbs.reshape(-1, LIMBS)
        axis = 0
    elif not -(limbs.ndim - 1) <= axis < limbs.ndim - 1:
        raise ValueError(f"axis {axis} is out of range for values of shape {limbs.shape[:-1]}")
    if limbs.shape[axis % (limbs.ndim - 1)] > 1 << 30:
        raise ValueError("cannot sum more than 2**30 values at once")
    return normalise(limbs.sum(axis=axis % (limbs.ndim - 1), dtype=np.int64))


def fold(sums: ArrayLike, old: ArrayLike, new: ArrayLike) -> NDArray[np.int64]:
    """`sums - old + new` exactly, normalised: each sum with one term replaced.

    `old` and `new` are on-grid doubles broadcast to sums.shape[:-1]; ValueError otherwise.
    """
    array = _sums(sums)
    shape = array.shape[:-1]
    try:
        old_limbs = to_limbs(np.broadcast_to(np.asarray(old, dtype=np.float64), shape))
        new_limbs = to_limbs(np.broadcast_to(np.asarray(new, dtype=np.float64), shape))
    except ValueError as error:  # also numpy's broadcasting error
        raise ValueError(f"cannot fold into sums of shape {shape}: {error}") from None
    return normalise(array - old_limbs + new_limbs)


def means(sums: ArrayLike, counts: ArrayLike) -> NDArray[np.float64]:
    """The correctly rounded (half to even) sum / count for each sum: 0.0 where count is 0,
    +0.0 for a zero sum; equal bit for bit to exact.total_mean(to_total(s), count).

    `counts` are integers in [0, 2**31) broadcast against sums.shape[:-1]; ValueError
    otherwise. The sums need not be normalised (see `normalise` for the limb bound).
    """
    array = _sums(sums)
    count_array = np.asarray(counts)
    if count_array.size == 0:
        count_array = count_array.astype(np.int64)  # np.asarray([]) is float64
    if not np.issubdtype(count_array.dtype, np.integer):
        raise ValueError(f"counts must be integers, got dtype {count_array.dtype}")
    try:
        shape = np.broadcast_shapes(array.shape[:-1], count_array.shape)
    except ValueError:
        raise ValueError(
            f"counts of shape {count_array.shape} do not fit sums of shape {array.shape}"
        ) from None
    if np.any(count_array < 0) or np.any(count_array >= _MAX_COUNT):
        raise ValueError("counts must be in [0, 2**31)")
    # Limb-major (limbs, n) layout: every per-limb step below reads a contiguous row.
    limbs = np.ascontiguousarray(
        normalise(np.broadcast_to(array, (*shape, LIMBS))).reshape(-1, LIMBS).T
    )
    count = np.broadcast_to(count_array, shape).reshape(-1).astype(np.int64)
    size = limbs.shape[1]

    # Six limbs, all unsigned 32-bit after the split of the signed top limb, then the
    # magnitude: negating two's complement limbs and renormalising leaves limbs 0..4 in
    # [0, 2**32) and a non-negative limb 5 of at most 2**31.
    signed = np.empty((LIMBS + 1, size), dtype=np.int64)
    signed[: LIMBS - 1] = limbs[: LIMBS - 1]
    signed[LIMBS - 1] = limbs[LIMBS - 1] & _MASK
    signed[LIMBS] = limbs[LIMBS - 1] >> LIMB_BITS
    negative = signed[LIMBS] < 0
    np.negative(signed, out=signed, where=negative)
    for i in range(LIMBS):
        signed[i + 1] += signed[i] >> LIMB_BITS
        signed[i] &= _MASK
    wide = signed.view(np.uint64)  # all non-negative now; unsigned division is faster

    # Long division from the top limb down by the count (1 stands in for 0; fixed below).
    # With r < count < 2**31, r * 2**32 + limb < 2**63; every quotient limb is below
    # 2**32. Quotient limb j is worth 2**(32 * (j - _EXTRA_LIMBS)) grid units.
    divisor = np.where(count == 0, 1, count).astype(np.uint64)
    digits = LIMBS + 1 + _EXTRA_LIMBS
    quotient = np.empty((digits, size), dtype=np.uint64)
    remainder = np.zeros(size, dtype=np.uint64)
    for j in range(digits - 1, -1, -1):
        current = remainder << np.uint64(LIMB_BITS)
        if j >= _EXTRA_LIMBS:
            current |= wide[j - _EXTRA_LIMBS]
        np.floor_divide(current, divisor, out=quotient[j])
        remainder = current - quotient[j] * divisor

    # A non-zero magnitude is at least one grid unit, so the quotient is at least
    # 2**96 / 2**31 = 2**65: its highest non-zero limb `top` is at least 2, and the limbs
    # top, top - 1, top - 2 hold at least 65 bits, enough for a 64-bit window.
    top = np.full(size, 2, dtype=np.intp)
    for j in range(3, digits):
        top[quotient[j] != 0] = j
    rows = np.arange(size)
    high, middle, low = quotient[top, rows], quotient[top - 1, rows], quotient[top - 2, rows]
    zero_sum = high == 0  # no quotient limb from 2 up is non-zero: only a zero sum does that
    # frexp's exponent is the bit length of a positive integer below 2**53 (1..32 here).
    bits = np.frexp(high.astype(np.float64))[1].astype(np.uint64)
    bits[zero_sum] = 1  # any shift-safe value; the result is overwritten below
    window = (
        (high << (np.uint64(64) - bits))
        | (middle << (np.uint64(32) - bits))
        | (low >> bits)  # every shift stays in 0..63: none by 64, which is undefined
    )
    sticky = (remainder != 0) | ((low & ((np.uint64(1) << bits) - np.uint64(1))) != 0)
    for j in range(digits - 3):
        sticky |= (quotient[j] != 0) & (j < top - 2)  # limbs below the window
    sticky |= (window & np.uint64(0x3FF)) != 0  # the 10 window bits below the round bit
    mantissa = window >> np.uint64(11)  # 53 bits, the top one set
    round_bit = ((window >> np.uint64(10)) & np.uint64(1)) != 0
    up = round_bit & (sticky | ((mantissa & np.uint64(1)) != 0))  # half to even
    # Rounding up may give 2**53: still exact as a double, and ldexp scales it the same,
    # so the carry into the exponent needs no special case.
    mantissa = mantissa + up.astype(np.uint64)
    # The window's top bit is bit 32 * top + bits - 1 of the quotient, whose unit is
    # 2**-(GRID_BITS + 32 * _EXTRA_LIMBS); the mantissa drops the window's low 11 bits.
    exponent = (
        LIMB_BITS * top + bits.astype(np.intp) - (1 + 52 + GRID_BITS + LIMB_BITS * _EXTRA_LIMBS)
    )
    # |mean| >= 2**-96 / 2**31 = 2**-127, far above the subnormals: ldexp is exact here.
    result = np.ldexp(mantissa.astype(np.float64), exponent.astype(np.int32))
    np.negative(result, out=result, where=negative)
    result[zero_sum | (count == 0)] = 0.0  # +0.0, as Python's 0 / n and the empty mean
    means_array: NDArray[np.float64] = result.reshape(shape)
    return means_array


def to_total(sum_limbs: ArrayLike) -> int:
    """One sum (shape (5,)) as exact.py's integer: its value times 2**1074."""
    array = _sums(sum_limbs)
    if array.shape != (LIMBS,):
        raise ValueError(f"to_total takes one sum of shape ({LIMBS},), got {array.shape}")
    value = sum(int(limb) << (LIMB_BITS * i) for i, limb in enumerate(array.tolist()))
    return value << _SCALE_SHIFT


def from_total(total: int) -> NDArray[np.int64] | None:
    """The normalised limbs of exact.py's integer `total` (value * 2**1074), or None when
    it is off the grid (not a multiple of 2**-96) or |value| >= 2**60."""
    if total & ((1 << _SCALE_SHIFT) - 1):
        return None
    units = total >> _SCALE_SHIFT
    if abs(units) >= _TOTAL_LIMIT:
        return None
    limbs = []
    for _ in range(LIMBS - 1):
        limbs.append(units & _MASK)
        units >>= LIMB_BITS  # Python's >> floors, so negative totals get two's complement
    limbs.append(units)
    return np.array(limbs, dtype=np.int64)


def to_text(sum_limbs: ArrayLike) -> str:
    """One sum in exact.total_to_text's stored form."""
    return exact.total_to_text(to_total(sum_limbs))


def from_text(text: str) -> NDArray[np.int64] | None:
    """The limbs of a stored exact.total_to_text sum, or None when it does not fit the grid
    (see `from_total`); ValueError for malformed text."""
    return from_total(exact.total_from_text(text))
