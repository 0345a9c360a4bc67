"""Leaderboard reports: CSV that reads back to the same doubles, LaTeX that escapes and builds."""

import csv
import io
import math
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.formats.reports import (
    CSV_HEADER,
    ReportMeta,
    ReportRow,
    latex_escape,
    leaderboard_csv,
    leaderboard_latex,
    shortest_repr,
)
from tests.conftest import require_component

META = ReportMeta(
    k=10, measure="nDCG", alpha=0.05, permutations=10_000, seed=0, machine_grades="people"
)
SPECIALS = "&%$#_{}~^\\"
TRICKY_NAMES = [
    "plain",
    "comma, inside",
    'say "hi"',
    "line\nbreak",
    "carriage\rreturn",
    "Zürich 東京 🚀",
    "  spaced  ",
    "",
    'a,"b"\r\n,c',
]


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _rows() -> list[ReportRow]:
    tricky = [0.1 + 0.2, 5e-324, 1 / 3, 0.08600000000000001, 1.0, -0.0, 1e16, 2.0**-1074 * 3]
    rows = []
    for index, name in enumerate(TRICKY_NAMES):
        value = tricky[index % len(tricky)]
        rows.append(
            ReportRow(
                rank=index + 1,
                run=name,
                mean=value,
                ci_low=None if index == 2 else value / 3,
                ci_high=None if index == 2 else math.nextafter(value, 2.0),
                judged=1 / 7,
                queries=249,
                letters="ab"[: 1 + index % 2],
            )
        )
    return rows


# --- shortest_repr --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1 + 0.2, "0.30000000000000004"),
        (0.086, "0.086"),
        (0.08600000000000001, "0.08600000000000001"),
        (5e-324, "5e-324"),
        (1 / 3, "0.3333333333333333"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (1e16, "1e+16"),
        (np.float64(0.5), "0.5"),
        (3, "3.0"),
        (float("inf"), "inf"),
        (float("nan"), "nan"),
    ],
)
def test_shortest_repr_is_reprs_form(value: float, text: str) -> None:
    assert shortest_repr(value) == text


@settings(max_examples=500)
@given(value=st.floats(allow_nan=False))
def test_shortest_repr_reads_back_and_has_no_shorter_form(value: float) -> None:
    text = shortest_repr(value)
    assert _bits(float(text)) == _bits(value)
    if math.isfinite(value) and value != 0.0:
        mantissa = text.split("e")[0].lstrip("-").replace(".", "").lstrip("0")
        digits = len(mantissa.rstrip("0")) or 1
        for fewer in range(1, digits):
            assert float(f"{value:.{fewer}g}") != value


def test_shortest_repr_refuses_non_numbers() -> None:
    for bad in (True, "0.5", None):
        with pytest.raises(ValueError):
            shortest_repr(bad)  # type: ignore[arg-type]


# --- CSV -----------------------------------------------------------------------------------


def test_csv_round_trips_doubles_and_names() -> None:
    rows = _rows()
    text = leaderboard_csv(rows, META)
    parsed = list(csv.reader(io.StringIO(text, newline="")))
    assert parsed[0] == list(CSV_HEADER)
    assert len(parsed) == len(rows) + 1
    for row, cells in zip(rows, parsed[1:], strict=True):
        rank, run, mean, low, high, judged, queries, group, rule = cells
        assert int(rank) == row.rank and run == row.run and group == row.letters
        assert rule == "people"  # the rule for machine grades, on every line
        assert _bits(float(mean)) == _bits(row.mean)
        assert float(mean) == row.mean and float(judged) == row.judged
        if row.ci_low is None:
            assert (low, high) == ("", "")
        else:
            assert float(low) == row.ci_low and float(high) == row.ci_high
        assert int(queries) == row.queries
    assert "0.30000000000000004" in text and "5e-324" in text and "0.3333333333333333" in text


def test_csv_quotes_as_rfc_4180_says() -> None:
    row = ReportRow(1, 'a,"b"', 0.5, 0.25, 0.75, 1.0, 3, "a")
    header = "rank,run,mean,ci_low,ci_high,judged,queries,group,machine_grades\r\n"
    assert leaderboard_csv([row]) == header + '1,"a,""b""",0.5,0.25,0.75,1.0,3,a,\r\n'
    assert leaderboard_csv([]) == header
    assert leaderboard_csv([row], META).endswith("3,a,people\r\n")


