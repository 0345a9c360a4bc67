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
