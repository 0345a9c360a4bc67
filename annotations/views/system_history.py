"""A search system's history (organisers): its runs' means over time with CIs, what changed
between two of its runs, and the new run's unjudged top k sent to judging."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotations import selectors
from annotations.formats import charts
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.models import Collection, ImportJob, Pool, QrelsVersion, Run, SearchSystem
from annotations.selectors.measure_values import UnknownMeasure, kept_measure
from annotations.selectors.system_history import (
    History,
    main_cutoff,
    previous_run,
    runs_changed,
    system_history,
)
from annotations.services.pools import pool_build, pool_extend
from annotations.views._collection import acting_user, organised_collection

NDCG = "ndcg"


def _system(collection: Collection, name: str) -> SearchSystem:
    found = SearchSystem.objects.filter(collection=collection, name=name).first()
    if found is None:
        raise Http404("No such system")
    return found


def _run(system: SearchSystem, name: str | None) -> Run | None:
    if not name:
        return None
    found = Run.objects.filter(system=system, name=name).select_related("collection").first()
    if found is None:
        raise Http404("No such run of this system")
    return found


def forest_of_history(history: History) -> charts.ForestPlot | None:
    """The history drawn with the leaderboard's CI plot: one row per scored run, oldest at
    the top, the reference line at the latest run's mean; on the qrels version's judgements
    when one was asked for (the same judgements for every run)."""
    rows = []
    for point in history.points:
        shown = point.on_version if history.version is not None else point
        if shown is None or shown.mean is None:
            continue
        rows.append(
            charts.ForestRow(
                label=f"{point.fetched:%Y-%m-%d %H:%M} {point.run.name}",
                mean=shown.mean,
                low=shown.ci_low,
                high=shown.ci_high,
                letters="",
                below_best=False,
            )
        )
    if not rows:
        return None
    return charts.forest_plot(rows, best=rows[-1])


def _measure_asked(collection: Collection, request: HttpRequest) -> tuple[Measure | None, str]:
    """The kept measure `measure=` names (None: nDCG@k), and why not if it names none (said
    on the page: a read stores no message)."""
    chosen = request.GET.get("measure") or NDCG
    if chosen == NDCG:
        return None, ""
    try:
        return kept_measure(collection, chosen), ""
    except UnknownMeasure as error:
        return None, str(error)


def _history_context(request: HttpRequest, slug: str, name: str) -> dict[str, Any]:
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    k = selectors.cutoff_from(collection, request.GET.get("k") or str(main_cutoff(collection)))
    measure, unknown = _measure_asked(collection, request)
    problems = [f"{unknown} Showing nDCG@k."] if unknown else []
    versions = list(QrelsVersion.objects.filter(collection=collection).order_by("-created", "-id"))
    asked = request.GET.get("version") or ""
    version = next((tagged for tagged in versions if tagged.name == asked), None)
    if asked and version is None:
        problems.append(f"No qrels version named {asked!r}: showing the current judgements alone.")
    elif version is not None and measure is not None:
        problems.append(
            f"A qrels version is scored by nDCG@k: {format_measure(measure)} is shown alone."
        )
    history = system_history(system=system, k=k, measure=measure, version=version)
    active = ImportJob.objects.filter(system=system, state__in=ImportJob.ACTIVE).exists()
    return {
        "collection": collection, "system": system, "history": history, "k": k,
        "measure": format_measure(measure) if measure is not None else NDCG,
        "measures": [format_measure(kept) for kept in collection.kept_measures],
        "versions": versions, "version": history.version,
        "forest": forest_of_history(history), "active": active or history.pending,
        "points": list(reversed(history.points)), "problem": " ".join(problems),
    }  # fmt: skip


@login_required
@require_GET
def system_history_page(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """The system's runs, oldest to newest: mean and CI of a measure, and what changed."""
    context = _history_context(request, slug, name)
    return render(request, "annotations/systems/history.html", context)


@login_required
@require_GET
def system_history_state(request: HttpRequest, slug: str, name: str) -> JsonResponse:
    """The history's body, for its self-refresh while a fetch runs or scores are pending."""
    context = _history_context(request, slug, name)
    html = render_to_string("annotations/systems/_history_body.html", context, request=request)
    return JsonResponse({"active": context["active"], "html": html})


@login_required
@require_GET
def system_changes(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """What changed from one run of the system to another (default: its latest run against
    the one before) on nDCG@k or a kept measure: scores per query, the top k's documents,
    the paired test."""
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    new = _run(system, request.GET.get("run")) or (
        Run.objects.filter(system=system).order_by("-created", "-id").first()
    )
    old = _run(system, request.GET.get("previous")) or (
        previous_run(new) if new is not None else None
    )
    k = selectors.cutoff_from(collection, request.GET.get("k") or str(main_cutoff(collection)))
    measure, problem = _measure_asked(collection, request)
    change = (
        runs_changed(old=old, new=new, k=k, measure=measure) if new and old and new != old else None
    )
    context = {
        "collection": collection, "system": system, "new": new, "old": old, "k": k,
        "change": change, "runs": Run.objects.filter(system=system).order_by("-created", "-id"),
        "pools": Pool.objects.filter(collection=collection).order_by("name"),
        "measure": format_measure(measure) if measure is not None else NDCG,
        "measures": [format_measure(kept) for kept in collection.kept_measures],
        "problem": problem,
    }  # fmt: skip
    return render(request, "annotations/systems/changes.html", context)


@login_required
@require_POST
def system_changes_to_pool(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Send the unjudged documents of a run's top k to a pool: a new one named for the run,
    or one the organiser picked (extended with the run at depth k)."""
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    run = _run(system, request.POST.get("run"))
    if run is None:
        raise Http404("No such run of this system")
    k = selectors.cutoff_from(collection, request.POST.get("k"))
    raw_pool = request.POST.get("pool", "")
    back = reverse("system-changes", args=[collection.slug, system.name]) + f"?run={run.name}&k={k}"
    try:
        if raw_pool.isdigit():
            pool = Pool.objects.filter(collection=collection, id=int(raw_pool)).first()
            if pool is None:
                raise Http404("No such pool")
            added = pool_extend(pool=pool, runs=[run], depth=k)
        else:
            pool_name = (request.POST.get("name") or f"{run.name}-top{k}").strip()[:100]
            pool, added = pool_build(
                collection=collection, name=pool_name, depth=k, runs=[run],
                created_by=acting_user(request),
            )  # fmt: skip
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(back)
    messages.success(
        request, f"{added} unjudged pair{'s' if added != 1 else ''} of {run.name}'s top {k} "
        f"added to pool {pool.name}: assign them to assessors or a machine judge.",
    )  # fmt: skip
    return redirect("judging-pool", slug=collection.slug, pool_id=pool.id)
