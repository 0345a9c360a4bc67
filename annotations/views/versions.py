"""Qrels versions (organisers): tag, list, download, the leaderboard as of a version (nDCG@k
or a kept measure), diffs."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render

from annotations.forms.versions import QrelsVersionForm
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.models import Collection, QrelsVersion
from annotations.selectors import cutoff_from, measure_values
from annotations.selectors.versions import (
    Mark,
    leaderboard_as_of,
    measure_as_of,
    qrels_text_as_of,
    versions_diff,
)
from annotations.services.versions import qrels_version_tag
from annotations.views._collection import organised_collection
from annotations.views._forms import refusal_to_form


def _measure_asked(request: HttpRequest, collection: Collection) -> tuple[Measure | None, str]:
    """The kept measure asked for by ``?measure=`` (None: nDCG@k), and why an asked one is
    not shown (read out at the top)."""
    asked = request.GET.get("measure", "").strip()[:200]
    if not asked:
        return None, ""
    try:
        return measure_values.kept_measure(collection, asked), ""
    except measure_values.UnknownMeasure as error:
        return None, f"{error} Showing nDCG@k."


def _version(collection: Collection, name: str) -> QrelsVersion:
    version = QrelsVersion.objects.filter(collection=collection, name=name).first()
    if version is None:
        raise Http404("No such qrels version")
    return version


@login_required
def versions(request: HttpRequest, slug: str) -> HttpResponse:
    """The collection's qrels versions, the form that tags one, and the diff of two."""
    collection = organised_collection(request, slug)
    form = QrelsVersionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            version = qrels_version_tag(
                collection=collection,
                name=form.cleaned_data["name"],
                note=form.cleaned_data["note"],
                machine_grades=form.cleaned_data["machine_grades"] or None,
                created_by=request.user,  # type: ignore[arg-type]
            )
        except ValidationError as error:
            refusal_to_form(form, error)
        else:
            messages.success(request, f"Tagged the qrels as {version.name!r}.")
            return redirect("qrels-versions", slug=collection.slug)
    tagged = list(QrelsVersion.objects.filter(collection=collection).select_related("created_by"))
    k = cutoff_from(collection, request.GET.get("k"))
    measure, measure_error = _measure_asked(request, collection)
    diff = None
    names = {version.name: version for version in tagged}
    first, second = request.GET.get("a"), request.GET.get("b")
    if first in names and second in names:
        diff = versions_diff(
            collection=collection,
            first=Mark.of_version(names[first]),
            second=Mark.of_version(names[second]),
            k=k,
            limit=200,
            measure=measure,
        )
    context = {
        "collection": collection,
        "versions": tagged,
        "form": form,
        "k": k,
        "measure": format_measure(measure) if measure else "",
        "measure_error": measure_error,
        "diff": diff,
        "a": first or (tagged[-2].name if len(tagged) > 1 else ""),
        "b": second or (tagged[-1].name if tagged else ""),
    }
    return render(request, "annotations/versions/list.html", context)


@login_required
def version_detail(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """The leaderboard at k under the version's qrels, or with ``?measure=`` every run's
    `all` value of a kept measure under them."""
    collection = organised_collection(request, slug)
    version = _version(collection, name)
    k = cutoff_from(collection, request.GET.get("k"))
    mark = Mark.of_version(version)
    measure, measure_error = _measure_asked(request, collection)
    board = (
        measure_as_of(collection=collection, mark=mark, measure=measure)
        if measure
        else leaderboard_as_of(collection=collection, mark=mark, k=k)
    )
    context = {
        "collection": collection,
        "version": version,
        "k": k,
        "board": board,
        "measure": format_measure(measure) if measure else "",
        "measure_error": measure_error,
    }
    return render(request, "annotations/versions/detail.html", context)


@login_required
def version_qrels(request: HttpRequest, slug: str, name: str) -> StreamingHttpResponse:
    collection = organised_collection(request, slug)
    version = _version(collection, name)
    lines = qrels_text_as_of(collection=collection, mark=Mark.of_version(version))
    response = StreamingHttpResponse(
        (piece.encode() for piece in lines), content_type="text/plain; charset=utf-8"
    )
    filename = f"{collection.slug}-{version.name}.qrels"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
