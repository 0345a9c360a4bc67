"""The collection a console page is about, and what its viewer may see of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from annotations.access import Access, collection_access
from annotations.models import Collection
from annotations.selectors import collections_visible

if TYPE_CHECKING:
    from django.contrib.auth.models import User


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


def organised_collection(request: HttpRequest, slug: str) -> Collection:
    """The collection for its organisers (and staff); 404 for non-members, 403 for other
    members."""
    return collection_for(request, slug, sees="organiser")[0]


def acting_user(request: HttpRequest) -> User:
    """The logged-in user of a view behind login_required."""
    return cast("User", request.user)


class LoginFirst(Exception):
    """Raised by `readable_collection` for an anonymous visitor: `login_first` answers it
    with the login page."""


def readable_collection(request: HttpRequest, slug: str, *, sees: str) -> tuple[Collection, Access]:
    """The collection and what the caller sees of it, for pages that may be public; 404
    unless the caller may see the page (`sees` names the `Access` property it needs), a
    login first for anonymous visitors (`login_first`)."""
    collection = Collection.objects.filter(slug=slug).first()
    if collection is not None:
        access = collection_access(user=request.user, collection=collection)
        if getattr(access, sees):
            return collection, access
    if not request.user.is_authenticated:
        raise LoginFirst
    raise Http404("No such collection")


def login_first(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Send an anonymous visitor that `readable_collection` refused to the login page."""

    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except LoginFirst:
            return redirect_to_login(request.get_full_path())

    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper
