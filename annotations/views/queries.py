"""The organisers' queries page (judged counts, pool status, mean score) and document page."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotations import selectors
from annotations.models import Document
from annotations.selectors import query_lists
from annotations.views._collection import login_first, readable_collection

QUERIES_PER_PAGE = 100


@login_first
def queries(request: HttpRequest, slug: str) -> HttpResponse:
    """Every query, a page at a time, searched by qid or title (`?q=`)."""
    collection, access = readable_collection(request, slug, sees="queries")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    search = request.GET.get("q", "").strip()[:200]
    paginator = Paginator(
        query_lists.queries_listed(collection=collection, search=search), QUERIES_PER_PAGE
    )
    page = paginator.get_page(request.GET.get("page"))
    context = {
        "collection": collection,
        "access": access,
        "k": k,
        "search": search,
        "page": page,
        "rows": query_lists.query_rows_read(collection=collection, queries=list(page), k=k),
    }
    return render(request, "annotations/queries/list.html", context)


@login_first
def document_detail(request: HttpRequest, slug: str, docno: str) -> HttpResponse:
    """A document as assessors read it, and who judged it for which query."""
    collection, access = readable_collection(request, slug, sees="queries")
    document = Document.objects.filter(collection=collection, docno=docno).first()
    if document is None:
        raise Http404("No such document")
    context = {
        "collection": collection,
        "access": access,
        "document": document,
        "judgements": query_lists.document_judgements(document=document),
        "adjudications": query_lists.document_adjudications(document=document),
    }
    return render(request, "annotations/queries/document.html", context)
