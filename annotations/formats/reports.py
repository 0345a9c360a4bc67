"""Leaderboard reports from plain rows: a CSV at full precision and a booktabs LaTeX table."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real

from annotations.formats.spreadsheet_cells import SpreadsheetWriter
from annotations.metrics.machine_grades import MACHINE_RULES, RULE_STATEMENTS

__all__ = [
    "CSV_HEADER",
    "ReportMeta",
    "ReportRow",
    "latex_escape",
    "leaderboard_csv",
    "leaderboard_latex",
    "shortest_repr",
]

CSV_HEADER: tuple[str, ...] = (
    "rank",
    "run",
    "mean",
    "ci_low",
    "ci_high",
    "judged",
    "queries",
    "group",
    "machine_grades",
)


@dataclass(frozen=True)
class ReportRow:
    """One leaderboard line. ``judged`` is judged@k (a share in [0, 1]); ``letters`` the
    run's compact letter display (``metrics.hsd.compact_letters``); a CI may be missing."""

    rank: int
    run: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    judged: float
    queries: int
    letters: str
    # The run's means of the collection's other measures, in `ReportMeta.measures` order
    # (None: pending).
    measures: tuple[float | None, ...] = ()


@dataclass(frozen=True)
class ReportMeta:
    """How the leaderboard was computed: cutoff ``k``, the measure's name ("nDCG"), and the
    randomised Tukey HSD test's ``alpha``, ``permutations`` and ``seed``; ``confidence`` is
    the level of the rows' intervals (it names the CI column); ``machine_grades`` the rule
    for machine judges' grades the scores and judged@k count under
    (``metrics.machine_grades``; empty: not stated)."""

    k: int
    measure: str
    alpha: float
    permutations: int
    seed: int
    confidence: float = 0.95
    machine_grades: str = ""
    measures: tuple[str, ...] = ()


def shortest_repr(x: float) -> str:
    """The shortest decimal string that reads back (``float(s)``) to exactly the same double.

    This is Python's ``repr`` of a float (David Gay's shortest round-trip algorithm):
    ``repr(0.1 + 0.2)`` is ``"0.30000000000000004"`` because that double is not 0.1 + 0.2's
    decimal value, and ``repr(0.086)`` is ``"0.086"``. The value is printed as stored, never
    through arithmetic (scaling, rounding) that would change it. ``repr``'s form is kept as
    is: integral values keep their ".0" (``"1.0"``), large and tiny ones use an exponent
    (``"1e+16"``, ``"5e-324"``), ``-0.0`` keeps its sign, and non-finite values give
    ``"nan"``, ``"inf"`` and ``"-inf"``, which ``float`` also reads. The argument is taken as
    a double first (``float(x)``), so a numpy float64 prints as ``"0.5"``, not
    ``"np.float64(0.5)"``; a float32 prints as the double it converts to exactly.
    Raises ``ValueError`` for a bool or anything not a real number (a string, say).
    """
    if isinstance(x, bool) or not isinstance(x, Real):
        raise ValueError(f"shortest_repr takes a real number, got {x!r}")
    return repr(float(x))


def _check_rows(rows: Sequence[ReportRow]) -> None:
    for row in rows:
        if not isinstance(row.run, str) or not isinstance(row.letters, str):
            raise ValueError(f"run name and letters must be strings, got {row.run!r}")
        if isinstance(row.rank, bool) or not isinstance(row.rank, Integral):
            raise ValueError(f"rank must be an integer, got {row.rank!r}")
        if isinstance(row.queries, bool) or not isinstance(row.queries, Integral):
            raise ValueError(f"queries must be an integer, got {row.queries!r}")
        if (row.ci_low is None) != (row.ci_high is None):
            raise ValueError(f"run {row.run!r}: give both CI bounds or neither")
        values = [row.mean, row.judged]
        if row.ci_low is not None and row.ci_high is not None:
            values += [row.ci_low, row.ci_high]
        if not all(math.isfinite(value) for value in values):
            raise ValueError(f"run {row.run!r}: mean, CI and judged must be finite")


def _check_meta(meta: ReportMeta) -> None:
    for name in ("k", "permutations"):
        value = getattr(meta, name)
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(meta.seed, bool) or not isinstance(meta.seed, Integral) or meta.seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {meta.seed!r}")
    if not 0.0 < meta.alpha <= 1.0:  # also rejects NaN
        raise ValueError(f"alpha must lie in (0, 1], got {meta.alpha!r}")
    if not 0.0 < meta.confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {meta.confidence!r}")
    if not meta.measure:
        raise ValueError("measure must be named")
    if meta.machine_grades and meta.machine_grades not in MACHINE_RULES:
        raise ValueError(
            f"machine_grades must be one of {', '.join(MACHINE_RULES)}, got {meta.machine_grades!r}"
        )


