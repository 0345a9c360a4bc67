"""HTML pages for collections: the list and a collection's overview with its stored scores."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotations import selectors
from annotations.selectors.judging import user_is_organiser


@login_required
def home(request: HttpRequest) -> HttpResponse:
    collections = selectors.collections_visible(user=request.user)
    return render(request, "annotations/home.html", {"collections": collections})


@login_required
def collection_detail(request: HttpRequest, slug: str) -> HttpResponse:
    collection = selectors.collections_visible(user=request.user).filter(slug=slug).first()
    if collection is None:
        raise Http404("No such collection")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    context = {
        "collection": collection,
        "k": k,
        "rows": selectors.leaderboard_rows(collection=collection, k=k),
        "pending": selectors.pending_count(collection=collection),
        "grades": collection.grades.all(),
        "counts": selectors.collection_counts(collection=collection),
        "organiser": user_is_organiser(user=request.user, collection=collection),
    }
    return render(request, "annotations/collection_detail.html", context)
