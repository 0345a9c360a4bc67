"""The runs page of a collection: list, download, describe, replace by upload, delete."""

from __future__ import annotations

from typing import BinaryIO, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header

from annotations import services
from annotations.access import Access
from annotations.formats.trec import TrecFormatError
from annotations.forms.runs import RunDescriptionForm, RunReplaceForm
from annotations.models import Collection, ImportJob, Run
from annotations.selectors import exports
from annotations.selectors.run_lists import runs_listed
from annotations.views._collection import collection_for


def _changeable(request: HttpRequest, slug: str, name: str) -> tuple[Collection, Access, Run]:
    """A run the caller may change (organisers, its owner); 404 otherwise, as if absent."""
    collection, access = collection_for(request, slug, sees="runs")
    run = Run.objects.filter(collection=collection, name=name).select_related("owner").first()
    if run is None or not access.may_change_run(run):
        raise Http404("No such run")
    return collection, access, run


@login_required
def runs(request: HttpRequest, slug: str) -> HttpResponse:
    collection, access = collection_for(request, slug, sees="runs")
    rows = [
        (run, access.may_change_run(run), access.run_scores(run))
        for run in runs_listed(collection=collection)
    ]
    context = {"collection": collection, "access": access, "rows": rows}
    return render(request, "annotations/runs/list.html", context)


@login_required
def run_download(request: HttpRequest, slug: str, name: str) -> StreamingHttpResponse:
    _, _, run = _changeable(request, slug, name)
    response = StreamingHttpResponse(
        exports.run_text(run=run), content_type="text/plain; charset=utf-8"
    )
    response["Content-Disposition"] = content_disposition_header(True, f"{run.name}.run") or ""
    return response


@login_required
def run_edit(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    collection, access, run = _changeable(request, slug, name)
    form = RunDescriptionForm(request.POST or None, initial={"description": run.description})
    if request.method == "POST" and form.is_valid():
        try:
            services.run_describe(
                run=run,
                description=form.cleaned_data["description"],
                may_change=access.may_change_run,
            )
        except ValidationError as error:
            form.add_error("description", error.messages)
        except PermissionDenied:
            raise Http404("No such run") from None
        else:
            messages.success(request, f"Description of {run.name} saved.")
            return redirect("collection-runs", slug=collection.slug)
    status = 400 if form.errors else 200
    context = {"collection": collection, "run": run, "form": form}
    return render(request, "annotations/runs/edit.html", context, status=status)


@login_required
def run_replace(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Replace a run's results from an uploaded TREC file, through the API's service."""
    collection, access, run = _changeable(request, slug, name)
    form = RunReplaceForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        limit = settings.NDCG_MAX_UPLOAD_MB
        if upload.size > limit * 1024 * 1024:
            form.add_error("file", f"The file exceeds {limit} MB (nothing was imported).")
        else:
            try:
                with transaction.atomic():
                    _, count = services.run_import(
                        collection=collection,
                        source=cast(BinaryIO, upload),
                        name=upload.name,
                        run_name=run.name,
                        description=run.description,
                        replace=True,
                        may_replace=access.may_change_run,
                    )
                    services.import_told(
                        collection=collection,
                        kind=ImportJob.RUN,
                        file_name=upload.name or "upload",
                        summary=f"run {run.name}: {count} results",
                    )
            except TrecFormatError as error:
                form.add_error("file", f"{error} (nothing was imported)")
            except ValidationError as error:
                form.add_error("file", " ".join(error.messages))
            except ValueError as error:  # a ranking the scorer cannot order
                form.add_error("file", f"{error} (nothing was imported)")
            except PermissionDenied:
                raise Http404("No such run") from None
            else:
                messages.success(request, f"Run {run.name} replaced: {count} results.")
                return redirect("collection-runs", slug=collection.slug)
    status = 400 if form.errors else 200
    context = {"collection": collection, "run": run, "form": form}
    return render(request, "annotations/runs/replace.html", context, status=status)


@login_required
def run_delete(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """A confirmation page (GET) that says what is lost; POST deletes the run."""
    collection, access, run = _changeable(request, slug, name)
    if request.method == "POST":
        try:
            services.run_delete(run=run, may_delete=access.may_change_run)
        except PermissionDenied:
            raise Http404("No such run") from None
        messages.success(request, f"Run {run.name} deleted with its results and scores.")
        return redirect("collection-runs", slug=collection.slug)
    listed = runs_listed(collection=collection).get(id=run.id)
    context = {"collection": collection, "run": listed}
    return render(request, "annotations/runs/delete.html", context)
