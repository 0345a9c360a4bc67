"""The collection a console page is about, and what its viewer may see of it."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from annotations.access import Access, collection_access
from annotations.models import Collection
from annotations.selectors import collections_visible


def collection_for(request: HttpRequest, slug: str, *, sees: str) -> tuple[Collection, Access]:
    """The collection for a member whose `Access` has `sees`: 404 for non-members and for
    members blinded to the page; 403 for other members on organiser pages."""
    collection = collections_visible(user=request.user).filter(slug=slug).first()
    if collection is None:
        raise Http404("No such collection")
    access = collection_access(user=request.user, collection=collection)
    if not getattr(access, sees):
        if sees == "organiser":
            raise PermissionDenied("Only the collection's organisers may do this.")
        raise Http404("No such page")
    return collection, access
