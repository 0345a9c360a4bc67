"""Search systems (organisers): describe a system, try it on three queries, fetch its run
and follow the fetch."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from annotations.forms.systems import FetchForm, SearchSystemForm
from annotations.models import Collection, FetchFailure, ImportJob, SearchSystem
from annotations.selectors.system_schedule import next_fetch
from annotations.services.job_recovery import import_job_retry
from annotations.services.system_fetch import system_fetch_cancel, system_fetch_start
from annotations.services.systems import (
    TRY_QUERIES,
    system_create,
    system_try,
    system_update,
)
from annotations.views._collection import acting_user, organised_collection
from annotations.views._forms import refusal_to_form

FIELDS = [field for field in SearchSystemForm.Meta.fields if field != "name"]
FETCHES_SHOWN = 20
FAILURES_SHOWN = 200


def _system(collection: Collection, name: str) -> SearchSystem:
    found = SearchSystem.objects.filter(collection=collection, name=name).first()
    if found is None:
        raise Http404("No such system")
    return found


def _fetch(system: SearchSystem, job_id: int) -> ImportJob:
    found = ImportJob.objects.filter(system=system, id=job_id).first()
    if found is None:
        raise Http404("No such fetch")
    return found


def _messages(error: ValidationError) -> str:
    if hasattr(error, "error_dict"):
        return " ".join(m for ms in error.message_dict.values() for m in ms)
    return " ".join(error.messages)


@login_required
def systems(request: HttpRequest, slug: str) -> HttpResponse:
    """The collection's search systems and the form that describes one."""
    collection = organised_collection(request, slug)
    form = SearchSystemForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        values = {field: form.cleaned_data[field] for field in FIELDS}
        values["headers"] = values["headers"] or []
        try:
            system = system_create(
                collection=collection, name=form.cleaned_data["name"],
                created_by=acting_user(request), **values,
            )  # fmt: skip
        except ValidationError as error:
            refusal_to_form(form, error)
        else:
            messages.success(request, f"Added the system {system.name}. Try it on a few queries.")
            return redirect("system-detail", slug=collection.slug, name=system.name)
    listed = SearchSystem.objects.filter(collection=collection).order_by("name")
    context = {"collection": collection, "systems": listed, "form": form}
    return render(request, "annotations/systems/list.html", context)


@login_required
def system_detail(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """A system: try it, fetch its run, its fetches, and its description (editable)."""
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    form = SearchSystemForm(request.POST or None, instance=system, prefix="system")
    tried = None
    if request.method == "POST" and "try" in request.POST:
        try:
            tried = system_try(system=system)
        except ValidationError as error:
            messages.error(request, _messages(error))
        form = SearchSystemForm(instance=system, prefix="system")
    elif request.method == "POST" and form.is_valid():
        changes = {field: form.cleaned_data[field] for field in FIELDS}
        changes["headers"] = changes["headers"] or []
        try:
            system_update(system=SearchSystem.objects.get(id=system.id), **changes)
        except ValidationError as error:
            refusal_to_form(form, error)
        else:
            messages.success(request, f"Saved the system {system.name}.")
            return redirect("system-detail", slug=collection.slug, name=system.name)
    context = {
        "collection": collection, "system": system, "form": form, "tried": tried,
        "try_queries": TRY_QUERIES, "fetch_form": FetchForm(), **_fetches_context(system),
    }  # fmt: skip
    return render(request, "annotations/systems/detail.html", context)


def _fetches_context(system: SearchSystem) -> dict[str, object]:
    fetches = list(
        ImportJob.objects.filter(system=system).order_by("-created", "-id")[:FETCHES_SHOWN]
    )
    last = fetches[0].created if fetches else None
    return {
        "fetches": fetches, "active": any(job.active for job in fetches),
        "next_fetch": next_fetch(system, last, timezone.now()),
    }  # fmt: skip


@login_required
@require_GET
def system_state(request: HttpRequest, slug: str, name: str) -> JsonResponse:
    """The system page's fetches, for its self-refresh while a fetch is queued or running."""
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    context = {"collection": collection, "system": system, **_fetches_context(system)}
    html = render_to_string("annotations/systems/_fetches.html", context, request=request)
    return JsonResponse({"active": context["active"], "html": html})


@login_required
@require_POST
def system_fetch(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    form = FetchForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a label of at most 200 characters, or none.")
        return redirect("system-detail", slug=collection.slug, name=system.name)
    try:
        job = system_fetch_start(
            system=system, label=form.cleaned_data["label"], created_by=acting_user(request)
        )
    except ValidationError as error:
        messages.error(request, _messages(error))
        return redirect("system-detail", slug=collection.slug, name=system.name)
    messages.success(request, f"Fetching the run {job.run_name} from {system.name}.")
    return redirect("system-fetch-detail", slug=collection.slug, name=system.name, job_id=job.id)


@login_required
@require_GET
def system_fetch_detail(request: HttpRequest, slug: str, name: str, job_id: int) -> HttpResponse:
    """One fetch: its progress, the run it stored or why not, the queries that failed."""
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    job = _fetch(system, job_id)
    return render(
        request, "annotations/systems/fetch.html", _fetch_context(collection, system, job)
    )


def _fetch_context(
    collection: Collection, system: SearchSystem, job: ImportJob
) -> dict[str, object]:
    failures = FetchFailure.objects.filter(job=job).order_by("qid")
    return {
        "collection": collection, "system": system, "job": job,
        "failures": failures[:FAILURES_SHOWN], "failures_total": failures.count(),
        "run_stored": job.state == ImportJob.DONE,
    }  # fmt: skip


@login_required
@require_GET
def system_fetch_state(request: HttpRequest, slug: str, name: str, job_id: int) -> JsonResponse:
    """A fetch's progress and failures, for its page's self-refresh while it runs."""
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    job = _fetch(system, job_id)
    context = _fetch_context(collection, system, job)
    html = render_to_string("annotations/systems/_fetch_body.html", context, request=request)
    return JsonResponse({"active": job.active, "html": html})


@login_required
@require_POST
def system_fetch_stop(request: HttpRequest, slug: str, name: str, job_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    system_fetch_cancel(job=_fetch(system, job_id))
    messages.success(request, "The fetch stops after the queries in flight; nothing is stored.")
    return redirect("system-fetch-detail", slug=collection.slug, name=system.name, job_id=job_id)


@login_required
@require_POST
def system_fetch_again(request: HttpRequest, slug: str, name: str, job_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    system = _system(collection, name)
    try:
        import_job_retry(job=_fetch(system, job_id), by=acting_user(request))
    except ValidationError as error:
        messages.error(request, _messages(error))
    else:
        messages.success(request, "Fetching again.")
    return redirect("system-fetch-detail", slug=collection.slug, name=system.name, job_id=job_id)
