"""The leaderboard's pictures and reports: forest plot data, the significance page, downloads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotations import selectors
from annotations.formats import charts
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.models import Collection
from annotations.scores import measure_significance
from annotations.scores.leaderboard_reads import RETRY_AFTER_SECONDS
from annotations.scores.measure_significance import measure_significance_detail
from annotations.scores.reports import REPORT_KINDS, leaderboard_report, report_board
from annotations.scores.significance import SignificanceDetail, significance_detail
from annotations.selectors import measure_values
from annotations.selectors.leaderboards import Leaderboard, LeaderboardRow
from annotations.views._collection import login_first, readable_collection

# The pairwise matrix and the per-query heat map draw at most this many runs (best first):
# beyond, cells get too small to point at; the CSV reports and the API carry every run.
MATRIX_RUNS = 60
HEAT_RUNS = 50


def forest_of(board: Leaderboard, rows: list[LeaderboardRow]) -> Callable[[], charts.ForestPlot]:
    """The CI forest plot of `rows` (the page's slice of the board), drawn only if the page's
    cached fragment is not: on the whole board's axis, with its best run's line, so that
    every page of a long ranking is drawn to the same scale."""

    def item(row: LeaderboardRow) -> charts.ForestRow:
        return charts.ForestRow(
            label=f"{row.rank}. {row.run.name}",
            mean=row.ndcg,
            low=row.ci_low,
            high=row.ci_high,
            letters=row.letters,
            below_best=row.below_best,
        )

    def build() -> charts.ForestPlot:
        whole = board.rows
        extent = [v for row in whole for v in (row.ndcg, row.ci_low, row.ci_high) if v is not None]
        best = item(whole[0]) if whole else None
        return charts.forest_plot([item(row) for row in rows], extent=extent, best=best)

    return build


def _matrix(detail: SignificanceDetail) -> dict[str, Any] | None:
    significance = detail.significance
    if significance is None or not detail.pair_ids:
        return None
    ids = detail.pair_ids[:MATRIX_RUNS]
    count = len(ids)
    p = detail.p_adjusted[:count, :count]
    alpha = significance.alpha
    names = [detail.names[run_id] for run_id in ids]
    means = [detail.means.get(run_id, 0.0) for run_id in ids]
    fill = [[charts.p_colour(float(p[i, j]), alpha) if i != j else "#ffffff" for j in range(count)]
            for i in range(count)]  # fmt: skip
    size = max(8.0, min(18.0, 720.0 / max(count, 1)))
    # Rows of bands, titled by their run: a few kB however many runs. A cell's own pair (its
    # difference and adjusted p) is read by pointing at it, from the numbers below.
    plot = charts.heat_map(
        row_labels=[f"{position + 1}. {name}" for position, name in enumerate(names)],
        column_labels=[f"{position + 1}" for position in range(count)],
        fill=fill,
        cell_width=size,
        cell_height=size,
        top=40,
    )
    cells = {
        "left": plot.left,
        "top": plot.top,
        "size": size,
        "alpha": alpha,
        "names": names,
        "means": [round(mean, 4) for mean in means],
        "p": [[round(float(p[i, j]), 4) for j in range(count)] for i in range(count)],
    }
    significant = int(np.count_nonzero(np.triu(p < alpha, 1)))
    return {
        "plot": plot,
        "cells": cells,
        "runs": count,
        "all_runs": len(detail.pair_ids),
        "pairs": count * (count - 1) // 2,
        "significant": significant,
    }


def _heat(detail: SignificanceDetail, sort: str) -> dict[str, Any] | None:
    matrix = detail.per_query
    if not matrix.size:
        return None
    rows = min(HEAT_RUNS, matrix.shape[0])
    shown = matrix[:rows]
    columns = list(range(matrix.shape[1]))
    difficulty = matrix.mean(axis=0)  # every run's mean on the query: low is hard
    if sort == "difficulty":
        columns.sort(key=lambda q: (difficulty[q], detail.queries[q][0]))
    names = [detail.names[run_id] for run_id in detail.row_ids[:rows]]
    steps = [[charts.score_step_colour(float(value)) for value in row] for row in shown[:, columns]]
    plot = charts.heat_map(
        row_labels=[f"{r + 1}. {name}" for r, name in enumerate(names)],
        column_labels=[detail.queries[q][0] for q in columns],
        fill=steps,
        cell_width=10,
        cell_height=12,
    )
    hardest = [detail.queries[q] + (float(difficulty[q]),) for q in sorted(
        columns, key=lambda q: (difficulty[q], detail.queries[q][0]))[:5]]  # fmt: skip
    return {"plot": plot, "runs": rows, "all_runs": matrix.shape[0], "queries": len(columns),
            "hardest": hardest, "legend": charts.score_legend()}  # fmt: skip


def _pair(detail: SignificanceDetail, name_a: str, name_b: str) -> dict[str, Any] | None:
    significance = detail.significance
    by_name = {name: run_id for run_id, name in detail.names.items()}
    if significance is None or name_a not in by_name or name_b not in by_name:
        return None
    ids = detail.pair_ids
    a, b = by_name[name_a], by_name[name_b]
    if a not in ids or b not in ids or a == b:
        return None
    difference = detail.means[a] - detail.means[b]
    critical = significance.critical
    p = float(detail.p_adjusted[ids.index(a), ids.index(b)])
    return {
        "a": name_a,
        "b": name_b,
        "difference": difference,
        "low": difference - critical if critical is not None else None,
        "high": difference + critical if critical is not None else None,
        "p": p,
        "significant": p < significance.alpha,
    }


def _measure_asked(request: HttpRequest, collection: Collection) -> tuple[Measure | None, str]:
    """The kept measure whose significance is asked for (None: nDCG@k), and why an asked one
    is not shown (read out at the top): unknown, not kept, or a count summed over queries."""
    asked = request.GET.get("measure", "").strip()[:200]
    if not asked:
        return None, ""
    try:
        measure = measure_values.kept_measure(collection, asked)
    except measure_values.UnknownMeasure as error:
        return None, f"{error} Showing nDCG@k."
    if not measure_significance.tested(measure):
        return None, (
            f"{format_measure(measure)} is a count trec_eval sums over the queries: it has no "
            "significance groups. Showing nDCG@k."
        )
    return measure, ""


@login_first
def leaderboard_significance(request: HttpRequest, slug: str) -> HttpResponse:
    """Every pair's HSD-adjusted p-value as a shaded matrix, one pair's difference with its
    simultaneous interval, and the runs x queries heat map, from the stored snapshot at k, or
    with ``?measure=`` from the stored pass of a kept measure (being computed until a worker
    has stored its first)."""
    collection, access = readable_collection(request, slug, sees="leaderboard")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    measure, measure_error = _measure_asked(request, collection)
    if measure is None:
        detail = significance_detail(collection=collection, k=k)
        if detail is None:
            raise Http404("No leaderboard yet")
        shown = f"nDCG@{k}"
    else:
        detail = measure_significance_detail(collection=collection, measure=measure)
        shown = format_measure(measure)
    sort = "difficulty" if request.GET.get("sort") == "difficulty" else "qid"
    name_a, name_b = request.GET.get("a", ""), request.GET.get("b", "")
    context = {
        "collection": collection,
        "k": k,
        "access": access,
        "measure": shown if measure is not None else "",
        "measure_error": measure_error,
        "shown": shown,
        "choices": [
            format_measure(kept) for kept in measure_significance.tested_measures(collection)
        ],
        "computing": detail is None,
        "significance": detail.significance if detail else None,
        "stamp": detail.stamp if detail else "",
        "sort": sort,
        "matrix": (lambda: _matrix(detail)) if detail else None,
        "heat": (lambda: _heat(detail, sort)) if detail else None,
        "pair": _pair(detail, name_a, name_b) if detail else None,
        "name_a": name_a,
        "name_b": name_b,
        "run_names": [detail.names[run_id] for run_id in detail.row_ids] if detail else [],
    }
    return render(request, "annotations/scores/significance.html", context)


@login_first
def leaderboard_report_download(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard as CSV or LaTeX (``?as=csv|latex``), as the API and `evaluate` give it."""
    collection, _ = readable_collection(request, slug, sees="leaderboard")
    kind = request.GET.get("as", "")
    if kind not in REPORT_KINDS:
        raise Http404("Choose ?as=csv or ?as=latex")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    board = report_board(collection=collection, k=k)
    if board is None:
        waiting = HttpResponse(
            f"The leaderboard at k={k} is being computed; try again in a moment.\n",
            content_type="text/plain; charset=utf-8",
            status=202,
        )
        waiting["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return waiting
    report = leaderboard_report(board=board, kind=kind)
    response = HttpResponse(report.text, content_type=report.content_type)
    response["Content-Disposition"] = f'attachment; filename="{report.filename}"'
    return response