def leaderboard_csv(rows: Sequence[ReportRow], meta: ReportMeta | None = None) -> str:
    """The leaderboard as CSV text (RFC 4180), one line per row in the order given.

    Header ``rank,run,mean,ci_low,ci_high,judged,queries,group,machine_grades``
    (``CSV_HEADER``), then one column per measure of ``meta.measures`` (the collection's
    other measures, named in ir_measures' syntax: each row's mean of it, empty when
    pending); floats via ``shortest_repr``, so ``float(cell)`` gives back the very
    double; a missing CI is an empty cell; ``group`` holds the letters; ``machine_grades``
    the rule the scores count machine judges' grades under (``meta.machine_grades``, the
    same on every line, so the file stays one plain table that any CSV reader loads; empty
    without ``meta``). Written by ``spreadsheet_cells``' ``SpreadsheetWriter``: a field that
    holds a comma, a double quote, CR or LF is quoted (inner quotes doubled), lines end with
    CRLF, and a run name a spreadsheet would take for a formula (``=1+1``) gets a leading
    ``'``; other names go through unchanged, non-ASCII included (encode the text as UTF-8),
    and the numbers stay numbers. Raises ``ValueError`` for non-integral ranks or query
    counts, one CI bound without the other, non-finite values or invalid ``meta``.
    """
    _check_rows(rows)
    if meta is not None:
        _check_meta(meta)
    rule = meta.machine_grades if meta is not None else ""
    names = meta.measures if meta is not None else ()
    if any(len(row.measures) != len(names) for row in rows):
        raise ValueError(f"every row needs one value per measure of {list(names)}")
    buffer = io.StringIO(newline="")
    writer = SpreadsheetWriter(buffer, lineterminator="\r\n")
    writer.writerow([*CSV_HEADER, *names])
    for row in rows:
        # Numbers go in unformatted: the writer prints a float as shortest_repr does and
        # tells numbers from text by their type.
        writer.writerow(
            [
                int(row.rank),
                row.run,
                float(row.mean),
                None if row.ci_low is None else float(row.ci_low),
                None if row.ci_high is None else float(row.ci_high),
                float(row.judged),
                int(row.queries),
                row.letters,
                rule,
                *(None if value is None else float(value) for value in row.measures),
            ]
        )
    return buffer.getvalue()


# --- LaTeX --------------------------------------------------------------------------------

_LATEX_SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    # Not special to TeX, but the default OT1 font encoding prints other glyphs for them.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}

# Pairs the fonts would merge into one glyph ("--" an en dash, "``" a quote, "?`" an inverted
# question mark, ",," a low quote in T1): "{}" between them keeps both characters.
_LIGATURES = frozenset({"--", "``", "''", "!`", "?`", ",,"})


def latex_escape(text: str) -> str:
    """``text`` as LaTeX that prints it, for text mode.

    The ten special characters ``& % $ # _ { } ~ ^ \\`` become ``\\&``, ``\\%``, ``\\$``,
    ``\\#``, ``\\_``, ``\\{``, ``\\}``, ``\\textasciitilde{}``, ``\\textasciicircum{}`` and
    ``\\textbackslash{}``; ``< > |`` become ``\\textless{}``, ``\\textgreater{}`` and
    ``\\textbar{}`` (OT1 would print other glyphs). ``{}`` goes between the two characters
    of a ligature (two hyphens, two backquotes, two apostrophes, two commas, "!" or "?" then
    a backquote) so that each prints as itself. Control characters (tabs, line breaks, any
    Unicode category Cc) become a space: a line break could end the table cell's paragraph.
    Everything else, non-ASCII included, passes through unchanged (a straight double quote
    prints as a closing curly one unless the font encoding is T1). The document then needs
    UTF-8 input: pdfLaTeX reads UTF-8 by default since 2018 (``\\usepackage[utf8]{inputenc}``
    before that) but knows only the characters its fonts and encodings declare, e.g. Latin
    with ``\\usepackage[T1]{fontenc}``; for others (CJK, emoji) use LuaLaTeX or XeLaTeX
    with a font that has them.
    """
    pieces: list[str] = []
    for position, character in enumerate(text):
        if character in _LATEX_SPECIAL:
            pieces.append(_LATEX_SPECIAL[character])
        elif ord(character) < 0x20 or 0x7F <= ord(character) <= 0x9F:
            pieces.append(" ")
        else:
            pieces.append(character)
            if text[position : position + 2] in _LIGATURES:
                pieces.append("{}")
    return "".join(pieces)


