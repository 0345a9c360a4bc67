"""Queries and documents of a collection: list and bulk create."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import services
from annotations.apis._base import (
    STAFF_ROLES,
    CollectionListApiView,
    StrictFilterSet,
    created,
    documented_errors,
    is_schema_view,
)
from annotations.models import Document, Query
from annotations.permissions import (
    ANY_ROLE,
)
from annotations.serializers import (
    DocumentInputSerializer,
    DocumentSerializer,
    ImportSummarySerializer,
    QueryInputSerializer,
    QuerySerializer,
)


class QueryFilter(StrictFilterSet):
    qid = django_filters.CharFilter()
    title = django_filters.CharFilter(lookup_expr="icontains")
    judged = django_filters.BooleanFilter(
        method="filter_judged", label="Only queries with (or without) judgements"
    )

    class Meta:
        model = Query
        fields = ["qid", "title", "judged"]

    def filter_judged(self, queryset: QuerySet[Query], name: str, value: bool) -> QuerySet[Query]:
        return queryset.filter(judgements__isnull=not value).distinct()


class QueryListCreateApi(CollectionListApiView):
    roles = {"GET": ANY_ROLE, "POST": STAFF_ROLES}
    serializer_class = QuerySerializer
    filterset_class = QueryFilter

    def get_queryset(self) -> QuerySet[Query]:
        if is_schema_view(self):
            return Query.objects.none()
        return Query.objects.filter(collection=self.collection).order_by("qid")

    @extend_schema(
        summary="The collection's queries",
        responses={200: QuerySerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Create or update queries by qid (organisers; all or nothing)",
        request=QueryInputSerializer(many=True),
        responses={201: ImportSummarySerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        serializer = QueryInputSerializer(data=request.data, many=True)
        serializer.is_valid(raise_exception=True)
        summary = services.queries_store(
            collection=self.collection,
            queries=[services.QueryFields(**item) for item in serializer.validated_data],
        )
        # Several at once: `Location` is the list that holds them.
        return created(ImportSummarySerializer(summary).data, request, "queries", slug=slug)


class DocumentFilter(StrictFilterSet):
    docno = django_filters.CharFilter()
    title = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Document
        fields = ["docno", "title"]


class DocumentListCreateApi(CollectionListApiView):
    roles = {"GET": ANY_ROLE, "POST": STAFF_ROLES}
    serializer_class = DocumentSerializer
    filterset_class = DocumentFilter

    def get_queryset(self) -> QuerySet[Document]:
        if is_schema_view(self):
            return Document.objects.none()
        return Document.objects.filter(collection=self.collection).order_by("docno")

    @extend_schema(
        summary="The collection's documents",
        responses={200: DocumentSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Create or update documents by docno (organisers; all or nothing)",
        request=DocumentInputSerializer(many=True),
        responses={201: ImportSummarySerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        serializer = DocumentInputSerializer(data=request.data, many=True)
        serializer.is_valid(raise_exception=True)
        summary = services.documents_store(
            collection=self.collection,
            documents=[services.DocumentFields(**item) for item in serializer.validated_data],
        )
        # Several at once: `Location` is the list that holds them.
        return created(ImportSummarySerializer(summary).data, request, "documents", slug=slug)
