"""The leaderboard's rows and its CI plot's rows joined in Python: the markup of a template
loop over 500 runs costs 50-150 ms per render, and each new board is rendered by every web
process."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.safestring import SafeString, mark_safe

from annotations.converters import id_to_segment
from annotations.templatetags.run_names import cut_name_markup

if TYPE_CHECKING:
    from collections.abc import Sequence

    from annotations.formats.charts import ForestItem, ForestPlot
    from annotations.selectors.leaderboards import Leaderboard, LeaderboardRow
    from annotations.selectors.measure_values import MeasureBoard

register = template.Library()

_MARK = "RUN0NAME0MARK"
_NONE = "\u2013"  # an en dash: no letters, no interval

_BELOW = (
    ' <span class="badge below" title="significantly below the best run (adjusted p = {p})">'
    '▼<span class="visually-hidden"> significantly below the best run</span></span>'
)
_IDEAL = (
    ' <span class="badge ideal" title="lower than the reported score: the promoted documents'
    ' join the ideal list">↓ ideal<span class="visually-hidden">: below the reported score'
    " because the promoted documents raise the ideal list</span></span>"
)


def _fixed(value: float | None, places: int) -> str:
    """`score_format.decimals`: printf's rounding of the exact binary value."""
    return "" if value is None else f"{value:.{places}f}"


@register.simple_tag
def leaderboard_rows(
    board: Leaderboard,
    rows: list[LeaderboardRow],
    run_links: str,
    username: str,
    k: int,
    extras: Sequence[MeasureBoard] = (),
) -> SafeString:
    """The ``<tr>`` of each of `rows` (the shown slice of `board`) as
    ``_leaderboard_table.html`` lays them out: a pick box where the viewer may compare the run
    (``run_links`` "all", or "own" and their own run), the name linked where they may open it.
    Every text is escaped (``html.escape``, what autoescape applies to a string). ``extras``:
    boards of kept measures whose means follow as one column each (empty: pending)."""
    # reverse() once: each run's URL is its name's path segment quoted as reverse() quotes
    # it (RFC 3986 sub-delimiters and /~:@ kept) between the same prefix and suffix.
    prefix, _, suffix = reverse("run-detail", args=[board.collection.slug, _MARK]).partition(_MARK)
    means = [{row.run.id: row.mean for row in extra.rows} for extra in extras]
    parts = [_row(row, (prefix, suffix), run_links, username, k, means) for row in rows]
    if not rows:
        columns = (10 if run_links != "none" else 9) + len(means)
        empty = "No run matches this search." if board.rows else "No scored runs yet."
        parts.append(f'<tr><td colspan="{columns}">{empty}</td></tr>')
    return mark_safe("".join(parts))  # every value is escaped or a number


def _row(
    row: LeaderboardRow,
    around: tuple[str, str],
    run_links: str,
    username: str,
    k: int,
    means: Sequence[dict[int, float]] = (),
) -> str:
    name = html.escape(row.run.name)
    own = row.run.owner == username
    cells = []
    if run_links != "none":
        pick = (
            f'<input type="checkbox" name="run" value="{name}" form="compare-pick" '
            f'class="compare-pick" aria-label="Compare {name}">'
            if run_links == "all" or own
            else ""
        )
        cells.append(f"<td>{pick}</td>")
    cells.append(f'<td class="num">{row.rank}</td>')
    if run_links == "all" or (run_links == "own" and own):
        segment = quote(id_to_segment(row.run.name), safe=RFC3986_SUBDELIMS + "/~:@")
        label = cut_name_markup(row.run.name, f"{around[0]}{segment}{around[1]}?k={k}")
    else:
        label = cut_name_markup(row.run.name)
    pending = ' <span class="badge">pending</span>' if row.pending else ""
    cells.append(f'<td class="name">{label}{pending}</td>')
    below = _BELOW.format(p=_fixed(row.p_best, 4)) if row.below_best else ""
    letters = html.escape(row.letters) if row.letters else _NONE
    cells.append(f'<td class="letters"><span class="group">{letters}</span>{below}</td>')
    cells.append(f'<td class="num ndcg">{_fixed(row.ndcg, 4)}</td>')
    ci = f"[{_fixed(row.ci_low, 4)}, {_fixed(row.ci_high, 4)}]" if row.ci_low is not None else _NONE
    cells.append(f'<td class="num ci">{ci}</td>')
    cells.append(f'<td class="num judged">{_fixed(row.judged, 3)}</td>')
    lower = row.best_case_below
    cells.append(
        f'<td class="num bounds{" below-reported" if lower else ""}">'
        f"{_fixed(row.ndcg_top_grade, 4)}{_IDEAL if lower else ''}</td>"
    )
    cells.append(f'<td class="num">{_fixed(row.ndcg_condensed, 4)}</td>')
    cells.append(f'<td class="num">{row.queries}</td>')
    cells += [f'<td class="num measure">{_fixed(mean.get(row.run.id), 4)}</td>' for mean in means]
    marked = ' class="below-best"' if row.below_best else ""
    return f'\n    <tr data-run="{name}"{marked}>\n      ' + "\n      ".join(cells) + "\n    </tr>"


@register.simple_tag
def forest_items(plot: ForestPlot) -> SafeString:
    """The ``<g>`` of every run of the CI plot as ``_forest_plot.html`` draws them: a title
    with the run's values, its short label, its interval line, its point (hollow when below
    the best run) and its letters."""
    label_x, letters_x = plot.left - 8, plot.right + 8
    return mark_safe(  # every text is escaped, the rest are numbers
        "".join(_forest_item(item, label_x, letters_x) for item in plot.items)
    )


def _forest_item(item: ForestItem, label_x: int, letters_x: int) -> str:
    row = item.row
    below = row.below_best
    colour = "#8a1c12" if below else "#0b4a82"
    title = f"{html.escape(row.label)}: {_fixed(row.mean, 4)}"
    if row.low is not None:
        title += f" [{_fixed(row.low, 4)}, {_fixed(row.high, 4)}]"
    if row.letters:
        title += f", group {html.escape(row.letters)}"
    if below:
        title += ", significantly below the best run"
    line = (
        f'<line x1="{item.x_low}" x2="{item.x_high}" y1="{item.y}" y2="{item.y}" '
        f'stroke="{colour}" stroke-width="2"/>'
        if item.x_low is not None
        else ""
    )
    letters = html.escape(row.letters) if row.letters else _NONE
    return (
        f'<g class="forest-row{" below-best" if below else ""}">\n'
        f"    <title>{title}</title>\n"
        f'    <text x="{label_x}" y="{item.y}" dy="4" text-anchor="end" font-size="11" '
        f'fill="#1f2430">{html.escape(item.short)}</text>\n'
        f"    {line}\n"
        f'    <circle cx="{item.x}" cy="{item.y}" r="4" fill="{"#ffffff" if below else "#0b4a82"}" '
        f'stroke="{colour}" stroke-width="2"/>\n'
        f'    <text x="{letters_x}" y="{item.y}" dy="4" font-size="11" fill="#1f2430">'
        f"{letters}</text>\n"
        "  </g>"
    )
