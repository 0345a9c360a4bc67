"""Members and accounts (organisers): the members page's services and rules, through the API.

An account is created without a password and with a one-time set-password link; links are
issued only for accounts this collection created that hold no role elsewhere (staff: any
but staff and system accounts), so one collection's organisers cannot take over another's
accounts; existing accounts are added only if they log in with a password of their own.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import services
from annotations.apis._base import (
    STAFF_ROLES,
    CollectionApiView,
    PagedList,
    calling_user,
    created,
    documented_errors,
)
from annotations.models import Collection, Membership
from annotations.serializers.members import (
    AccountCreatedSerializer,
    AccountCreateSerializer,
    MemberAddSerializer,
    MemberSerializer,
    PasswordLinkSerializer,
    RoleSerializer,
)


def _member(membership: Membership, linkable: set[int]) -> dict[str, Any]:
    return {
        "id": membership.id,
        "username": membership.user.get_username(),
        "role": membership.role,
        "link_available": membership.user_id in linkable,
    }


def _link(request: Request, collection: Collection, user: Any) -> dict[str, Any]:
    path = services.account_password_link(
        user=user, collection=collection, actor=calling_user(request)
    )
    url = request.build_absolute_uri(path)
    mailed = services.account_password_link_send(user=user, url=url, collection=collection)
    return {"username": user.get_username(), "url": url, "mailed": mailed}


class MembersApiView(CollectionApiView):
    def linkable(self) -> set[int]:
        return services.link_candidates(
            collection=self.collection, actor=calling_user(self.request)
        )

    def membership(self, membership_id: int) -> Membership:
        return get_object_or_404(
            Membership.objects.select_related("user", "collection"),
            id=membership_id,
            collection=self.collection,
        )


class MemberListCreateApi(PagedList, MembersApiView):
    roles = {"GET": STAFF_ROLES, "POST": STAFF_ROLES}

    @extend_schema(
        summary="The collection's members, one row per user and role (organisers)",
        responses={200: MemberSerializer(many=True), **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        linkable = self.linkable()
        rows = (
            Membership.objects.filter(collection=self.collection)
            .select_related("user")
            .order_by("user__username", "role")
        )
        return self.pages(request, rows, lambda m: _member(m, linkable), MemberSerializer)

    @extend_schema(
        summary="Give an existing account a role (a second role is a second row)",
        description="Only an active account that logs in with a password of its own can be "
        "added; one answer for every account that cannot, so the API does not tell whether "
        "an account exists.",
        request=MemberAddSerializer,
        responses={201: MemberSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        form = MemberAddSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        membership = services.membership_add(
            collection=self.collection, actor=calling_user(request), **form.validated_data
        )
        body = MemberSerializer(_member(membership, self.linkable())).data
        return created(body, request, "member", slug=slug, membership_id=membership.id)


class AccountCreateApi(MembersApiView):
    roles = {"POST": STAFF_ROLES}

    @extend_schema(
        summary="Create an account with a role and answer its one-time set-password link",
        description="The account has no password until its person sets one through the "
        "link (shown once: keep it for them, or let it be mailed); it belongs to this "
        "collection, whose organisers may issue it a fresh link while it has none.",
        request=AccountCreateSerializer,
        responses={201: AccountCreatedSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        form = AccountCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = {"email": "", **form.validated_data}
        user = services.account_create(
            collection=self.collection, actor=calling_user(request), **data
        )
        membership = Membership.objects.select_related("user").get(
            collection=self.collection, user_id=user.pk
        )
        body = {
            "member": _member(membership, self.linkable()),
            "link": _link(request, self.collection, user),
        }
        data = AccountCreatedSerializer(body).data
        return created(data, request, "member", slug=slug, membership_id=membership.id)


class MemberDetailApi(MembersApiView):
    roles = {"PATCH": STAFF_ROLES, "DELETE": STAFF_ROLES}

    @extend_schema(
        summary="Change a member's role (the last organiser stays one)",
        request=RoleSerializer,
        responses={200: MemberSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def patch(self, request: Request, slug: str, membership_id: int) -> Response:
        membership = self.membership(membership_id)
        form = RoleSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        changed = services.membership_change_role(
            membership=membership, role=form.validated_data["role"], actor=calling_user(request)
        )
        return Response(MemberSerializer(_member(changed, self.linkable())).data)

    @extend_schema(
        summary="Remove a member's role (not the last organiser's); judgements stay",
        responses={204: None, **documented_errors(400, 401, 403, 404)},
    )
    def delete(self, request: Request, slug: str, membership_id: int) -> Response:
        membership = self.membership(membership_id)
        services.membership_remove(membership=membership, actor=calling_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordLinkApi(MembersApiView):
    roles = {"POST": STAFF_ROLES}

    @extend_schema(
        summary="A fresh one-time set-password link for a member without a password",
        description="Only for accounts this collection created that have not set a "
        "password and hold no role elsewhere (staff: any but staff and system accounts); "
        "any other is a 400 saying why. Every link issued is audited.",
        request=None,
        responses={200: PasswordLinkSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, membership_id: int) -> Response:
        membership = self.membership(membership_id)
        user: User = membership.user
        return Response(PasswordLinkSerializer(_link(request, self.collection, user)).data)
