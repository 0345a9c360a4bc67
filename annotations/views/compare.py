"""The compare page: two runs at k, query by query, with the paired test's p-value."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotations import selectors
from annotations.formats import charts
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.models import Run
from annotations.selectors import compare_page, measure_values
from annotations.views._collection import login_first, readable_collection


@login_first
def compare(request: HttpRequest, slug: str) -> HttpResponse:
    """Pick two runs (`a`, `b`, or two `run` values from the leaderboard's checkboxes)."""
    collection, access = readable_collection(request, slug, sees="any_run_scores")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    problems: list[str] = []
    measure: Measure | None = None
    asked = request.GET.get("measure", "").strip()[:200]
    if asked:
        try:
            measure = measure_values.kept_measure(collection, asked)
        except measure_values.UnknownMeasure as error:
            problems.append(f"{error} Comparing nDCG@k.")
    choices = [
        run
        for run in selectors.runs_of(collection=collection).only("id", "name", "owner_id")
        if access.run_scores(run)
    ]
    picked = [name for name in request.GET.getlist("run") if name]
    if picked and len(picked) != 2:
        problems.append(f"Pick two runs to compare ({len(picked)} picked).")
        picked = []
    names = {
        "a": request.GET.get("a") or (picked[0] if picked else ""),
        "b": request.GET.get("b") or (picked[1] if picked else ""),
    }
    runs: dict[str, Run] = {}
    for key, name in names.items():
        if not name:
            continue
        run = Run.objects.filter(collection=collection, name=name).first()
        if run is None:
            problems.append(f"No run named {name!r}.")
        elif not access.run_scores(run):
            raise Http404("No such run")  # as the API: runs one may not read do not exist
        else:
            runs[key] = run
    comparison = None
    if "a" in runs and "b" in runs:
        if runs["a"].id == runs["b"].id:
            problems.append("Pick two different runs.")
        else:
            comparison = compare_page.comparison_cached(
                a=runs["a"], b=runs["b"], k=k, measure=measure
            )
    context = {
        "collection": collection,
        "access": access,
        "k": k,
        "measure": format_measure(measure) if measure is not None else "",
        "choices": choices,
        "name_a": names["a"],
        "name_b": names["b"],
        "problems": problems,
        "comparison": comparison,
        "rows": (
            sorted(comparison.rows, key=lambda row: (-row.difference, row.qid))
            if comparison
            else []
        ),
        "chart": compare_page.sorted_differences(comparison) if comparison else None,
        "scatter": (
            charts.scatter(
                [
                    (row.a, row.b, f"{row.qid}: A {row.a:.4f}, B {row.b:.4f}")
                    for row in comparison.rows
                ]
            )
            if comparison
            else None
        ),
    }
    return render(request, "annotations/scores/compare.html", context)
