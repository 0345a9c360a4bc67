"""Who may do what in a collection: roles from memberships, staff as organiser everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import Http404
from rest_framework.exceptions import NotAuthenticated, PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from annotations.access import collection_access, collection_with_roles, roles_of
from annotations.models import Collection, Membership

if TYPE_CHECKING:
    from rest_framework.views import APIView

ORGANISER = Membership.ORGANISER
ASSESSOR = Membership.ASSESSOR
OWNER = Membership.OWNER
ANY_ROLE = frozenset({ORGANISER, ASSESSOR, OWNER})


def collection_roles(*, user: Any, collection: Collection) -> frozenset[str]:
    """The caller's roles in a collection; staff hold every role, anonymous users none."""
    return roles_of(user=user, collection=collection)


def may_create_collections(user: Any) -> bool:
    """Staff, and anyone who already organises a collection."""
    if not user.is_authenticated:
        return False
    return bool(user.is_staff or Membership.objects.filter(user=user, role=ORGANISER).exists())


def may_replace_run(*, roles: frozenset[str], user: Any, run_owner_id: int | None) -> bool:
    """Organisers change any run; system owners only the runs they own."""
    return ORGANISER in roles or (OWNER in roles and run_owner_id == user.pk)


class MayCreateCollections(BasePermission):
    """A new collection (POST): staff, and organisers of another collection."""

    message = "Only staff and organisers may create collections."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return request.method != "POST" or may_create_collections(request.user)


class CollectionRole(BasePermission):
    """Resolve the view's collection by slug and check the caller's role for the method.

    The view declares ``roles``: HTTP method -> roles allowed (any one suffices), and
    ``public_read`` when a collection with ``public_leaderboard`` may be read by anyone.
    Anonymous callers get 401, members without a suitable role 403, and users with no role
    at all 404, so the API never confirms that a private collection exists. A view that
    reveals systems or scores names the `Access` property it needs in ``sees``; a member
    blinded to it (an assessor, by default) gets 404 on reads, as on the pages.
    """

    def has_permission(self, request: Request, view: APIView) -> bool:
        slug = view.kwargs["slug"]
        collection, roles = collection_with_roles(slug=slug, user=request.user)
        public = (
            collection is not None
            and getattr(view, "public_read", False)
            and collection.public_leaderboard
            and request.method in SAFE_METHODS
        )
        if public and collection is not None:
            held = roles
            view.collection = collection  # type: ignore[attr-defined]
            view.roles_held = held  # type: ignore[attr-defined]
            view.access = collection_access(  # type: ignore[attr-defined]
                user=request.user, collection=collection, roles=held
            )
            return True
        if not request.user or not request.user.is_authenticated:
            raise NotAuthenticated()
        if collection is None:
            raise Http404("No such collection")
        if not roles:
            raise Http404("No such collection")
        view.collection = collection  # type: ignore[attr-defined]
        view.roles_held = roles  # type: ignore[attr-defined]
        access = collection_access(user=request.user, collection=collection, roles=roles)
        view.access = access  # type: ignore[attr-defined]
        sees: str | None = getattr(view, "sees", None)
        if sees is not None and request.method in SAFE_METHODS and not getattr(access, sees):
            raise Http404("Not found.")
        allowed: frozenset[str] = getattr(view, "roles", {}).get(request.method or "", frozenset())
        if request.method == "HEAD":
            allowed = getattr(view, "roles", {}).get("GET", frozenset())
        elif request.method == "OPTIONS":  # what the resource is: any member may ask
            allowed = ANY_ROLE
        if not roles & allowed:
            raise PermissionDenied("Your role in this collection does not allow this.")
        return True