def test_csv_names_a_spreadsheet_would_evaluate_get_a_quote_and_numbers_stay_numbers() -> None:
    rows = [
        ReportRow(1, "=1+1", 0.5, -0.5, 0.75, 1.0, 3, "a"),
        ReportRow(2, "@SUM(1+1)*cmd|'/c,calc'!A0", -0.0, None, None, 0.5, 3, "a"),
        ReportRow(3, "-2+3", 0.25, -1e-300, 0.5, 0.5, 3, "b"),
    ]
    assert leaderboard_csv(rows, META) == (
        "rank,run,mean,ci_low,ci_high,judged,queries,group,machine_grades\r\n"
        "1,'=1+1,0.5,-0.5,0.75,1.0,3,a,people\r\n"
        "2,\"'@SUM(1+1)*cmd|'/c,calc'!A0\",-0.0,,,0.5,3,a,people\r\n"
        "3,'-2+3,0.25,-1e-300,0.5,0.5,3,b,people\r\n"
    )


@pytest.mark.parametrize(
    "row",
    [
        ReportRow(1, "x", float("nan"), 0.1, 0.2, 1.0, 3, "a"),
        ReportRow(1, "x", 0.1, float("inf"), 0.2, 1.0, 3, "a"),
        ReportRow(1, "x", 0.1, 0.1, None, 1.0, 3, "a"),
        ReportRow(True, "x", 0.1, 0.1, 0.2, 1.0, 3, "a"),
        ReportRow(1, "x", 0.1, 0.1, 0.2, 1.0, 3.0, "a"),  # type: ignore[arg-type]
        ReportRow(1, 7, 0.1, 0.1, 0.2, 1.0, 3, "a"),  # type: ignore[arg-type]
    ],
)
def test_bad_rows_are_refused(row: ReportRow) -> None:
    with pytest.raises(ValueError):
        leaderboard_csv([row])
    with pytest.raises(ValueError):
        leaderboard_latex([row], META)


@pytest.mark.parametrize(
    "meta",
    [
        ReportMeta(0, "nDCG", 0.05, 10, 0),
        ReportMeta(10, "nDCG", 0.0, 10, 0),
        ReportMeta(10, "nDCG", float("nan"), 10, 0),
        ReportMeta(10, "nDCG", 0.05, 0, 0),
        ReportMeta(10, "nDCG", 0.05, 10, -1),
        ReportMeta(10, "", 0.05, 10, 0),
        ReportMeta(10, "nDCG", 0.05, 10, 0, confidence=1.0),
        ReportMeta(10, "nDCG", 0.05, 10, 0, machine_grades="both"),
    ],
)
def test_bad_meta_is_refused(meta: ReportMeta) -> None:
    with pytest.raises(ValueError):
        leaderboard_latex([], meta)
    with pytest.raises(ValueError):
        leaderboard_csv([], meta)


# --- LaTeX escaping ------------------------------------------------------------------------


def test_every_special_character_is_escaped() -> None:
    assert latex_escape(SPECIALS) == (
        r"\&\%\$\#\_\{\}\textasciitilde{}\textasciicircum{}\textbackslash{}"
    )
    assert latex_escape("a<b>c|d") == r"a\textless{}b\textgreater{}c\textbar{}d"
    assert latex_escape("run--a---b") == "run-{}-a-{}-{}-b"
    assert latex_escape("``q'' ?` !` ,,") == "`{}`q'{}' ?{}` !{}` ,{},"
    assert latex_escape("tab\there\nnew\r\x00\x85") == "tab here new   "
    assert latex_escape("Zürich 東京") == "Zürich 東京"
    assert latex_escape(r"\textbf{x}") == r"\textbackslash{}textbf\{x\}"


_ESCAPES = sorted(
    [
        r"\textasciitilde{}",
        r"\textasciicircum{}",
        r"\textbackslash{}",
        r"\textless{}",
        r"\textgreater{}",
        r"\textbar{}",
        *(f"\\{c}" for c in "&%$#_{}"),
    ],
    key=len,
    reverse=True,
)


@settings(max_examples=300)
@given(text=st.text(alphabet=st.sampled_from([*SPECIALS, *"<>|-`'!?,aZ ü\n"]), max_size=30))
def test_escaped_text_has_no_bare_special_character(text: str) -> None:
    escaped = latex_escape(text)
    rest = escaped
    for escape in _ESCAPES:
        rest = rest.replace(escape, "")
    rest = rest.replace("{}", "")
    assert not set(rest) & set(SPECIALS + "<>|\n")
    for ligature in ("--", "``", "''", "!`", "?`", ",,"):
        assert ligature not in escaped


# --- LaTeX table ---------------------------------------------------------------------------


