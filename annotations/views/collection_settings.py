"""Create a collection and edit its settings and grade scale in the app."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotations import services
from annotations.forms.collections import CollectionForm, grade_levels, grade_scale_formset
from annotations.models import DEFAULT_GRADES, Collection
from annotations.permissions import may_create_collections
from annotations.views._collection import collection_for


def _report(error: ValidationError, form: CollectionForm) -> list[str]:
    """Put a service's refusal next to the field it names; the scale's problems are returned,
    for the scale editor."""
    scale: list[str] = []
    for field, problems in error.message_dict.items():
        if field == "grades":
            scale.extend(problems)
        else:
            form.add_error(field if field in form.fields else None, problems)
    if scale and not form.errors:
        form.add_error(None, "The grade scale cannot be saved; see the scale below.")
    return scale


def _render(
    request: HttpRequest,
    form: CollectionForm,
    formset: Any,
    *,
    collection: Collection | None,
    scale_errors: list[str] | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "form": form,
        "formset": formset,
        "collection": collection,
        "scale_errors": scale_errors or [],
        "max_levels": services.MAX_GRADE_LEVELS,
    }
    return render(request, "annotations/collections/edit.html", context, status=status)


@login_required
def collection_create(request: HttpRequest) -> HttpResponse:
    """Staff, and organisers of some collection, create collections (the API's rule too)."""
    if not may_create_collections(request.user):
        raise PermissionDenied("Only staff and organisers of a collection create collections.")
    form = CollectionForm(request.POST or None)
    formset = grade_scale_formset(request.POST or None, default=DEFAULT_GRADES)
    if request.method == "POST":
        scale_errors: list[str] = []
        if form.is_valid() and formset.is_valid():
            data = form.cleaned_data
            try:
                collection = services.collection_create(
                    organiser=cast(Any, request.user),
                    slug=data["slug"],
                    grades=grade_levels(formset),
                    public_leaderboard=data["public_leaderboard"],
                    **{field: data[field] for field in services.SETTINGS},
                )
            except ValidationError as error:
                scale_errors = _report(error, form)
            else:
                messages.success(request, f"Collection {collection.slug} created.")
                return redirect("collection-detail", slug=collection.slug)
        return _render(
            request, form, formset, collection=None, scale_errors=scale_errors, status=400
        )
    return _render(request, form, formset, collection=None)


@login_required
def collection_edit(request: HttpRequest, slug: str) -> HttpResponse:
    collection, _ = collection_for(request, slug, sees="organiser")
    form = CollectionForm(request.POST or None, collection=collection)
    formset = grade_scale_formset(request.POST or None, collection=collection)
    if request.method == "POST":
        scale_errors: list[str] = []
        if form.is_valid() and formset.is_valid():
            data = form.cleaned_data
            try:
                services.collection_settings_save(
                    collection=collection,
                    grades=grade_levels(formset),
                    public_leaderboard=data["public_leaderboard"],
                    **{field: data[field] for field in services.SETTINGS},
                )
            except ValidationError as error:
                collection.refresh_from_db()
                scale_errors = _report(error, form)
            else:
                messages.success(request, "Settings saved.")
                return redirect("collection-edit", slug=collection.slug)
        return _render(
            request, form, formset, collection=collection, scale_errors=scale_errors, status=400
        )
    return _render(request, form, formset, collection=collection)