def _fixed(value: float) -> str:
    """Four decimals, correctly rounded from the double itself; no "-0.0000"."""
    text = f"{value:.4f}"
    return text[1:] if text == "-0.0000" else text


def _count(value: int) -> str:
    return f"{value:,}"


# The Run column's width (pt) beside the score columns on a one-column page (345 pt, LaTeX's
# `article`) at \small with 4 pt between columns, and what a cut name's ellipsis and key
# number take of it. tests/test_reports.py compiles the table.
_NAME_WIDTH = 85.0
_CUT_MARK_WIDTH = 24.0
# Rough widths (pt) of characters at \small in Computer Modern (T1), measured with \setbox:
# a name is cut by how wide it prints, so that "WWW..." is cut sooner than "iii...".
_NARROW = frozenset("ijlft.,;:!|'`()[]/- ")
_WIDE = frozenset("mwMW@%")


def _latex_width(text: str) -> float:
    """About how wide ``text`` prints in the table (pt)."""
    return sum(
        3.0 if c in _NARROW else 9.5 if c in _WIDE else 6.8 if c.isupper() else 4.8 for c in text
    )


def _latex_cut(name: str, key: int) -> str:
    """A name too wide for the table's Run column: as much of its start as fits, an ellipsis
    and the number ``key`` of its line in the key below the table."""
    width, end = _CUT_MARK_WIDTH, 0
    while end < len(name) and width + _latex_width(name[end]) <= _NAME_WIDTH:
        width += _latex_width(name[end])
        end += 1
    return f"{latex_escape(name[:end])}\\ldots\\textsuperscript{{{key}}}"


def _latex_breakable(name: str, every: int = 8) -> str:
    """``name`` escaped, TeX free to break the line after every ``every`` characters (a
    ragged right margin of a few characters, and a source still readable)."""
    pieces = (name[start : start + every] for start in range(0, len(name), every))
    return r"\allowbreak{}".join(latex_escape(piece) for piece in pieces)


# What a Rank column and the space between two columns take (pt) in the tables of the
# other measures, beside the Run column; the page's text width they are packed into.
_RANK_WIDTH = 15.0
_GAP_WIDTH = 8.0
_TEXT_WIDTH = 345.0


def _measure_groups(rows: Sequence[ReportRow], meta: ReportMeta) -> list[list[int]]:
    """The other measures' columns (positions in ``meta.measures``) in tables of as many as
    fit the text width beside Rank and Run, each as wide as its header or widest number."""
    room = _TEXT_WIDTH - _RANK_WIDTH - _NAME_WIDTH - 2 * _GAP_WIDTH
    groups: list[list[int]] = []
    used = room
    for position, name in enumerate(meta.measures):
        values = [row.measures[position] for row in rows]
        cells = [_fixed(value) for value in values if value is not None]
        width = max([_latex_width(name), *map(_latex_width, cells)]) + _GAP_WIDTH
        if used + width > room and (not groups or groups[-1]):
            groups.append([])
            used = 0.0
        groups[-1].append(position)
        used += width
    return groups