def _table_rows() -> list[ReportRow]:
    return [
        ReportRow(1, "BM25 & RM3_{v2}", 0.12345, 0.1, 0.15, 0.95, 249, "a"),
        ReportRow(1, "tied~best", 0.12345, 0.11, 0.14, 0.9, 249, "a"),
        ReportRow(3, "Zürich 100% #3", 0.00005, None, None, 1 / 3, 249, "ab"),
        ReportRow(4, "zero", -0.00001, -0.00002, 0.0, 0.0, 249, "b"),
    ]


def test_latex_table_layout_and_numbers() -> None:
    text = leaderboard_latex(_table_rows(), META)
    lines = text.splitlines()
    assert lines[0] == r"\begin{table}[t]" and lines[-1] == r"\end{table}"
    assert text.index(r"\toprule") < text.index(r"\midrule") < text.index(r"\bottomrule")
    assert r"\label{tab:leaderboard-10}" in lines
    assert r"Rank & Run & nDCG@10 & 95\% CI & judged@10 & Group \\" in lines
    body = lines[lines.index(r"\midrule") + 1 : lines.index(r"\bottomrule")]
    assert body == [
        r"1 & BM25 \& RM3\_\{v2\} & \textbf{0.1235} & [0.1000, 0.1500] & 0.9500 & a \\",
        r"1 & tied\textasciitilde{}best & \textbf{0.1235} & [0.1100, 0.1400] & 0.9000 & a \\",
        r"3 & Zürich 100\% \#3 & 0.0001 & -- & 0.3333 & ab \\",
        r"4 & zero & 0.0000 & [0.0000, 0.0000] & 0.0000 & b \\",
    ]
    caption = next(line for line in lines if line.startswith(r"\caption{"))
    for part in (
        "randomised Tukey HSD",
        r"$\alpha = 0.05$",
        "10,000 permutations",
        "seed 0",
        "249 queries",
        "4 runs",
        r"95\% confidence",
    ):
        assert part in caption


def test_latex_caption_follows_meta() -> None:
    meta = ReportMeta(k=5, measure="nDCG_cut", alpha=0.01, permutations=1, seed=7, confidence=0.9)
    rows = [
        ReportRow(1, "a", 0.5, 0.4, 0.6, 1.0, 1, "a"),
        ReportRow(2, "b", 0.25, 0.2, 0.3, 1.0, 3, "b"),
    ]
    text = leaderboard_latex(rows, meta)
    assert r"\label{tab:leaderboard-5}" in text
    assert r"Rank & Run & nDCG\_cut@5 & 90\% CI & judged@5 & Group \\" in text
    assert r"$\alpha = 0.01$, 1 permutations, seed 7" in text
    assert "over 1--3 queries" in text
    assert text.count(r"\textbf{") == 1
    empty = leaderboard_latex([], META)
    assert "0 runs over no queries" in empty and r"\midrule" + "\n" + r"\bottomrule" in empty


@pytest.mark.parametrize(
    ("rule", "stated"),
    [
        ("people", "people's grades only (machine judges' grades not counted)"),
        ("fill", "machine judges' grades counted on the pairs no person judged"),
        ("assessor", "machine judges' grades counted as one assessor among the people"),
    ],
)
def test_latex_caption_states_the_grades_scored(rule: str, stated: str) -> None:
    meta = ReportMeta(k=5, measure="nDCG", alpha=0.05, permutations=10, seed=0)
    rows = [ReportRow(1, "a", 0.5, 0.4, 0.6, 1.0, 1, "a")]
    assert "Grades scored" not in leaderboard_latex(rows, meta)  # not stated: not said
    text = leaderboard_latex(rows, ReportMeta(**{**meta.__dict__, "machine_grades": rule}))
    caption = next(line for line in text.splitlines() if line.startswith(r"\caption{"))
    assert f"Grades scored, judged@5 included: {stated}." in caption


_ENGINE = shutil.which("pdflatex") or shutil.which("lualatex")


