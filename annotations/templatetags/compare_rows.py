"""The compare page's per-query rows and scatter points joined in Python: a template loop
over every query of a collection (hundreds of rows, seven cells each) costs most of the
page's time, and the page is one people reload while they judge."""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from annotations.converters import id_to_segment

if TYPE_CHECKING:
    from annotations.formats.charts import ScatterPoint
    from annotations.selectors.comparisons import Comparison, ComparisonRow

register = template.Library()

_MARK = "QUERY0ID0MARK"


def _short(text: str, length: int) -> str:
    """``truncatechars:length``'s text: a title that fits is only NFC-normalised (most do;
    the filter's translation lookup per row is a fifth of the page's time)."""
    normalised = unicodedata.normalize("NFC", text)
    return normalised if len(normalised) <= length else Truncator(text).chars(length)


def _cell(value: float, places: int, classes: str = "num") -> str:
    """A number's cell as the template wrote it: ``stringformat:'r'`` as the sort value,
    ``decimals`` as the text."""
    return f'<td class="{classes}" data-value="{value!r}">{value:.{places}f}</td>'


@register.simple_tag
def compare_rows(
    rows: Sequence[ComparisonRow], slug: str, comparison: Comparison, k: int, links: bool
) -> SafeString:
    """The ``<tr>`` of each row: the qid (linked to the query page with both runs when the
    viewer may open queries), the title cut at 80 characters, A, B, A - B and each run's
    judged@k. Every text is escaped."""
    a, b = (quote(run.name, safe="/") for run in (comparison.a, comparison.b))  # |urlencode
    runs = f"?k={k}&amp;a={a}&amp;b={b}"
    # reverse() once: each query's URL is its qid's path segment quoted as reverse() quotes
    # it (RFC 3986 sub-delimiters and /~:@ kept) between the same prefix and suffix.
    prefix, _, suffix = reverse("query-detail", args=[slug, _MARK]).partition(_MARK)
    parts = []
    for row in rows:
        qid = html.escape(row.qid)
        if links:
            segment = quote(id_to_segment(row.qid), safe=RFC3986_SUBDELIMS + "/~:@")
            url = html.escape(f"{prefix}{segment}{suffix}")
            qid = f'<a href="{url}{runs}">{qid}</a>'
        title = html.escape(_short(row.title, 80))
        parts.append(
            f'<tr data-qid="{html.escape(row.qid)}"><td>{qid}</td><td class="title">{title}</td>'
            f"{_cell(row.a, 4)}{_cell(row.b, 4)}{_cell(row.difference, 4)}"
            f"{_cell(row.judged_a, 3, 'num judged')}{_cell(row.judged_b, 3, 'num judged')}</tr>"
        )
    return mark_safe("".join(parts))  # every text is escaped, every number formatted


@register.simple_tag
def scatter_points(points: Sequence[ScatterPoint]) -> SafeString:
    """The scatter's circles, one per query, coloured by the side of the diagonal."""
    parts = []
    for point in points:
        fill = "#8a93a5" if point.on else "#8a1c12" if point.above else "#0b4a82"
        parts.append(
            f'<circle cx="{point.x}" cy="{point.y}" r="4" fill="{fill}" fill-opacity="0.7">'
            f"<title>{html.escape(point.title)}</title></circle>"
        )
    return mark_safe("".join(parts))  # the titles are escaped, the rest are numbers
