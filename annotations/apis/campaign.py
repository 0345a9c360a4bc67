"""Agreement, disagreements and adjudication, and the judgement history (organisers)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import services
from annotations.apis._base import (
    STAFF_ROLES,
    CollectionApiView,
    CollectionListApiView,
    PagedList,
    StrictFilterSet,
    calling_user,
    documented_errors,
    is_schema_view,
)
from annotations.apis.judgements import pair_of
from annotations.models import Adjudication, JudgementHistory
from annotations.selectors import disagreements as disputes
from annotations.selectors import judging
from annotations.selectors.calibration import judges_calibration
from annotations.serializers.campaign import (
    AdjudicationInputSerializer,
    AdjudicationSerializer,
    AgreementSerializer,
    DisagreementSerializer,
    HistorySerializer,
)

MIN_PARAMETER = OpenApiParameter(
    "min",
    {"type": "integer", "minimum": 1, "maximum": 2, "default": 2},
    description="The least spread of grades: 2 (default) or 1 (any difference).",
)


def _adjudication(adjudication: Adjudication) -> dict[str, object]:
    return {
        "qid": adjudication.query.qid,
        "docno": adjudication.document.docno,
        "grade": adjudication.grade,
        "note": adjudication.note,
        "organiser": adjudication.organiser.get_username(),
        "created": adjudication.created,
        "updated": adjudication.updated,
    }


class AgreementApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="Agreement among people (ordinal alpha, kappa per pair of them) and each "
        "machine judge calibrated against them",
        responses={200: AgreementSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        summary = judging.agreement_summary(collection=self.collection)
        body = {
            "collection": self.collection.slug,
            "levels": summary.levels,
            "units": summary.units,
            "alpha": summary.alpha,
            "pairs": [vars(pair) for pair in summary.pairs],
            "machine_judges": judges_calibration(collection=self.collection),
        }
        return Response(AgreementSerializer(body).data)


class DisagreementsApi(PagedList, CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="Pairs whose assessors' grades differ, with what adjudication needs",
        parameters=[MIN_PARAMETER],
        responses={200: DisagreementSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        raw = request.query_params.get("min", "2")
        if raw not in {"1", "2"}:
            raise ValidationError({"min": ["Give 1 or 2."]})
        rows = disputes.disagreements(collection=self.collection, min_difference=int(raw))
        return self.pages(request, rows, _disagreement, DisagreementSerializer)


def _disagreement(row: Any) -> dict[str, Any]:
    return {
        "qid": row.qid,
        "docno": row.docno,
        "grades": [{"assessor": a, "grade": g} for a, g in row.grades],
        "spread": row.spread,
        "effective": row.effective,
        "adjudicated": row.adjudicated,
        "notes": [{"assessor": a, "note": n} for a, n in row.notes],
    }


class AdjudicationListCreateApi(PagedList, CollectionApiView):
    roles = {"GET": STAFF_ROLES, "POST": STAFF_ROLES}

    @extend_schema(
        summary="The collection's adjudications",
        responses={200: AdjudicationSerializer(many=True), **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        rows = (
            Adjudication.objects.filter(query__collection=self.collection)
            .select_related("query", "document", "organiser")
            .order_by("query__qid", "document__docno")
        )
        return self.pages(request, rows, _adjudication, AdjudicationSerializer)

    @extend_schema(
        summary="Adjudicate a judged pair: the organiser's grade overrides the assessors'",
        description="Recorded in the history (source adjudication) and the query rescored; "
        "the same grade and note again changes nothing. A pair nobody judged is a 400.",
        request=AdjudicationInputSerializer,
        responses={200: AdjudicationSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        form = AdjudicationInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        query, document = pair_of(self.collection, data["qid"], data["docno"])
        adjudication = services.adjudication_record(
            query=query,
            document=document,
            organiser=calling_user(request),
            grade=data["grade"],
            note=data["note"],
        )
        adjudication.refresh_from_db()
        return Response(AdjudicationSerializer(_adjudication(adjudication)).data)


def _utc(value: datetime) -> datetime | None:
    try:  # PostgreSQL refuses UTC offsets of 16 hours and more, ISO 8601 does not
        return value.astimezone(UTC)
    except OverflowError:
        return None


class HistoryFilter(StrictFilterSet):
    qid = django_filters.CharFilter(field_name="query__qid")
    docno = django_filters.CharFilter(field_name="document__docno")
    assessor = django_filters.CharFilter(field_name="assessor__username")
    source = django_filters.ChoiceFilter(choices=JudgementHistory.SOURCE_CHOICES)
    since = django_filters.IsoDateTimeFilter(
        method="filter_since", help_text="Changes at or after this time (ISO 8601)."
    )
    until = django_filters.IsoDateTimeFilter(
        method="filter_until", help_text="Changes before this time (ISO 8601)."
    )

    class Meta:
        model = JudgementHistory
        fields = ["qid", "docno", "assessor", "source", "since", "until"]

    def filter_since(
        self, queryset: QuerySet[JudgementHistory], name: str, value: datetime
    ) -> QuerySet[JudgementHistory]:
        moment = _utc(value)
        if moment is None:
            return queryset if value.year == 1 else queryset.none()
        return queryset.filter(changed_at__gte=moment)

    def filter_until(
        self, queryset: QuerySet[JudgementHistory], name: str, value: datetime
    ) -> QuerySet[JudgementHistory]:
        moment = _utc(value)
        if moment is None:
            return queryset.none() if value.year == 1 else queryset
        return queryset.filter(changed_at__lt=moment)


class HistoryApi(CollectionListApiView):
    roles = {"GET": STAFF_ROLES}
    serializer_class = HistorySerializer
    filterset_class = HistoryFilter

    def get_queryset(self) -> QuerySet[JudgementHistory]:
        if is_schema_view(self):
            return JudgementHistory.objects.none()
        return (
            JudgementHistory.objects.filter(query__collection=self.collection)
            .select_related("query", "document", "assessor", "changed_by")
            .order_by("changed_at", "id")
        )

    @extend_schema(
        summary="Every change of a judgement, oldest first, paged and filterable by time",
        responses={200: HistorySerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())