def _measure_tables(rows: Sequence[ReportRow], meta: ReportMeta, names: Sequence[str]) -> list[str]:
    """The booktabs tables of the other measures' means below the leaderboard's: Rank and Run
    (cut as above), then as many measure columns as fit the page (``_measure_groups``), 4
    decimals, "--" where a run's values are pending."""
    lines: list[str] = []
    for group in _measure_groups(rows, meta):
        lines += [
            r"\par\medskip",
            f"\\begin{{tabular}}{{rl{'r' * len(group)}}}",
            r"\toprule",
            "Rank & Run & "
            + " & ".join(latex_escape(meta.measures[position]) for position in group)
            + r" \\",
            r"\midrule",
        ]
        for row, name in zip(rows, names, strict=True):
            values = [row.measures[position] for position in group]
            cells = ["--" if value is None else _fixed(value) for value in values]
            lines.append(" & ".join([str(int(row.rank)), name, *cells]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


def leaderboard_latex(rows: Sequence[ReportRow], meta: ReportMeta) -> str:
    """The leaderboard as a LaTeX ``table`` with a booktabs ``tabular``.

    Columns Rank, Run, ``<measure>@k``, the CI ("95\\% CI", from ``meta.confidence``),
    ``judged@k`` and Group (the compact letter display, as ranx's ``to_latex`` puts it in a
    column); rows in the order given. Numbers have 4 decimals, each rounded from its double
    by Python's correctly rounded formatting (``-0.0000`` prints as ``0.0000``); a missing
    CI prints as "--". Every row whose mean equals the highest mean exactly is set in bold
    (so ties at the top are all bold). Run names, the measure and the letters go through
    ``latex_escape``; see there for non-ASCII names. The caption states the measure, the
    number of runs and of queries (a range when the rows differ), the confidence level and
    the randomised Tukey HSD test with its alpha, permutations and seed, and the grades
    scored (``meta.machine_grades``: people's only, or how machine judges' count); the label is
    ``tab:leaderboard-<k>``. Needs ``\\usepackage{booktabs}``. Raises ``ValueError`` as
    ``leaderboard_csv`` does, and for invalid ``meta``.

    The table is set in ``\\small`` with 4 pt between columns, so that the score columns
    and a name of about 16 lowercase letters fit the text width of a one-column page (345 pt,
    LaTeX's ``article``). A name too wide for that (run tags reach 150 characters, and TeX
    cannot break a name without spaces; the width is estimated from Computer Modern's) is
    cut, with an ellipsis and a key number; the key below the table gives each cut name
    whole, free to break after every eight characters.
    """
    _check_rows(rows)
    _check_meta(meta)
    measure = f"{latex_escape(meta.measure)}@{meta.k}"
    # Ten significant digits drop the binary noise of the product (100 * 0.95).
    level = f"{100 * meta.confidence:.10g}\\%"
    best = max((row.mean for row in rows), default=None)
    counts = sorted({int(row.queries) for row in rows})
    if not counts:
        queries = "no queries"
    elif len(counts) == 1:
        queries = f"{_count(counts[0])} {'query' if counts[0] == 1 else 'queries'}"
    else:
        queries = f"{_count(counts[0])}--{_count(counts[-1])} queries"
    runs = f"{len(rows)} {'run' if len(rows) == 1 else 'runs'}"
    caption = (
        f"{measure} of {runs} over {queries}, with {level} confidence intervals and judged@"
        f"{meta.k}. Runs sharing a letter in the Group column are not significantly "
        f"different (randomised Tukey HSD test, $\\alpha = {shortest_repr(meta.alpha)}$, "
        f"{_count(int(meta.permutations))} permutations, seed {int(meta.seed)}); the best "
        f"mean is in bold."
    )
    if meta.machine_grades:
        caption += (
            f" Grades scored, judged@{meta.k} included: "
            f"{latex_escape(RULE_STATEMENTS[meta.machine_grades])}."
        )
    if meta.measures:
        caption += (
            " Below, each run's mean of the collection's other measures (trec\\_eval's "
            "\\texttt{all} value; no interval or test)."
        )
    if any(_latex_width(row.run) > _NAME_WIDTH for row in rows):
        caption += r" Names cut with \ldots{} are given whole below the table."
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\setlength{\tabcolsep}{4pt}",
        f"\\caption{{{caption}}}",
        f"\\label{{tab:leaderboard-{meta.k}}}",
        r"\begin{tabular}{rlrcrl}",
        r"\toprule",
        f"Rank & Run & {measure} & {level} CI & judged@{meta.k} & Group \\\\",
        r"\midrule",
    ]
    keys: dict[str, int] = {}  # cut name -> its number in the key
    names: list[str] = []  # each row's Run cell
    for row in rows:
        mean = _fixed(row.mean)
        if row.mean == best:
            mean = f"\\textbf{{{mean}}}"
        if row.ci_low is None or row.ci_high is None:
            interval = "--"
        else:
            interval = f"[{_fixed(row.ci_low)}, {_fixed(row.ci_high)}]"
        if _latex_width(row.run) > _NAME_WIDTH:
            name = _latex_cut(row.run, keys.setdefault(row.run, len(keys) + 1))
        else:
            name = latex_escape(row.run)
        names.append(name)
        cells = [
            str(int(row.rank)),
            name,
            mean,
            interval,
            _fixed(row.judged),
            latex_escape(row.letters),
        ]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += _measure_tables(rows, meta, names)
    if keys:
        lines += [r"\par\smallskip", r"{\footnotesize\raggedright"]
        lines += [
            f"\\textsuperscript{{{number}}}~{_latex_breakable(name)}\\par"
            for name, number in keys.items()
        ]
        lines.append("}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"
