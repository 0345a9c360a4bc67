"""Exact sums of doubles, so incremental means never drift from a recomputation."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

# Every finite double is an integer multiple of 2**-1074 (the smallest subnormal), so a sum
# of doubles scaled by 2**1074 is an exact Python integer.
_SCALE_BITS = 1074


def scaled(value: float) -> int:
    """A finite double as an exact integer multiple of 2**-1074."""
    if not math.isfinite(value):
        raise ValueError(f"cannot sum a non-finite value: {value!r}")
    numerator, denominator = value.as_integer_ratio()
    # denominator is a power of two no larger than 2**1074 for a finite double
    return numerator << (_SCALE_BITS - (denominator.bit_length() - 1))


def total_mean(total: int, count: int) -> float:
    """The correctly rounded mean of `count` doubles whose scaled sum is `total` (0.0 for none)."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if count == 0:
        return 0.0
    return total / (count << _SCALE_BITS)  # int / int is correctly rounded in Python


def mean_of(values: Sequence[float]) -> float:
    """The correctly rounded mean of `values` (0.0 for none): ExactSum(values).mean(len(values))
    bit for bit, at the finest scale the values need (small integers, so ten times faster)."""
    if not values:
        return 0.0
    try:
        ratios = [value.as_integer_ratio() for value in values]
    except (OverflowError, ValueError):
        raise ValueError("cannot sum a non-finite value") from None
    shifts = [denominator.bit_length() - 1 for _, denominator in ratios]
    scale = max(shifts)
    total = sum(
        numerator << (scale - shift) for (numerator, _), shift in zip(ratios, shifts, strict=True)
    )
    return total / (len(values) << scale)  # int / int is correctly rounded in Python


def total_to_text(total: int) -> str:
    """A compact, exact text form for storage: 'MANTISSA_HEX:SHIFT' = mantissa * 2**-shift.

    Trailing zero bits are dropped, so typical sums of scores in [0, 1] take a couple of
    dozen characters instead of the 270 the full 2**-1074 scale would.
    """
    return _format(total, _SCALE_BITS)


def total_from_text(text: str) -> int:
    """The scaled sum written by `total_to_text`; ValueError for anything else."""
    mantissa, shift = _parse(text)
    return mantissa << (_SCALE_BITS - shift)


def _format(total: int, shift: int) -> str:
    """'MANTISSA_HEX:SHIFT' of total * 2**-shift, trailing zero bits dropped."""
    if total == 0:
        return "0:0"
    trailing = (total & -total).bit_length() - 1
    total >>= trailing
    sign = "-" if total < 0 else ""
    return f"{sign}{abs(total):x}:{shift - trailing}"


def _parse(text: str) -> tuple[int, int]:
    """(mantissa, shift) of a 'MANTISSA_HEX:SHIFT' text; ValueError for anything else."""
    mantissa, separator, shift_text = text.partition(":")
    try:
        if not separator:
            raise ValueError
        value, shift = int(mantissa, 16), int(shift_text)
    except ValueError:
        raise ValueError(f"not an exact-sum text: {text!r}") from None
    if not -_SCALE_BITS <= shift <= _SCALE_BITS:
        raise ValueError(f"not an exact-sum text: {text!r}")
    return value, shift


class ExactSum:
    """An exact running sum of doubles; `mean(n)` is the correctly rounded sum / n."""

    __slots__ = ("_total",)

    def __init__(self, values: Iterable[float] = ()) -> None:
        self._total = 0
        for value in values:
            self.add(value)

    def add(self, value: float) -> None:
        self._total += scaled(value)

    def remove(self, value: float) -> None:
        self._total -= scaled(value)

    def value(self) -> float:
        """The sum itself, correctly rounded to a double."""
        return self._total / (1 << _SCALE_BITS)  # int / int is correctly rounded in Python

    def mean(self, count: int) -> float:
        """The mean over `count` items (0.0 when there are none), correctly rounded."""
        return total_mean(self._total, count)

    def to_text(self) -> str:
        """The exact text form of `total_to_text`."""
        return total_to_text(self._total)

    @classmethod
    def from_text(cls, text: str) -> ExactSum:
        result = cls()
        result._total = total_from_text(text)
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactSum) and self._total == other._total

    def __repr__(self) -> str:
        return f"ExactSum({self.value()!r})"


def fold(text: str, old_value: float, new_value: float, count: int) -> tuple[float, str]:
    """Replace `old_value` by `new_value` in the exact sum stored as `text`: (mean over
    `count`, new text), equal to ExactSum's, bit for bit.

    The judgement path does this for every run mean a change moves. It works at the finest
    scale the three numbers need (a few dozen bits for typical scores) instead of at
    2**-1074, which keeps the integers small.
    """
    total, shift = _parse(text)
    if not (math.isfinite(old_value) and math.isfinite(new_value)):
        raise ValueError(f"cannot sum a non-finite value: {old_value!r}, {new_value!r}")
    new_numerator, new_denominator = new_value.as_integer_ratio()
    old_numerator, old_denominator = old_value.as_integer_ratio()
    new_shift = new_denominator.bit_length() - 1
    old_shift = old_denominator.bit_length() - 1
    scale = max(shift, new_shift, old_shift)
    total = (
        (total << (scale - shift))
        + (new_numerator << (scale - new_shift))
        - (old_numerator << (scale - old_shift))
    )
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    mean = total / (count << scale) if count else 0.0  # int / int is correctly rounded
    return mean, _format(total, scale)
