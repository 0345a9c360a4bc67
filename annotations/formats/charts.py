"""Geometry of the server-side SVG charts: a CI forest plot, heat maps and their colours.

Plain numbers in, coordinates and colours out; the templates draw them with SVG attributes
only (no inline style, no script), so the pages work under the CSP and without JavaScript.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ForestPlot",
    "ForestRow",
    "HeatMap",
    "Scatter",
    "ScatterPoint",
    "Tick",
    "forest_plot",
    "heat_map",
    "p_colour",
    "scatter",
    "score_colour",
    "score_legend",
    "score_step_colour",
    "short_label",
]

# A sequential palette (light to dark blue), readable for the common colour deficiencies;
# every step keeps at least 3:1 against its neighbours' text colour choice (see text_colour).
_SCORE_STOPS = ((247, 251, 255), (198, 219, 239), (107, 174, 214), (33, 113, 181), (8, 48, 107))
# Significant pairs: orange, darker the smaller the p-value; not significant: light grey.
_SIGNIFICANT_STOPS = ((253, 208, 162), (253, 141, 60), (217, 72, 1), (127, 39, 4))
NOT_SIGNIFICANT = "#e8e8e8"


def _mix(stops: Sequence[tuple[int, int, int]], t: float) -> str:
    t = min(1.0, max(0.0, t))
    position = t * (len(stops) - 1)
    low = min(int(position), len(stops) - 2)
    share = position - low
    channels = (round(a + (b - a) * share) for a, b in zip(stops[low], stops[low + 1], strict=True))
    return "#" + "".join(f"{channel:02x}" for channel in channels)


def score_colour(value: float) -> str:
    """A score in [0, 1] (clamped) as a colour: light for 0, dark blue for 1."""
    return _mix(_SCORE_STOPS, value)


SCORE_STEPS = 10


def score_step_colour(value: float) -> str:
    """A score's colour on the palette cut into ``SCORE_STEPS`` steps (0, 0.1, ..., 1; the
    nearest step), so that a heat map's neighbouring cells of close values share a colour
    and the legend names every colour it uses."""
    return score_colour(round(min(1.0, max(0.0, value)) * SCORE_STEPS) / SCORE_STEPS)


def score_legend() -> list[tuple[str, str]]:
    """The steps of ``score_step_colour`` as (label, colour), 0 to 1."""
    return [
        (f"{step / SCORE_STEPS:.1f}", score_colour(step / SCORE_STEPS))
        for step in range(SCORE_STEPS + 1)
    ]


def text_colour(value: float) -> str:
    """Black on the light half of the palette, white on the dark half."""
    return "#000000" if value < 0.55 else "#ffffff"


def p_colour(p: float, alpha: float) -> str:
    """An adjusted p-value's cell: light grey when not significant (p >= alpha), else orange
    from light (p just under alpha) to dark (p at 1e-4 and below)."""
    if not p < alpha:
        return NOT_SIGNIFICANT
    floor = 1e-4
    span = math.log10(alpha) - math.log10(floor)
    t = (math.log10(alpha) - math.log10(max(p, floor))) / span if span > 0 else 1.0
    return _mix(_SIGNIFICANT_STOPS, t)


def short_label(text: str, limit: int = 28) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class ForestRow:
    """One run of the forest plot, in rank order."""

    label: str  # the run's name
    mean: float
    low: float | None
    high: float | None
    letters: str
    below_best: bool


@dataclass(frozen=True)
class ForestItem:
    row: ForestRow
    short: str
    y: float  # the row's centre line
    x: float
    x_low: float | None
    x_high: float | None


@dataclass(frozen=True)
class ForestPlot:
    width: int
    height: int
    left: int  # where the axis starts (labels to its left)
    right: int  # where it ends (letters to its right)
    top: int  # where the rows start (the axis's labels repeated above them)
    axis_y: float
    items: list[ForestItem]
    ticks: list[Tick]
    best_x: float | None  # the best run's mean, a reference line
    best_low_x: float | None  # the best run's CI low end


def _domain(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 1.0
    low = math.floor(min(values) * 10) / 10
    high = math.ceil(max(values) * 10) / 10
    if high - low < 0.1:
        high = low + 0.1
    return max(0.0, low) if min(values) >= 0 else low, high


def forest_plot(
    rows: Sequence[ForestRow],
    *,
    width: int = 640,
    row_height: int = 18,
    extent: Sequence[float] | None = None,
    best: ForestRow | None = None,
) -> ForestPlot:
    """Point and interval per run, one row each in the given (rank) order, on one axis.

    The axis spans the intervals' range (or `extent`'s values: a page of a longer ranking
    drawn on the whole ranking's scale) rounded out to tenths (0..1 at most for nDCG); the
    reference line marks `best` (default: the first row). Labels take the left 200 px (names
    cut to 28 characters), the letters the right 80.
    """
    left, right = 210, width - 80
    if extent is None:
        extent = [v for row in rows for v in (row.mean, row.low, row.high) if v is not None]
    low, high = _domain(extent)

    def x_of(value: float) -> float:
        return round(left + (value - low) / (high - low) * (right - left), 2)

    top = 24  # room for the axis's labels above the rows: a long plot scrolls in its box
    items = [
        ForestItem(
            row=row,
            short=short_label(row.label),
            y=top + index * row_height + row_height / 2,
            x=x_of(row.mean),
            x_low=x_of(row.low) if row.low is not None else None,
            x_high=x_of(row.high) if row.high is not None else None,
        )
        for index, row in enumerate(rows)
    ]
    axis_y = top + len(rows) * row_height + 4
    steps = round((high - low) / 0.1)
    step = 0.1 if steps <= 10 else 0.2
    ticks = []
    value = low
    while value <= high + 1e-9:
        ticks.append(Tick(x_of(value), f"{value:.1f}"))
        value = round(value + step, 10)
    best = best if best is not None else (rows[0] if rows else None)
    return ForestPlot(
        width=width,
        height=int(axis_y + 34),
        left=left,
        right=right,
        top=top,
        axis_y=axis_y,
        items=items,
        ticks=ticks,
        best_x=x_of(best.mean) if best else None,
        best_low_x=x_of(best.low) if best and best.low is not None else None,
    )


@dataclass(frozen=True)
class HeatMap:
    """A rows x columns grid drawn as SVG: ``markup`` holds the cells (escaped, ready to be
    placed inside the ``<svg>``), the labels are drawn by the template."""

    width: int
    height: int
    cell_width: float
    cell_height: float
    left: int
    top: int
    row_labels: list[tuple[float, str, str]]  # (y, short label, full label)
    column_labels: list[tuple[float, str, str]]
    markup: str
    cells: int  # how many cells the markup draws


def _number(value: float) -> str:
    """A coordinate as SVG reads it, short: 2 decimals at most, no trailing ``.0``."""
    return str(round(value, 2)).removesuffix(".0")


def _cells_with_titles(
    fill: Sequence[Sequence[str]],
    titles: Sequence[Sequence[str]],
    *,
    left: int,
    top: int,
    cell_width: float,
    cell_height: float,
) -> str:
    width, height = _number(cell_width), _number(cell_height)
    return "".join(
        f'<rect x="{_number(left + column * cell_width)}" y="{_number(top + row * cell_height)}"'
        f' width="{width}" height="{height}" fill="{colour}"><title>'
        f"{html.escape(titles[row][column])}</title></rect>"
        for row, colours in enumerate(fill)
        for column, colour in enumerate(colours)
    )


def _banded_rows(
    fill: Sequence[Sequence[str]],
    row_titles: Sequence[str],
    *,
    left: int,
    top: int,
    cell_width: float,
    cell_height: float,
) -> str:
    """One ``<g>`` per row titled with its label; neighbouring cells of one colour are one
    rectangle of a path, and each colour of the row is one path: a few hundred bytes a row
    instead of one element and tooltip per cell."""
    parts = []
    for row, colours in enumerate(fill):
        y = _number(top + row * cell_height)
        paths: dict[str, list[str]] = {}
        column = 0
        while column < len(colours):
            end = column
            while end + 1 < len(colours) and colours[end + 1] == colours[column]:
                end += 1
            span = _number((end - column + 1) * cell_width)
            paths.setdefault(colours[column], []).append(
                f"M{_number(left + column * cell_width)} {y}h{span}v{_number(cell_height)}h-{span}z"
            )
            column = end + 1
        parts.append(
            f'<g class="heat-row"><title>{html.escape(row_titles[row])}</title>'
            + "".join(f'<path fill="{colour}" d="{"".join(d)}"/>' for colour, d in paths.items())
            + "</g>"
        )
    return "".join(parts)


def heat_map(
    *,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    fill: Sequence[Sequence[str]],
    titles: Sequence[Sequence[str]] | None = None,
    cell_width: float = 14,
    cell_height: float = 14,
    left: int = 210,
    top: int = 110,
) -> HeatMap:
    """A grid of ``fill`` colours (one row per row label), labels beside it (row labels to
    the left, column labels above, rotated by the template).

    With ``titles`` every cell is its own rectangle with its own tooltip (a pairwise matrix
    people point at); without, each row is drawn as bands of colour titled by its row label
    (a large heat map, whose values the exports carry)."""
    if titles is None:
        markup = _banded_rows(
            fill, row_labels, left=left, top=top, cell_width=cell_width, cell_height=cell_height
        )
    else:
        markup = _cells_with_titles(
            fill, titles, left=left, top=top, cell_width=cell_width, cell_height=cell_height
        )
    return HeatMap(
        width=math.ceil(left + len(column_labels) * cell_width + 8),
        height=math.ceil(top + len(row_labels) * cell_height + 8),
        cell_width=cell_width,
        cell_height=cell_height,
        left=left,
        top=top,
        row_labels=[
            (round(top + i * cell_height + cell_height / 2, 2), short_label(label), label)
            for i, label in enumerate(row_labels)
        ],
        column_labels=[
            (round(left + i * cell_width + cell_width / 2, 2), short_label(label, 16), label)
            for i, label in enumerate(column_labels)
        ],
        markup=markup,
        cells=sum(len(row) for row in fill),
    )


@dataclass(frozen=True)
class ScatterPoint:
    x: float
    y: float
    title: str
    above: bool  # y above the diagonal (the second coordinate higher)
    on: bool  # on the diagonal (equal values)


@dataclass(frozen=True)
class Scatter:
    size: int
    left: int
    top: int
    inner: int  # the square plot area's side
    points: list[ScatterPoint]
    x_ticks: list[Tick]  # at x, below the frame
    y_ticks: list[Tick]  # ``x`` holds the tick's y, left of the frame


def scatter(
    pairs: Sequence[tuple[float, float, str]], *, size: int = 340, margin: int = 44
) -> Scatter:
    """Points (a, b, title) on a square [0, 1] x [0, 1] plot: a to the right, b upwards
    (values outside are clamped to the frame); the diagonal is where a equals b."""
    inner = size - margin - 12
    left, top = margin, 12

    def place(value: float, flip: bool) -> float:
        value = min(1.0, max(0.0, value))
        return round(top + (1 - value) * inner, 2) if flip else round(left + value * inner, 2)

    points = [
        ScatterPoint(place(a, False), place(b, True), title, b > a, b == a) for a, b, title in pairs
    ]
    steps = [step / 5 for step in range(6)]
    return Scatter(
        size=size,
        left=left,
        top=top,
        inner=inner,
        points=points,
        x_ticks=[Tick(place(step, False), f"{step:.1f}") for step in steps],
        y_ticks=[Tick(place(step, True), f"{step:.1f}") for step in steps],
    )
