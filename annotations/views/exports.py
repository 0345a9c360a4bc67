"""The exports page of a collection: qrels, each assessor's qrels, history, runs, scores."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.http import content_disposition_header

from annotations import selectors
from annotations.forms.exports import RunExportForm, ScoresExportForm
from annotations.models import Collection, Judgement, Run
from annotations.selectors import exports
from annotations.selectors.run_archive import runs_zip
from annotations.views._collection import collection_for

TEXT = "text/plain; charset=utf-8"


def _download(
    pieces: Iterable[str | bytes], filename: str, content_type: str = TEXT
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(pieces, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename) or ""
    return response


def _assessors(collection: Collection) -> list[tuple[str, int]]:
    """(username, judgements) of everyone who judged in the collection."""
    rows = (
        Judgement.objects.filter(query__collection=collection)
        .values("assessor__username")
        .annotate(n=Count("id"))
        .order_by("assessor__username")
        .values_list("assessor__username", "n")
    )
    return list(rows)


def _page(
    request: HttpRequest,
    collection: Collection,
    *,
    scores_form: ScoresExportForm | None = None,
    run_form: RunExportForm | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "collection": collection,
        "assessors": _assessors(collection),
        "scores_form": scores_form or ScoresExportForm(collection=collection, prefix="scores"),
        "run_form": run_form or RunExportForm(collection=collection, prefix="run"),
        "runs": Run.objects.filter(collection=collection).count(),
        "pending": selectors.pending_count(collection=collection),
    }
    return render(request, "annotations/exports/exports.html", context, status=status)


@login_required
def exports_page(request: HttpRequest, slug: str) -> HttpResponse:
    collection, _ = collection_for(request, slug, sees="organiser")
    return _page(request, collection)


@login_required
def qrels_download(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """The effective qrels (the collection's rule, adjudications override), as export_qrels."""
    collection, _ = collection_for(request, slug, sees="organiser")
    return _download(selectors.qrels_lines(collection=collection), f"{collection.slug}.qrels")


@login_required
def assessor_qrels_download(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    collection, _ = collection_for(request, slug, sees="organiser")
    username = request.GET.get("assessor", "")
    assessor = get_user_model().objects.filter(username=username).first()
    if (
        assessor is None
        or not Judgement.objects.filter(query__collection=collection, assessor=assessor).exists()
    ):
        raise Http404("No judgements of this assessor")
    pieces = exports.assessor_qrels_text(collection=collection, assessor_id=assessor.pk)
    return _download(pieces, f"{collection.slug}-{assessor.get_username()}.qrels")


@login_required
def history_download(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    collection, _ = collection_for(request, slug, sees="organiser")
    pieces = exports.history_csv(collection=collection)
    return _download(pieces, f"{collection.slug}-history.csv", "text/csv; charset=utf-8")


@login_required
def run_download(request: HttpRequest, slug: str) -> HttpResponseBase:
    collection, _ = collection_for(request, slug, sees="organiser")
    form = RunExportForm(request.GET, collection=collection, prefix="run")
    if not form.is_valid():
        return _page(request, collection, run_form=form, status=400)
    run: Run = form.cleaned_data["run"]
    return _download(exports.run_text(run=run), f"{run.name}.run")


@login_required
def runs_zip_download(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """Every run of the collection, one TREC file each, in one zip streamed as it is read."""
    collection, _ = collection_for(request, slug, sees="organiser")
    return _download(
        runs_zip(collection=collection), f"{collection.slug}-runs.zip", "application/zip"
    )


@login_required
def scores_download(request: HttpRequest, slug: str) -> HttpResponseBase:
    """Stored scores (never recomputed), as `evaluate` prints them."""
    collection, _ = collection_for(request, slug, sees="organiser")
    form = ScoresExportForm(request.GET, collection=collection, prefix="scores")
    if not form.is_valid():
        return _page(request, collection, scores_form=form, status=400)
    data = form.cleaned_data
    download = exports.scores_download(
        collection=collection,
        layout=data["format"],
        run=data["run"],
        ks=form.ks(),
        per_query=data["per_query"],
    )
    return _download(*download)
