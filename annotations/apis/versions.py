"""Qrels versions (organisers): tag, list, export and score as of a version or a time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import (
    K_PARAMETER,
    MEASURE_PARAMETER,
    STAFF_ROLES,
    CollectionApiView,
    PagedList,
    calling_user,
    created,
    cutoff_of,
    documented_errors,
    measure_of,
)
from annotations.apis.conditional import (
    CONDITIONAL_PARAMETERS,
    NOT_MODIFIED,
    Validators,
    etag_of,
)
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.models import Collection, QrelsVersion
from annotations.selectors.scores_state import scores_state
from annotations.selectors.versions import (
    Mark,
    leaderboard_as_of,
    measure_as_of,
    qrels_text_as_of,
    versions_diff,
)
from annotations.serializers.versions import (
    LeaderboardAsOfSerializer,
    QrelsVersionCreateSerializer,
    QrelsVersionSerializer,
    VersionsDiffSerializer,
)
from annotations.services.versions import qrels_version_tag

# A version's name, as tagging takes it (a slug of at most 100 characters).
VERSION_NAME = {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$", "maxLength": 100}
AT_PARAMETER = OpenApiParameter(
    "at", OpenApiTypes.DATETIME, required=True, description="ISO 8601 time, e.g. 2026-12-01T10:00Z"
)


def _version(collection: Collection, name: str) -> QrelsVersion:
    version = QrelsVersion.objects.filter(collection=collection, name=name).first()
    if version is None:
        raise NotFound("No such qrels version.")
    return version


def _at(request: Request, collection: Collection, field: str = "at") -> Mark:
    raw = request.query_params.get(field, "")
    try:
        moment: datetime | None = parse_datetime(raw)
    except ValueError:
        moment = None
    if moment is None:
        raise ValidationError({field: ["Give a time in ISO 8601, e.g. 2026-12-01T10:00:00Z."]})
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_default_timezone())
    try:  # in UTC: PostgreSQL refuses UTC offsets of 16 hours and more, ISO 8601 does not
        moment = moment.astimezone(UTC)
    except OverflowError:
        raise ValidationError({field: ["The time is out of range."]}) from None
    return Mark.of_time(collection, moment)


def _validators(collection: Collection, mark: Mark, *parts: object) -> Validators:
    """What a read as of a mark depends on: the mark, and (a time's mark, or a leaderboard)
    the stamp, which changes with every judgement, run and setting change."""
    state = scores_state(collection=collection)
    fixed = mark.history_id is not None and not parts
    etag = etag_of("as-of", mark.key, mark.gain, mark.missing_queries, *parts,
                   None if fixed else state.stamp)  # fmt: skip
    return Validators(etag, None if fixed else state.changed_at)


def _conditional(
    request: Request, validators: Validators, answer: Callable[[], HttpResponseBase]
) -> HttpResponseBase:
    not_modified = validators.not_modified(request)
    if not_modified is not None:
        return not_modified
    return validators.stamped(answer())


def _measure_key(measure: Measure | None) -> str:
    return format_measure(measure) if measure is not None else ""


def _qrels_response(collection: Collection, mark: Mark, name: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        (piece.encode() for piece in qrels_text_as_of(collection=collection, mark=mark)),
        content_type="text/plain; charset=utf-8",
    )
    response["Content-Disposition"] = f'inline; filename="{collection.slug}-{name}.qrels"'
    return response


def _board(collection: Collection, mark: Mark, k: int, measure: Measure | None) -> dict[str, Any]:
    board = leaderboard_as_of(collection=collection, mark=mark, k=k)
    body: dict[str, Any] = {
        "collection": collection.slug,
        "mark": board.label,
        "k": board.k,
        "pairs": board.pairs,
        "queries": board.queries,
        "machine_grades": mark.machine_grades,
        "runs": board.rows,
    }
    if measure is not None:
        by_measure = measure_as_of(collection=collection, mark=mark, measure=measure)
        body["measure"] = {
            "name": by_measure.name,
            "trec_eval": by_measure.trec_eval,
            "runs": by_measure.rows,
        }
    return LeaderboardAsOfSerializer(body).data


QRELS_TEXT = {
    (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="`qid 0 docno grade`"),
}


class QrelsVersionListApi(PagedList, CollectionApiView):
    roles = {"GET": STAFF_ROLES, "POST": STAFF_ROLES}

    @extend_schema(
        summary="Qrels versions of the collection, oldest first",
        responses={200: QrelsVersionSerializer(many=True), **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        versions = QrelsVersion.objects.filter(collection=self.collection).select_related(
            "created_by"
        )
        return self.pages(request, versions, lambda version: version, QrelsVersionSerializer)

    @extend_schema(
        summary="Tag the qrels as they stand now (cheap: a mark in the history)",
        request=QrelsVersionCreateSerializer,
        responses={201: QrelsVersionSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, slug: str) -> Response:
        given = QrelsVersionCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        version = qrels_version_tag(
            collection=self.collection, created_by=calling_user(request), **given.validated_data
        )
        return created(
            QrelsVersionSerializer(version).data, request, "version", slug=slug, name=version.name
        )


class QrelsVersionApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="One qrels version: its name, note, machine-grade rule and when it was tagged",
        responses={200: QrelsVersionSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        return Response(QrelsVersionSerializer(_version(self.collection, name)).data)


class QrelsVersionQrelsApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="A version's effective qrels, as exported when it was tagged",
        parameters=CONDITIONAL_PARAMETERS,
        responses={**QRELS_TEXT, **NOT_MODIFIED, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> HttpResponseBase:
        version = _version(self.collection, name)
        mark = Mark.of_version(version)
        return _conditional(
            request,
            _validators(self.collection, mark),
            lambda: _qrels_response(self.collection, mark, version.name),
        )


class QrelsVersionLeaderboardApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="Every run's mean nDCG@k (and a kept measure's) under a version's qrels",
        parameters=[K_PARAMETER, MEASURE_PARAMETER, *CONDITIONAL_PARAMETERS],
        responses={
            200: LeaderboardAsOfSerializer,
            **NOT_MODIFIED,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str, name: str) -> HttpResponseBase:
        k = cutoff_of(self.collection, request)
        measure = measure_of(self.collection, request)
        mark = Mark.of_version(_version(self.collection, name))
        return _conditional(
            request,
            _validators(self.collection, mark, "leaderboard", k, _measure_key(measure)),
            lambda: Response(_board(self.collection, mark, k, measure)),
        )


class QrelsAsOfApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="The effective qrels as they stood at a past time",
        parameters=[AT_PARAMETER, *CONDITIONAL_PARAMETERS],
        responses={**QRELS_TEXT, **NOT_MODIFIED, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> HttpResponseBase:
        mark = _at(request, self.collection)
        return _conditional(
            request,
            _validators(self.collection, mark),
            lambda: _qrels_response(self.collection, mark, "as-of"),
        )


class LeaderboardAsOfApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="Every run's mean nDCG@k (and a kept measure's) under the qrels of a past time",
        parameters=[AT_PARAMETER, K_PARAMETER, MEASURE_PARAMETER, *CONDITIONAL_PARAMETERS],
        responses={
            200: LeaderboardAsOfSerializer,
            **NOT_MODIFIED,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> HttpResponseBase:
        mark = _at(request, self.collection)
        k = cutoff_of(self.collection, request)
        measure = measure_of(self.collection, request)
        return _conditional(
            request,
            _validators(self.collection, mark, "leaderboard", k, _measure_key(measure)),
            lambda: Response(_board(self.collection, mark, k, measure)),
        )


class QrelsVersionsDiffApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="What changed from version a to version b: pairs, run scores, ranks, tau",
        description="Runs are scored by nDCG@k, or with `measure=` by a kept measure's `all` "
        "value under each version's qrels.",
        parameters=[
            OpenApiParameter(
                "a", VERSION_NAME, required=True, description="The earlier version's name"
            ),
            OpenApiParameter(
                "b", VERSION_NAME, required=True, description="The later version's name"
            ),
            K_PARAMETER,
            MEASURE_PARAMETER,
        ],
        responses={200: VersionsDiffSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        names = {field: request.query_params.get(field, "") for field in ("a", "b")}
        missing = {field: ["Name a version."] for field, value in names.items() if not value}
        if missing:
            raise ValidationError(missing)
        k = cutoff_of(self.collection, request)
        measure = measure_of(self.collection, request)
        first, second = (Mark.of_version(_version(self.collection, n)) for n in names.values())
        diff = versions_diff(
            collection=self.collection, first=first, second=second, k=k, measure=measure
        )
        body = {
            "collection": self.collection.slug,
            "a": diff.first,
            "b": diff.second,
            "k": diff.k,
            "measure": diff.measure,
            "added": diff.added,
            "changed": diff.changed,
            "removed": diff.removed,
            "runs": [{**vars(row), "change": row.change} for row in diff.runs],
            "tau": diff.tau,
            "tau_ap": diff.tau_ap,
        }
        return Response(VersionsDiffSerializer(body).data)
