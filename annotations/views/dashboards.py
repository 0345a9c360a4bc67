"""The collection dashboard and the small state document its open page polls."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from annotations import selectors
from annotations.selectors import dashboards
from annotations.selectors.pace import PACE_WINDOW
from annotations.views._collection import collection_for

# How often an open dashboard asks whether anything changed (a few aggregates).
POLL_MS = 5000


@login_required
def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    """Judging progress, coverage, agreement, pending scores and recent activity."""
    collection, access = collection_for(request, slug, sees="organiser")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    context = {
        "collection": collection,
        "access": access,
        "k": k,
        "dashboard": dashboards.dashboard_read(collection=collection, k=k),
        "poll_ms": POLL_MS,
        "pace_window": PACE_WINDOW,
    }
    return render(request, "annotations/dashboards/dashboard.html", context)


@login_required
def dashboard_state(request: HttpRequest, slug: str) -> JsonResponse:
    """The stamp an open dashboard compares with its own: reload the numbers when it moves."""
    collection, _ = collection_for(request, slug, sees="organiser")
    return JsonResponse({"stamp": dashboards.dashboard_stamp(collection=collection)})