def _compiled(tmp_path: Path, rows: list[ReportRow], meta: ReportMeta = META) -> str:
    """Compile the rows' table in an ``article`` (a 345 pt text width); pdfLaTeX's log."""
    if _ENGINE is None:
        require_component(
            "neither pdflatex nor lualatex is installed "
            "(apt-get install --no-install-recommends texlive-latex-recommended)"
        )
    assert _ENGINE is not None
    encoding = r"\usepackage[T1]{fontenc}" if Path(_ENGINE).name == "pdflatex" else ""
    document = "\n".join(
        [
            r"\documentclass{article}",
            encoding,
            r"\usepackage{booktabs}",
            r"\begin{document}",
            leaderboard_latex(rows, meta),
            r"\end{document}",
            "",
        ]
    )
    (tmp_path / "table.tex").write_text(document, encoding="utf-8")
    finished = subprocess.run(
        [_ENGINE, "-interaction=nonstopmode", "-halt-on-error", "table.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout[-3000:]
    assert (tmp_path / "table.pdf").stat().st_size > 0
    return (tmp_path / "table.log").read_text(encoding="utf-8", errors="replace")


def test_latex_table_compiles(tmp_path: Path) -> None:
    names = ["all " + SPECIALS + " <>|", "run--a ``x'' ?` ,,", "Zürich", "new\nline"]
    rows = [
        ReportRow(rank, name, 0.5 - rank / 10, 0.1, 0.6, 1.0, 249, "ab"[rank % 2])
        for rank, name in enumerate(names, start=1)
    ]
    _compiled(tmp_path, rows)


# 150-character run names: without a space (TeX cannot break them), with TeX's specials, and
# of the widest letters.
LONG_NAMES = ["a" + "x" * 149, "b_" + "&%$#_{}~^\\" * 14 + "y" * 8, "c" + "W" * 149]


def _overfull(log: str) -> list[float]:
    """How far (pt) each overfull box of a pdfLaTeX log sticks out."""
    return [float(points) for points in re.findall(r"Overfull \\[hv]box \(([0-9.]+)pt", log)]


def test_latex_table_with_150_character_names_fits_the_page(tmp_path: Path) -> None:
    names = [*LONG_NAMES, *(f"run{i:02d}" for i in range(9)), "sixteen-letters!"]
    rows = [
        ReportRow(rank, name, 0.5 - rank / 100, 0.1, 0.6, 1.0, 249, "abc"[rank % 3])
        for rank, name in enumerate(names, start=1)
    ]
    text = leaderboard_latex(rows, META)
    body = text.splitlines()
    # Each long name cut to what fits (fewer wide letters), a key number, whole in the key.
    assert r"1 & axxxxxxxxxxx\ldots\textsuperscript{1} & \textbf{0.4900} & " in text
    assert r"3 & cWWWWW\ldots\textsuperscript{3} & 0.4700 & [0.1000, 0.6000]" in text
    assert r"13 & sixteen-letters! & 0.3700 & [0.1000, 0.6000] & 1.0000 & b \\" in body
    key = body[body.index(r"\end{tabular}") + 1 : body.index(r"\end{table}")]
    assert key[2].startswith(r"\textsuperscript{1}~axxxxxxx\allowbreak{}xxxxxxxx")
    whole = [line.split("~", 1)[1].replace(r"\allowbreak{}", "") for line in key[2:-1]]
    assert whole == [latex_escape(name) + r"\par" for name in LONG_NAMES]
    assert "Names cut with" in text
    log = _compiled(tmp_path, rows)
    # Nothing sticks out by more than a glyph's overhang: every score column is on the page.
    assert not [points for points in _overfull(log) if points > 3], log[-3000:]


def test_latex_other_measures_follow_in_tables_that_fit_the_page(tmp_path: Path) -> None:
    """Each kept measure gets a column of its own, in tables below the leaderboard's of as
    many columns as fit a one-column page; the long names cut as in the first table."""
    measures = ("AP", "P@10", "RR", "nDCG", "Bpref", "RBP(p=0.8)@100", "NumRet(rel=1)", "ERR@20")
    meta = ReportMeta(**{**META.__dict__, "measures": measures})
    names = [*LONG_NAMES, "run01", "sixteen-letters!"]
    rows = [
        ReportRow(
            rank, name, 0.5 - rank / 100, 0.1, 0.6, 1.0, 249, "ab"[rank % 2],
            measures=tuple(
                None if (rank, position) == (2, 1) else 1234.0 if position == 6 else rank / 7
                for position in range(len(measures))
            ),
        )
        for rank, name in enumerate(names, start=1)
    ]  # fmt: skip
    text = leaderboard_latex(rows, meta)
    heads = [
        line for line in text.splitlines() if line.startswith("Rank & Run & ") and "CI" not in line
    ]
    shown = [name for head in heads for name in head[len("Rank & Run & ") : -3].split(" & ")]
    assert shown == [latex_escape(name) for name in measures]  # every measure, once, in order
    assert len(heads) > 1  # more than one table: eight columns do not fit beside the names
    assert r"\ldots\textsuperscript{2} & 0.2857 & -- & 0.2857 & " in text  # pending: --
    assert "1234.0000" in text and "other measures" in text
    log = _compiled(tmp_path, rows, meta)
    assert not [points for points in _overfull(log) if points > 3], log[-3000:]
