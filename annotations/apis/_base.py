"""What every API view shares: base classes, role sets, the k parameter, strict filters,
error schemas."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

import django_filters
from django import forms
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.exceptions import MethodNotAllowed, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from annotations import idempotency, selectors
from annotations.access import Access
from annotations.api_errors import RequestTargetTooLong, UploadTooLarge
from annotations.metadata import query_parameters
from annotations.metrics.measures import Measure
from annotations.models import Collection, IdempotentResponse
from annotations.pagination import BoundedLimitOffsetPagination
from annotations.permissions import (
    ASSESSOR,
    ORGANISER,
    OWNER,
    CollectionRole,
)
from annotations.selectors import measure_values
from annotations.serializers import (
    ErrorSerializer,
)

STAFF_ROLES = frozenset({ORGANISER})
TEAM_ROLES = frozenset({ORGANISER, ASSESSOR})
RUN_WRITERS = frozenset({ORGANISER, OWNER})
# The longest request target (path and query string, percent-encoded) an API view reads:
# under the request line gunicorn takes by default (limit_request_line, 4,094 bytes).
MAX_REQUEST_TARGET = 4000
_CUTOFF = re.compile(r"[0-9]{1,4}")
_LENGTH = re.compile(r"[0-9]+")


def documented_errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: OpenApiResponse(ErrorSerializer, description="Error") for code in codes}


K_PARAMETER = OpenApiParameter(
    "k",
    {"type": "integer", "minimum": 1, "maximum": 1000},
    description="The cutoff: one of the collection's `cutoffs` (any other value is a 400). "
    "Default: 10 if it is one of them, else the middle cutoff.",
)


MEASURE_PARAMETER = OpenApiParameter(
    "measure",
    str,
    description="One of the collection's `measures` (ir_measures' syntax, e.g. `AP` or "
    "`P@10`): the answer also holds that measure's values. A measure the collection does "
    "not keep is a 400 listing those it keeps.",
)


def measure_of(collection: Collection, request: Request) -> Measure | None:
    """The kept measure asked for by `measure=`, None without one; a 400 otherwise."""
    raw = request.query_params.get("measure")
    if raw is None:
        return None
    try:
        return measure_values.kept_measure(collection, raw)
    except measure_values.UnknownMeasure as error:
        raise ValidationError({"measure": [str(error)]}) from None


def _max_upload_bytes() -> int:
    return int(settings.NDCG_MAX_UPLOAD_MB) * 1024 * 1024


def refuse_large_body(request: Request) -> None:
    """A 413 before the body is read when its declared length is over NDCG_MAX_UPLOAD_MB."""
    length = request.META.get("CONTENT_LENGTH") or "0"
    if _LENGTH.fullmatch(length) and (len(length) > 18 or int(length) > _max_upload_bytes()):
        raise UploadTooLarge(f"The upload exceeds {settings.NDCG_MAX_UPLOAD_MB} MB.")


def checked_upload(upload: UploadedFile) -> UploadedFile:
    """The uploaded file, or a 413 when it is over NDCG_MAX_UPLOAD_MB."""
    if upload.size is not None and upload.size > _max_upload_bytes():
        raise UploadTooLarge(f"The upload exceeds {settings.NDCG_MAX_UPLOAD_MB} MB.")
    return upload


def cutoff_of(collection: Collection, request: Request) -> int:
    raw = request.query_params.get("k")
    if raw is not None and not (
        _CUTOFF.fullmatch(raw) is not None and int(raw) in collection.sorted_cutoffs
    ):
        raise ValidationError({"k": [f"k must be one of {collection.sorted_cutoffs}."]})
    return selectors.cutoff_from(collection, raw)


# DRF's own: the renderer a client may ask for (`?format=json`), on every endpoint.
_ALWAYS_ALLOWED = frozenset({"format"})


def refuse_unknown_parameters(view: APIView, request: Request) -> None:
    """A query parameter the operation does not document is a 400 naming it, not a filter
    silently ignored (a misspelt `qid=` would answer every judgement)."""
    method = "GET" if request.method == "HEAD" else (request.method or "")
    if method == "OPTIONS" or not request.query_params:
        return
    known = query_parameters(view, method)
    if known is None:
        return
    unknown = sorted(set(request.query_params) - known - _ALWAYS_ALLOWED)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise ValidationError(
            {
                name: [f"Unknown query parameter (this operation takes: {allowed})."]
                for name in unknown
            }
        )


class ApiView(APIView):
    """Base of every API view (errors get one body through settings' EXCEPTION_HANDLER).

    A write sent with an Idempotency-Key runs in one transaction with the record of its
    answer (annotations/idempotency.py): a retry replays the answer instead of writing again.
    """

    _idempotent: IdempotentResponse | None = None

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method not in idempotency.WRITE_METHODS or idempotency.HEADER not in (
            request.headers
        ):
            return super().dispatch(request, *args, **kwargs)
        with transaction.atomic():
            response = super().dispatch(request, *args, **kwargs)
            if response.status_code >= 400:
                transaction.set_rollback(True)  # an error changed nothing, and keeps nothing
        return response

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # A request target too long is a 414 and a method the resource lacks a 405 (with
        # Allow), for every caller: before the caller's authentication and role are asked
        # about, which neither depends on.
        if len(request.get_full_path()) > MAX_REQUEST_TARGET:
            raise RequestTargetTooLong(
                f"The path and query string are longer than {MAX_REQUEST_TARGET:,} bytes."
            )
        method = (request.method or "").lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise MethodNotAllowed(request.method or "")
        super().initial(request, *args, **kwargs)
        refuse_unknown_parameters(self, request)
        key = idempotency.requested_key(request)
        if key is not None and request.user.is_authenticated:
            self._idempotent = idempotency.claim(request, key)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, idempotency.Replay):
            return cast(Response, exc.response)
        return super().handle_exception(exc)

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        record, self._idempotent = self._idempotent, None
        if record is not None and 200 <= response.status_code < 400:
            idempotency.store(record, cast(HttpResponse, response))
        return response


class CollectionApiView(ApiView):
    """An API view under /collections/{slug}/, guarded by the caller's role in it."""

    permission_classes = [CollectionRole]
    roles: dict[str, frozenset[str]] = {}
    public_read = False
    sees: str | None = None  # the Access property a read needs (blinded members get 404)
    collection: Collection
    roles_held: frozenset[str]
    access: Access


class _WholeNumberField(forms.DecimalField):
    """A number without a fraction, of any size (compared, never stored)."""

    default_error_messages = {"invalid": "Enter a whole number."}

    def validate(self, value: Any) -> None:
        super().validate(value)
        if value is not None and value != value.to_integral_value():
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")


class WholeNumberFilter(django_filters.NumberFilter):
    """A filter on an integer column: 1.5 is a 400, not a comparison with a fraction."""

    field_class = _WholeNumberField


class StrictFilterSet(django_filters.FilterSet):
    """A list's filters as strict as their schema: a number, boolean or time given blank
    (`?stale=`) or a boolean other than `true` or `false` is a 400 naming the parameter,
    not the unfiltered list. A blank text filter filters nothing, as its schema allows."""

    def is_valid(self) -> bool:
        valid = super().is_valid()
        for name, filter_ in self.filters.items():
            if name not in self.data or isinstance(filter_, django_filters.CharFilter):
                continue
            raw = self.data.get(name)
            if raw == "":
                self.form.add_error(name, "Give a value, or leave the parameter out.")
            elif isinstance(filter_, django_filters.BooleanFilter) and raw not in {"true", "false"}:
                self.form.add_error(name, "Give true or false.")
        return valid and not self.form.errors


class CollectionListApiView(GenericAPIView, CollectionApiView):  # type: ignore[type-arg]
    """A paginated, filtered list under a collection."""

    filter_backends = [django_filters.rest_framework.DjangoFilterBackend]

    def list_response(self, queryset: QuerySet[Any]) -> Response:
        page = self.paginate_queryset(self.filter_queryset(queryset))
        serializer = self.get_serializer(page, many=True)
        return self.get_paginated_response(serializer.data)


class PagedList:
    """A GET list answered in pages like every list of the API (`count`, `next`,
    `previous`, `results`; `?limit=&offset=`), and so described in the schema."""

    pagination_class = BoundedLimitOffsetPagination

    def pages(
        self,
        request: Request,
        items: Any,
        body: Callable[[Any], Any],
        serializer: type[Serializer[Any]],
    ) -> Response:
        """One page of `items` (a queryset or a list), each made into its answer by `body`
        only once it is on the page."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(items, request, view=cast(APIView, self))
        data = serializer([body(item) for item in page or []], many=True).data
        return paginator.get_paginated_response(data)


def created(data: Any, request: Request, route: str, **kwargs: Any) -> Response:
    """A 201 whose `Location` is the created resource's URL (route `api:<route>`)."""
    location = request.build_absolute_uri(reverse(f"api:{route}", kwargs=kwargs))
    return Response(data, status=201, headers={"Location": location})


def calling_user(request: Request) -> User:
    """The caller; the permission classes have already refused anonymous writers."""
    return cast(User, request.user)


def is_schema_view(view: Any) -> bool:
    return getattr(view, "swagger_fake_view", False)
