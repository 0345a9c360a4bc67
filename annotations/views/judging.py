"""Judging pages: the assessor's queue; organisers' pools, agreement, adjudication (grading
itself: `views/grading.py`)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotations import services
from annotations.forms import (
    DISAGREEMENT_CHOICES,
    AdjudicationForm,
    AssignmentForm,
    PoolBuildForm,
    PoolExtendForm,
    ReleaseForm,
)
from annotations.models import (
    Assignment,
    Collection,
    Document,
    Pool,
    Query,
)
from annotations.selectors import cutoff_from
from annotations.selectors import disagreements as disputes
from annotations.selectors import judging as selectors
from annotations.selectors.calibration import judges_calibration
from annotations.selectors.machine_rankings import machine_rules_comparison
from annotations.selectors.sensitivity import assessor_sensitivity
from annotations.services.assignments import assignment_release
from annotations.services.stale import stale_pairs
from annotations.views._collection import acting_user, organised_collection
from annotations.views.grading import own_assignment


def _error_text(error: ValidationError) -> str:
    return " ".join(error.messages)


# --- assessors --------------------------------------------------------------------------


@login_required
def queue(request: HttpRequest) -> HttpResponse:
    context = {
        "assignments": selectors.assignments_of(user=request.user),
        "organised": selectors.collections_organised(user=request.user),
    }
    return render(request, "annotations/judging/queue.html", context)


@login_required
def assignment_detail(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    context = {
        "assignment": assignment,
        "items": selectors.items_annotated(assignment=assignment),
        "progress": selectors.assignment_progress(assignment=assignment),
        "next_position": selectors.next_pending_position(assignment=assignment),
    }
    return render(request, "annotations/judging/assignment.html", context)


# --- organisers: pools and assignments --------------------------------------------------


@login_required
def pools(request: HttpRequest, slug: str) -> HttpResponse:
    collection = organised_collection(request, slug)
    form = PoolBuildForm(request.POST or None, collection=collection)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            pool, added = services.pool_build(
                collection=collection,
                name=data["name"],
                depth=data["depth"],
                runs=list(data["runs"]) or None,
                queries=data["queries"],
                include_judged=data["include_judged"],
                order=data["order"],
                budget=data["budget"],
                per_query=data["per_query"],
                created_by=acting_user(request),
            )
        except ValidationError as error:
            form.add_error(None, _error_text(error))
        else:
            messages.success(request, f"Pool {pool.name} built: {added} pairs.")
            return redirect("judging-pool", slug=collection.slug, pool_id=pool.id)
    context = {
        "collection": collection,
        "pools": selectors.pools_of(collection=collection),
        "form": form,
        "stale": len(stale_pairs(collection=collection)),
    }
    return render(request, "annotations/judging/pools.html", context)


def _pool_page(
    request: HttpRequest,
    collection: Collection,
    pool: Pool,
    assign_form: AssignmentForm | None = None,
    extend_form: PoolExtendForm | None = None,
) -> HttpResponse:
    assessors = selectors.collection_assessors(collection=collection)
    context = {
        "collection": collection,
        "pool": pool,
        "top_entries": selectors.pool_top_entries(pool=pool) if pool.order == Pool.IMPACT else [],
        "entry_count": pool.entries.count(),
        "unassigned": selectors.pool_unassigned_count(pool=pool),
        "assignments": [
            (
                assignment,
                progress,
                ReleaseForm(collection=collection, assessors=assessors, holder=assignment.assessor),
            )
            for assignment, progress in selectors.pool_assignments(pool=pool)
        ],
        "assign_form": assign_form
        or AssignmentForm(
            collection=collection, assessors=assessors, initial={"overlap": pool.overlap}
        ),
        "extend_form": extend_form or PoolExtendForm(collection=collection),
    }
    return render(request, "annotations/judging/pool_detail.html", context)


@login_required
def pool_detail(request: HttpRequest, slug: str, pool_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    pool = get_object_or_404(Pool, id=pool_id, collection=collection)
    return _pool_page(request, collection, pool)


@login_required
@require_POST
def pool_assign(request: HttpRequest, slug: str, pool_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    pool = get_object_or_404(Pool, id=pool_id, collection=collection)
    assessors = selectors.collection_assessors(collection=collection)
    form = AssignmentForm(request.POST, collection=collection, assessors=assessors)
    if form.is_valid():
        data = form.cleaned_data
        try:
            result = services.assignment_create(
                pool=pool,
                assessors=list(data["assessors"]),
                overlap=data["overlap"],
                queries=data["queries"],
                pairs=data["pairs"],
                created_by=acting_user(request),
            )
        except ValidationError as error:
            form.add_error(None, _error_text(error))
        else:
            summary = ", ".join(f"{a.assessor.get_username()} +{n}" for a, n in result)
            messages.success(request, f"Assigned: {summary}.")
            return redirect("judging-pool", slug=collection.slug, pool_id=pool.id)
    return _pool_page(request, collection, pool, assign_form=form)


@login_required
@require_POST
def pool_extend(request: HttpRequest, slug: str, pool_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    pool = get_object_or_404(Pool, id=pool_id, collection=collection)
    form = PoolExtendForm(request.POST, collection=collection)
    if form.is_valid():
        data = form.cleaned_data
        try:
            added = services.pool_extend(
                pool=pool,
                depth=data["depth"],
                runs=list(data["runs"]) or None,
                queries=data["queries"] or None,
                include_judged=data["include_judged"],
            )
        except ValidationError as error:
            form.add_error(None, _error_text(error))
        else:
            messages.success(request, f"Pool extended: {added} new pairs (assign them below).")
            return redirect("judging-pool", slug=collection.slug, pool_id=pool.id)
    return _pool_page(request, collection, pool, extend_form=form)


@login_required
@require_POST
def pool_release(request: HttpRequest, slug: str, pool_id: int, assignment_id: int) -> HttpResponse:
    """Release what an assessor has left of a pool's assignment, or hand it to another member
    (the API's `assignments/<id>/release/`, through the same service)."""
    collection = organised_collection(request, slug)
    assignment = get_object_or_404(
        Assignment.objects.select_related("pool__collection", "assessor"),
        id=assignment_id,
        pool_id=pool_id,
        pool__collection=collection,
    )
    assessors = selectors.collection_assessors(collection=collection)
    form = ReleaseForm(
        request.POST, collection=collection, assessors=assessors, holder=assignment.assessor
    )
    holder = assignment.assessor.get_username()
    if not form.is_valid():
        messages.error(
            request, "Not released: " + " ".join(str(e) for e in form.errors.get("to", []))
        )
        return redirect("judging-pool", slug=collection.slug, pool_id=pool_id)
    name = form.cleaned_data["to"]
    to = next((user for user in assessors if user.get_username() == name), None)
    try:
        released, handed = assignment_release(
            assignment=assignment, actor=acting_user(request), to=to
        )
    except ValidationError as error:
        messages.error(request, f"Not released: {_error_text(error)}")
    else:
        if not released:
            messages.info(request, f"{holder} has nothing left to release in this pool.")
        elif to is None:
            messages.success(
                request, f"{released} pairs {holder} had left are back in the pool (assign them)."
            )
        else:
            kept = released - handed
            also = f"; {kept} {name} already held" if kept else ""
            messages.success(
                request, f"{handed} pairs {holder} had left are handed to {name}{also}."
            )
    return redirect("judging-pool", slug=collection.slug, pool_id=pool_id)


# --- organisers: agreement and adjudication ---------------------------------------------


@login_required
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    collection = organised_collection(request, slug)
    k = cutoff_from(collection, request.GET.get("k"))
    context = {
        "collection": collection,
        "summary": selectors.agreement_summary(collection=collection),
        "judges": judges_calibration(collection=collection),
        "k": k,
        "sensitivity": assessor_sensitivity(collection=collection, k=k),
        "machine_rules": machine_rules_comparison(collection=collection, k=k),
    }
    return render(request, "annotations/judging/agreement.html", context)


@login_required
def disagreements(request: HttpRequest, slug: str) -> HttpResponse:
    """The disagreement list (GET ?min=2 or ?min=1) and its adjudication form (POST)."""
    collection = organised_collection(request, slug)
    levels = [level.value for level in collection.grades.all()]
    raw_min = request.GET.get("min", "2")
    min_difference = 1 if raw_min == "1" else 2
    if request.method == "POST":
        form = AdjudicationForm(request.POST, levels=levels)
        if not form.is_valid():
            messages.error(request, "The adjudication was not valid; choose a grade.")
        else:
            data = form.cleaned_data
            query = get_object_or_404(Query, id=data["query"], collection=collection)
            document = get_object_or_404(Document, id=data["document"], collection=collection)
            try:
                services.adjudication_record(
                    query=query,
                    document=document,
                    organiser=acting_user(request),
                    grade=data["grade"],
                    note=data["note"],
                )
            except ValidationError as error:
                messages.error(request, _error_text(error))
            else:
                messages.success(
                    request, f"Adjudicated {query.qid}/{document.docno}: grade {data['grade']}."
                )
        url = reverse("judging-disagreements", kwargs={"slug": collection.slug})
        return redirect(f"{url}?min={min_difference}")
    context = {
        "collection": collection,
        "rows": disputes.disagreements(collection=collection, min_difference=min_difference),
        "min_difference": min_difference,
        "choices": DISAGREEMENT_CHOICES,
        "levels": levels,
    }
    return render(request, "annotations/judging/disagreements.html", context)
