"""Leaderboard reports (CSV, booktabs LaTeX) for the page, the API and `evaluate`: one path."""

from __future__ import annotations

from dataclasses import dataclass

from annotations.formats import reports
from annotations.models import Collection
from annotations.scores.snapshots import leaderboard_read
from annotations.selectors import measure_values
from annotations.selectors.leaderboards import (
    ALPHA,
    CONFIDENCE,
    HSD_PERMUTATIONS,
    HSD_SEED,
    Leaderboard,
)

# The kinds a report comes in, as every entry point names them.
REPORT_KINDS = ("csv", "latex")


@dataclass(frozen=True)
class Report:
    kind: str
    content_type: str
    filename: str
    text: str


def report_rows(board: Leaderboard) -> list[reports.ReportRow]:
    """The board's rows, each with its means of the collection's other measures."""
    kept: list[dict[int, float]] = []
    for measure in board.collection.kept_measures:
        means, _ = measure_values.measure_means(board.collection, measure)
        kept.append({mean.run.id: mean.value for mean in means})
    return [
        reports.ReportRow(
            rank=row.rank,
            run=row.run.name,
            mean=row.ndcg,
            ci_low=row.ci_low,
            ci_high=row.ci_high,
            judged=row.judged,
            queries=row.queries,
            letters=row.letters,
            measures=tuple(values.get(row.run.id) for values in kept),
        )
        for row in board.rows
    ]


def report_meta(board: Leaderboard) -> reports.ReportMeta:
    significance = board.significance
    return reports.ReportMeta(
        k=board.k,
        measure="nDCG",
        alpha=significance.alpha if significance else ALPHA,
        permutations=significance.permutations if significance else HSD_PERMUTATIONS,
        seed=significance.seed if significance else HSD_SEED,
        confidence=CONFIDENCE,
        machine_grades=board.collection.machine_grades,
        measures=tuple(board.collection.measures),
    )


def report_board(*, collection: Collection, k: int) -> Leaderboard | None:
    """The stored leaderboard at k a request reports, or None while it is being computed:
    none stored yet, or its significance pass not run for its rows (a report is never
    written with letters of earlier scores)."""
    board = leaderboard_read(collection=collection, k=k)
    return board if board is not None and board.significance_current else None


def leaderboard_report(*, board: Leaderboard, kind: str) -> Report:
    """The leaderboard as a CSV (full precision, shortest round-trip numbers) or a booktabs
    LaTeX table (4 decimals), with the significance letters of these very rows."""
    if kind not in REPORT_KINDS:
        raise ValueError(f"report must be one of {', '.join(REPORT_KINDS)}, got {kind!r}")
    rows, meta = report_rows(board), report_meta(board)
    stem = f"{board.collection.slug}-leaderboard-ndcg{board.k}"
    if kind == "csv":
        text = reports.leaderboard_csv(rows, meta)
        return Report(kind, "text/csv; charset=utf-8", f"{stem}.csv", text)
    text = reports.leaderboard_latex(rows, meta)
    return Report(kind, "application/x-tex; charset=utf-8", f"{stem}.tex", text)
