"""Stale judgements (organisers): send the pairs whose document changed to a pool."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from annotations.services.stale import pool_of_stale_build
from annotations.views._collection import organised_collection


@require_POST
@login_required
def stale_to_pool(request: HttpRequest, slug: str) -> HttpResponse:
    collection = organised_collection(request, slug)
    name = (request.POST.get("name") or "rejudge").strip()
    try:
        pool, added = pool_of_stale_build(
            collection=collection,
            name=name,
            created_by=request.user,  # type: ignore[arg-type]
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("judging-pools", slug=collection.slug)
    messages.success(
        request, f"{added} stale pair{'s' if added != 1 else ''} added to pool {pool.name}."
    )
    return redirect("judging-pool", slug=collection.slug, pool_id=pool.id)
