"""Machine judges (organisers): add and edit a judge, try it on a few pairs, run it over a
pool and watch its progress, tokens and cost."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from annotations.forms.judges import JudgeRunForm, MachineJudgeForm
from annotations.models import Collection, JudgeRun, MachineJudge
from annotations.selectors import cutoff_from
from annotations.selectors.judge_runs import (
    FAILURES_SHOWN,
    judge_runs_read,
    run_failures,
    run_progress,
)
from annotations.selectors.machine_rankings import machine_rules_comparison
from annotations.services.judges import (
    judge_create,
    judge_run_cancel,
    judge_run_retry,
    judge_run_start,
    judge_try,
    judge_update,
)
from annotations.views._collection import acting_user, organised_collection
from annotations.views._forms import refusal_to_form

FIELDS = MachineJudgeForm.Meta.fields


def _judge(collection: Collection, name: str) -> MachineJudge:
    found = MachineJudge.objects.filter(collection=collection, name=name).first()
    if found is None:
        raise Http404("No such judge")
    return found


@login_required
def judges(request: HttpRequest, slug: str) -> HttpResponse:
    """The collection's machine judges and the form that adds one."""
    collection = organised_collection(request, slug)
    form = MachineJudgeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        values = {field: form.cleaned_data[field] for field in FIELDS if field != "name"}
        try:
            judge = judge_create(
                collection=collection,
                name=form.cleaned_data["name"],
                created_by=acting_user(request),
                **values,
            )
        except ValidationError as error:
            refusal_to_form(form, error)
        else:
            messages.success(request, f"Added the judge {judge.name}. Try it on a few pairs.")
            return redirect("judge-detail", slug=collection.slug, name=judge.name)
    listed = MachineJudge.objects.filter(collection=collection).prefetch_related("runs")
    k = cutoff_from(collection, None)
    context = {
        "collection": collection,
        "judges": listed,
        "form": form,
        "k": k,
        "machine_rules": machine_rules_comparison(collection=collection, k=k),
    }
    return render(request, "annotations/judges/list.html", context)


@login_required
def judge_detail(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """A judge's settings (editable), its runs, the run form and the result of a try."""
    collection = organised_collection(request, slug)
    judge = _judge(collection, name)
    form = MachineJudgeForm(request.POST or None, instance=judge, prefix="judge")
    run_form = JudgeRunForm(collection_id=collection.id, prefix="run")
    tried = None
    if request.method == "POST" and "try" in request.POST:
        try:
            tried = judge_try(judge=judge)
        except ValidationError as error:
            messages.error(request, " ".join(m for ms in error.message_dict.values() for m in ms))
        form = MachineJudgeForm(instance=judge, prefix="judge")
    elif request.method == "POST" and form.is_valid():
        changes = {field: form.cleaned_data[field] for field in FIELDS if field != "name"}
        try:
            judge_update(judge=MachineJudge.objects.get(id=judge.id), **changes)
        except ValidationError as error:
            refusal_to_form(form, error)
        else:
            messages.success(request, f"Saved the judge {judge.name}.")
            return redirect("judge-detail", slug=collection.slug, name=judge.name)
    runs = judge_runs_read(judge)
    context = {
        "collection": collection, "judge": judge, "form": form, "run_form": run_form,
        "runs": runs, "active": any(item.active for item in runs), "tried": tried,
    }  # fmt: skip
    return render(request, "annotations/judges/detail.html", context)


@login_required
@require_GET
def judge_runs_state(request: HttpRequest, slug: str, name: str) -> JsonResponse:
    """The runs table as the judge page shows it, for the page's self-refresh while a run
    is queued or running."""
    collection = organised_collection(request, slug)
    judge = _judge(collection, name)
    runs = judge_runs_read(judge)
    context = {"collection": collection, "judge": judge, "runs": runs}
    return JsonResponse(
        {
            "active": any(item.active for item in runs),
            "html": render_to_string("annotations/judges/_runs.html", context, request=request),
        }
    )


def _run(judge: MachineJudge, run_id: int) -> JudgeRun:
    run = JudgeRun.objects.filter(judge=judge, id=run_id).select_related("pool", "judge").first()
    if run is None:
        raise Http404("No such run")
    return run


@login_required
@require_GET
def judge_run_detail(request: HttpRequest, slug: str, name: str, run_id: int) -> HttpResponse:
    """One run: its progress and the pairs that failed, with Retry."""
    return render(request, "annotations/judges/run.html", _run_context(request, slug, name, run_id))


@login_required
@require_GET
def judge_run_state(request: HttpRequest, slug: str, name: str, run_id: int) -> JsonResponse:
    """The run page's progress and failed pairs, for its self-refresh while it is active."""
    context = _run_context(request, slug, name, run_id)
    html = render_to_string("annotations/judges/_run_body.html", context, request=request)
    return JsonResponse({"active": context["item"].active, "html": html})


def _run_context(request: HttpRequest, slug: str, name: str, run_id: int) -> dict[str, Any]:
    """What the run page and its self-refresh show: progress and the first failed pairs."""
    collection = organised_collection(request, slug)
    judge = _judge(collection, name)
    run = _run(judge, run_id)
    return {
        "collection": collection, "judge": judge, "item": run_progress(run),
        "failures": run_failures(run)[:FAILURES_SHOWN], "failures_shown": FAILURES_SHOWN,
    }  # fmt: skip


@login_required
@require_POST
def judge_run_again(request: HttpRequest, slug: str, name: str, run_id: int) -> HttpResponse:
    """Retry a run: its failed pairs (`pairs=failed`) or the whole run."""
    collection = organised_collection(request, slug)
    judge = _judge(collection, name)
    run = _run(judge, run_id)
    failed_only = request.POST.get("pairs") == "failed"
    try:
        again = judge_run_retry(run=run, failed_only=failed_only, created_by=acting_user(request))
    except ValidationError as error:
        messages.error(request, " ".join(m for ms in error.message_dict.values() for m in ms))
        return redirect("judge-run-detail", slug=collection.slug, name=judge.name, run_id=run.id)
    what = f"its {again.pairs_total} failed pairs" if failed_only else "the whole run"
    messages.success(request, f"Run {again.id} retries run {run.id}: {what}.")
    return redirect("judge-detail", slug=collection.slug, name=judge.name)


@login_required
@require_POST
def judge_run(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    collection = organised_collection(request, slug)
    judge = _judge(collection, name)
    form = JudgeRunForm(request.POST, collection_id=collection.id, prefix="run")
    if form.is_valid():
        try:
            judge_run_start(
                judge=judge,
                pool=form.cleaned_data["pool"],
                scope=form.cleaned_data["scope"],
                created_by=acting_user(request),
            )
        except ValidationError as error:
            messages.error(request, " ".join(m for ms in error.message_dict.values() for m in ms))
        else:
            messages.success(request, f"The judge {judge.name} is grading the pool.")
    else:
        messages.error(request, "Choose a pool and a scope.")
    return redirect("judge-detail", slug=collection.slug, name=judge.name)


@login_required
@require_POST
def judge_run_stop(request: HttpRequest, slug: str, name: str, run_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    judge = _judge(collection, name)
    run = JudgeRun.objects.filter(judge=judge, id=run_id).first()
    if run is None:
        raise Http404("No such run")
    judge_run_cancel(run=run)
    messages.success(request, "The run stops after the pairs it is asking about.")
    return redirect("judge-detail", slug=collection.slug, name=judge.name)
