"""A select's options of run names, joined in Python: a collection's 500 runs twice per page."""

from __future__ import annotations

import html
from collections.abc import Iterable

from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def run_options(names: Iterable[str], selected: str) -> SafeString:
    """``<option>`` per name, the `selected` one marked: the markup of the template loop
    ``<option{% if name == selected %} selected{% endif %}>{{ name }}</option>``, without
    the loop's cost (a few milliseconds per hundred runs). ``html.escape`` is what Django's
    autoescape applies to a string (``django.utils.html.escape``), without its wrappers."""
    return mark_safe(  # every name is escaped
        "".join(
            f"<option{' selected' if name == selected else ''}>{html.escape(name)}</option>"
            for name in names
        )
    )
