"""HTML pages for collections: the list and a collection's overview with its stored scores."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotations import selectors
from annotations.access import collection_access
from annotations.permissions import may_create_collections
from annotations.scores import snapshots
from annotations.selectors import judging


@login_required
def home(request: HttpRequest) -> HttpResponse:
    context = {
        "collections": selectors.collections_visible(user=request.user),
        "may_create": may_create_collections(request.user),
    }
    return render(request, "annotations/home.html", context)


@login_required
def collection_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The overview: every member sees the description and the grade scale; the scores only
    those who may see the leaderboard (assessors are blinded unless it is opened to them)."""
    collection = selectors.collections_visible(user=request.user).filter(slug=slug).first()
    if collection is None:
        raise Http404("No such collection")
    access = collection_access(user=request.user, collection=collection)
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    # The stored leaderboard (a worker keeps it current), as the leaderboard page reads it.
    board = snapshots.leaderboard_read(collection=collection, k=k) if access.leaderboard else None
    context = {
        "collection": collection,
        "access": access,
        "k": k,
        "board": board,
        "pending": selectors.pending_count(collection=collection) if access.leaderboard else 0,
        "grades": collection.grades.all(),
        "counts": selectors.collection_counts(collection=collection),
        "assignments": [
            (assignment, progress)
            for assignment, progress in judging.assignments_of(user=request.user)
            if assignment.pool.collection_id == collection.id
        ],
        "organiser": access.organiser,
    }
    return render(request, "annotations/collection_detail.html", context)
