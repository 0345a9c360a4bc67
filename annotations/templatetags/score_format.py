"""Template filters for scores: fixed decimals rounded as trec_eval prints them (C printf)."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def decimals(value: object, places: int = 4) -> str:
    """`value` with `places` decimals, the exact binary value rounded half to even as
    printf("%.4f") does (trec_eval's rounding; faster than floatformat's Decimal path)."""
    if value is None or value == "":
        return ""
    try:
        return f"{float(value):.{int(places)}f}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


@register.filter
def shade(count: object, rows: object) -> int:
    """A confusion-matrix cell's shade, 0 (empty) to 5 (the matrix's largest count): the
    count's share of the largest in ``rows`` ((label, counts) pairs), in fifths, rounded up."""
    try:
        largest = max((int(c) for _, counts in rows for c in counts), default=0)  # type: ignore[attr-defined]
        value = int(count)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 0
    if value <= 0 or largest <= 0:
        return 0
    return min(5, -(-5 * value // largest))
