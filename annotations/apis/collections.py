"""Collections: list, create, read, edit, delete."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import selectors, services
from annotations.apis._base import (
    STAFF_ROLES,
    ApiView,
    CollectionApiView,
    calling_user,
    created,
    documented_errors,
    is_schema_view,
)
from annotations.models import Collection, Membership
from annotations.permissions import (
    ANY_ROLE,
    ORGANISER,
    MayCreateCollections,
)
from annotations.serializers import (
    CollectionCreateSerializer,
    CollectionSerializer,
    CollectionUpdateSerializer,
)


class CollectionListCreateApi(GenericAPIView, ApiView):  # type: ignore[type-arg]
    serializer_class = CollectionSerializer
    permission_classes = [IsAuthenticated, MayCreateCollections]

    def get_queryset(self) -> QuerySet[Collection]:
        if is_schema_view(self):
            return Collection.objects.none()
        return selectors.collections_visible(user=self.request.user).prefetch_related("grades")

    def _roles(self) -> dict[int, frozenset[str]]:
        user = self.request.user
        if user.is_staff:
            return {c.id: ANY_ROLE for c in Collection.objects.only("id")}
        roles: dict[int, set[str]] = {}
        for collection_id, role in Membership.objects.filter(
            user=calling_user(self.request)
        ).values_list("collection_id", "role"):
            roles.setdefault(collection_id, set()).add(role)
        return {key: frozenset(value) for key, value in roles.items()}

    @extend_schema(
        summary="Collections the caller may open",
        responses={200: CollectionSerializer(many=True), **documented_errors(401)},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        serializer = CollectionSerializer(page, many=True, context={"roles": self._roles()})
        return self.get_paginated_response(serializer.data)

    @extend_schema(
        summary="Create a collection (staff, or organisers of another collection)",
        request=CollectionCreateSerializer,
        responses={201: CollectionSerializer, **documented_errors(400, 401, 403)},
    )
    def post(self, request: Request) -> Response:
        serializer = CollectionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        grades = data.pop("grades", None)
        collection = services.collection_create(
            organiser=calling_user(request),
            grades=None
            if grades is None
            else [(g["value"], g["label"], g["definition"]) for g in grades],
            **data,
        )
        context = {"roles": {collection.id: ANY_ROLE if request.user.is_staff else {ORGANISER}}}
        data = CollectionSerializer(collection, context=context).data
        return created(data, request, "collection", slug=collection.slug)


class CollectionDetailApi(CollectionApiView):
    roles = {"GET": ANY_ROLE, "PATCH": STAFF_ROLES}

    def _body(self) -> dict[str, Any]:
        context = {"roles": {self.collection.id: self.roles_held}}
        return CollectionSerializer(self.collection, context=context).data

    @extend_schema(
        summary="A collection with its settings and grade scale",
        responses={200: CollectionSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(self._body())

    @extend_schema(
        summary="Change a collection's settings (organisers); scoring settings rescore",
        request=CollectionUpdateSerializer,
        responses={200: CollectionSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def patch(self, request: Request, slug: str) -> Response:
        serializer = CollectionUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        public = changes.pop("public_leaderboard", None)
        if changes:
            services.collection_update(collection=self.collection, **changes)
        if public is not None:
            services.collection_publish(collection=self.collection, public=public)
        return Response(self._body())
