"""Exact sums of doubles, so incremental means never drift from a recomputation."""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

# Every finite double is an integer multiple of 2**-1074 (the smallest subnormal), so a sum
# of doubles scaled by 2**1074 is an exact Python integer.
_SCALE_BITS = 1074


def _scaled(value: float) -> int:
    if not math.isfinite(value):
        raise ValueError(f"cannot sum a non-finite value: {value!r}")
    numerator, denominator = value.as_integer_ratio()
    # denominator is a power of two no larger than 2**1074 for a finite double
    return numerator << (_SCALE_BITS - (denominator.bit_length() - 1))


class ExactSum:
    """An exact running sum of doubles; `mean(n)` is the correctly rounded sum / n."""

    __slots__ = ("_total",)

    def __init__(self, values: Iterable[float] = ()) -> None:
        self._total = 0
        for value in values:
            self.add(value)

    def add(self, value: float) -> None:
        self._total += _scaled(value)

    def remove(self, value: float) -> None:
        self._total -= _scaled(value)

    def value(self) -> float:
        """The sum itself, correctly rounded to a double."""
        return float(Fraction(self._total, 1 << _SCALE_BITS))

    def mean(self, count: int) -> float:
        """The mean over `count` items (0.0 when there are none), correctly rounded."""
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        if count == 0:
            return 0.0
        return float(Fraction(self._total, count << _SCALE_BITS))

    def to_text(self) -> str:
        """A compact, exact text form for storage (hexadecimal of the scaled integer)."""
        return format(self._total, "x") if self._total >= 0 else "-" + format(-self._total, "x")

    @classmethod
    def from_text(cls, text: str) -> ExactSum:
        result = cls()
        try:
            result._total = int(text, 16)
        except ValueError:
            raise ValueError(f"not an exact-sum text: {text!r}") from None
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactSum) and self._total == other._total

    def __repr__(self) -> str:
        return f"ExactSum({self.value()!r})"
