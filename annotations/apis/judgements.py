"""Judgements and the qrels export."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import django_filters
from django.db import transaction
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import selectors, services
from annotations.apis._base import (
    STAFF_ROLES,
    TEAM_ROLES,
    CollectionApiView,
    CollectionListApiView,
    StrictFilterSet,
    WholeNumberFilter,
    calling_user,
    created,
    documented_errors,
    is_schema_view,
)
from annotations.apis.conditional import (
    CONDITIONAL_PARAMETERS,
    NOT_MODIFIED,
    Validators,
    etag_of,
    qrels_changed_at,
)
from annotations.models import Collection, Document, Judgement, Query
from annotations.permissions import (
    ORGANISER,
)
from annotations.selectors import scores_state
from annotations.serializers import (
    JudgementInputSerializer,
    JudgementSerializer,
)
from annotations.services import judgement_rows


class JudgementFilter(StrictFilterSet):
    qid = django_filters.CharFilter(field_name="query__qid")
    docno = django_filters.CharFilter(field_name="document__docno")
    assessor = django_filters.CharFilter(field_name="assessor__username")
    grade = WholeNumberFilter()
    grade_min = WholeNumberFilter(field_name="grade", lookup_expr="gte")
    grade_max = WholeNumberFilter(field_name="grade", lookup_expr="lte")
    updated_after = django_filters.IsoDateTimeFilter(method="filter_updated_after")
    stale = django_filters.BooleanFilter(help_text="Judgements whose document changed since")

    class Meta:
        model = Judgement
        fields = [
            "qid", "docno", "assessor", "grade", "grade_min", "grade_max", "updated_after",
            "stale",
        ]  # fmt: skip

    def filter_updated_after(
        self, queryset: QuerySet[Judgement], name: str, value: datetime
    ) -> QuerySet[Judgement]:
        # In UTC: PostgreSQL refuses UTC offsets of 16 hours and more, ISO 8601 does not.
        try:
            moment = value.astimezone(UTC)
        except OverflowError:  # before year 1 or after 9999 in UTC: every judgement, or none
            return queryset if value.year == 1 else queryset.none()
        return queryset.filter(updated__gte=moment)


def pair_of(collection: Collection, qid: str, docno: str) -> tuple[Query, Document]:
    """The pair's query and document (the fields a write and its answer need) and, on the
    request's collection, its grades for the write's check: one statement."""
    query_row, document_row, grades = judgement_rows.pair_rows(collection.id, qid, docno)
    problems: dict[str, list[str]] = {}
    if query_row is None:
        problems["qid"] = [f"No query {qid!r} in {collection.slug}."]
    if document_row is None:
        problems["docno"] = [f"No document {docno!r} in {collection.slug}."]
    if problems:
        raise ValidationError(problems)
    query_id, found_qid, judgements_version, scored_version = cast(tuple, query_row)
    document_id, found_docno = cast(tuple, document_row)
    query = Query.from_db(
        "default",
        ("id", "collection_id", "qid", "judgements_version", "scored_version"),
        (query_id, collection.id, found_qid, judgements_version, scored_version),
    )
    document = Document.from_db(
        "default", ("id", "collection_id", "docno"), (document_id, collection.id, found_docno)
    )
    query.collection = document.collection = collection
    setattr(collection, services.GRADES_READ, grades)
    return query, document


class JudgementListCreateApi(CollectionListApiView):
    roles = {"GET": TEAM_ROLES, "POST": TEAM_ROLES}
    serializer_class = JudgementSerializer
    filterset_class = JudgementFilter

    def get_queryset(self) -> QuerySet[Judgement]:
        if is_schema_view(self):
            return Judgement.objects.none()
        judgements = Judgement.objects.filter(query__collection=self.collection).select_related(
            "query", "document", "assessor"
        )
        if ORGANISER not in self.roles_held:  # assessors see their own judgements only
            judgements = judgements.filter(assessor_id=self.request.user.pk)
        return judgements.order_by("query__qid", "document__docno", "assessor__username")

    @extend_schema(
        summary="Judgements: all for organisers, the caller's own for assessors",
        responses={200: JudgementSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Record the caller's judgement of (qid, docno): create or change it",
        description="Recorded with source=api and a history row; the query's scores are "
        "recomputed by a worker after the write (`pending` until it has). As the "
        "import commands do, an organiser's judgement of a qid or docno the collection does "
        "not know yet creates the query or document (ids only), so a qrels file posted line "
        "by line gives the same IDCG as its import; assessors judge known pairs only.",
        request=JudgementInputSerializer,
        responses={
            200: JudgementSerializer,
            201: JudgementSerializer,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        form = JudgementInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        # One transaction: a judgement refused (a grade off the scale) creates no id either.
        with transaction.atomic():
            if ORGANISER in self.roles_held:
                services.queries_ensure(collection=self.collection, qids=[data["qid"]])
                services.documents_ensure(collection=self.collection, docnos=[data["docno"]])
            query, document = pair_of(self.collection, data["qid"], data["docno"])
            judgement, is_new = services.judgement_upsert(
                query=query,
                document=document,
                assessor=calling_user(request),
                grade=data["grade"],
                note=data["note"],
                source="api",
            )
        # The answer from what was written, and the query's versions after the commit
        # (`pending`: whether a worker has stored the scores yet; with eager tasks it has).
        judgement.query, judgement.document = query, document
        judgement.assessor = calling_user(request)
        versions = judgement_rows.query_versions(query.id)
        if versions is not None:
            query.judgements_version, query.scored_version = versions
        data = JudgementSerializer(judgement).data
        if not is_new:
            return Response(data, status=status.HTTP_200_OK)
        return created(data, request, "judgement", slug=slug, qid=query.qid, docno=document.docno)


ASSESSOR_PARAMETER = OpenApiParameter(
    "assessor", str, description="Organisers: another assessor's judgement (username)."
)


class JudgementDetailApi(CollectionApiView):
    roles = {"GET": TEAM_ROLES, "DELETE": TEAM_ROLES}

    def _judgement(self, request: Request, qid: str, docno: str) -> Judgement:
        username = request.query_params.get("assessor")
        if username and username != request.user.get_username():
            if ORGANISER not in self.roles_held:
                raise PermissionDenied("Only organisers may address another assessor's work.")
            assessor_filter: dict[str, Any] = {"assessor__username": username}
        else:
            assessor_filter = {"assessor_id": request.user.pk}
        judgement = (
            Judgement.objects.filter(
                query__collection=self.collection,
                query__qid=qid,
                document__docno=docno,
                **assessor_filter,
            )
            .select_related("query", "document", "assessor")
            .first()
        )
        if judgement is None:
            raise NotFound("No such judgement.")
        return judgement

    @extend_schema(
        summary="The caller's judgement of (qid, docno)",
        parameters=[ASSESSOR_PARAMETER],
        responses={200: JudgementSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, qid: str, docno: str) -> Response:
        return Response(JudgementSerializer(self._judgement(request, qid, docno)).data)

    @extend_schema(
        summary="Delete the caller's judgement of (qid, docno), keeping its history",
        parameters=[ASSESSOR_PARAMETER],
        responses={204: None, **documented_errors(401, 403, 404)},
    )
    def delete(self, request: Request, slug: str, qid: str, docno: str) -> Response:
        judgement = self._judgement(request, qid, docno)
        services.judgement_delete(
            judgement=judgement, source="api", changed_by=calling_user(request)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class QrelsApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="The effective judgements as TREC qrels (organisers)",
        parameters=CONDITIONAL_PARAMETERS,
        responses={
            (200, "text/plain"): OpenApiResponse(
                OpenApiTypes.STR, description="`qid 0 docno grade` lines"
            ),
            **NOT_MODIFIED,
            **documented_errors(401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> HttpResponseBase:
        # The stamp changes with every judgement and setting change (aggregation included).
        state = scores_state.scores_state(collection=self.collection)
        validators = Validators(etag_of("qrels", state.stamp), qrels_changed_at(self.collection))
        not_modified = validators.not_modified(request)
        if not_modified is not None:
            return not_modified
        # Streamed as it is read (server-side cursor): constant memory at any size.
        response = StreamingHttpResponse(
            selectors.qrels_lines(collection=self.collection),
            content_type="text/plain; charset=utf-8",
        )
        response["Content-Disposition"] = f'inline; filename="{self.collection.slug}.qrels"'
        return validators.stamped(response)
