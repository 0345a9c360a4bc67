"""Runs: list, upload, read, replace, delete; ownership decided where the write happens."""

from __future__ import annotations

from typing import BinaryIO, cast

import django_filters
from django.conf import settings
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import services
from annotations.api_errors import UploadTooLarge
from annotations.apis._base import (
    RUN_WRITERS,
    CollectionApiView,
    _errors,
    _fake,
    _user,
)
from annotations.models import Run
from annotations.parsers import SafeJSONParser
from annotations.permissions import (
    ANY_ROLE,
    may_replace_run,
)
from annotations.serializers import (
    RunJsonSerializer,
    RunSerializer,
    RunUploadSerializer,
    RunWriteSerializer,
)
from annotations.trec import TrecFormatError


class RunFilter(django_filters.FilterSet):
    name = django_filters.CharFilter()
    owner = django_filters.CharFilter(field_name="owner__username")
    pending = django_filters.BooleanFilter(field_name="scored_at", lookup_expr="isnull")

    class Meta:
        model = Run
        fields = ["name", "owner", "pending"]


def _written(imported: list[services.RunImported]) -> dict[str, object]:
    """The answer to a write: the first run stored, and every run (one per tag if split)."""
    items = []
    for item in imported:
        item.run.refresh_from_db()
        items.append(
            {
                "run": item.run,
                "results": item.results,
                "ignored_ranks": item.ignored_ranks,
                "first_ignored_rank_line": item.first_ignored_rank_line,
                "summary": str(item),
            }
        )
    return {**items[0], "runs": items}


RUN_REQUEST = {
    "multipart/form-data": RunUploadSerializer,
    "application/json": RunJsonSerializer,
}


class RunWriting(CollectionApiView):
    """Run creation and replacement from a multipart TREC file or JSON results."""

    parser_classes = [SafeJSONParser, MultiPartParser]

    def may_change(self, run: Run) -> bool:
        """Whether the caller may replace or delete this run (decided on the locked row)."""
        return may_replace_run(
            roles=self.roles_held, user=self.request.user, run_owner_id=run.owner_id
        )

    def store(
        self, request: Request, *, run_name: str | None, replace: bool
    ) -> list[services.RunImported]:
        """Store the request's run (or runs, one per tag, with `split_tags`)."""
        limit = settings.NDCG_MAX_UPLOAD_MB * 1024 * 1024
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > limit:  # refuse before reading the body
            raise UploadTooLarge(f"The upload exceeds {settings.NDCG_MAX_UPLOAD_MB} MB.")
        owner = _user(request)
        try:
            if (request.content_type or "").startswith("multipart/"):
                upload_form = RunUploadSerializer(data=request.data)
                upload_form.is_valid(raise_exception=True)
                upload = upload_form.validated_data["file"]
                if upload.size > limit:
                    raise UploadTooLarge(f"The upload exceeds {settings.NDCG_MAX_UPLOAD_MB} MB.")
                split_tags = upload_form.validated_data["split_tags"]
                if split_tags and run_name is not None:
                    problem = "A PUT names one run: POST the file to runs/ to split its tags."
                    raise ValidationError({"split_tags": [problem]})
                return services.run_files_import(
                    collection=self.collection,
                    sources=[cast(BinaryIO, upload)],
                    names=[upload.name],
                    run_name=run_name or upload_form.validated_data.get("name"),
                    split_tags=split_tags,
                    owner=owner,
                    description=upload_form.validated_data["description"],
                    replace=replace,
                    may_replace=self.may_change,
                )
            form = RunJsonSerializer(data=request.data)
            form.is_valid(raise_exception=True)
            name = run_name or form.validated_data.get("name")
            if not name:
                raise ValidationError({"name": ["A run name is required."]})
            run, count = services.run_store(
                collection=self.collection,
                run_name=name,
                results=form.grouped(),
                owner=owner,
                description=form.validated_data["description"],
                replace=replace,
                may_replace=self.may_change,
            )
            return [services.RunImported(run, count, "results")]
        except TrecFormatError:
            raise
        except ValueError as error:  # a ranking the scorer cannot order
            raise ValidationError({"results": [str(error)]}) from None


class RunListCreateApi(GenericAPIView, RunWriting):  # type: ignore[type-arg]
    roles = {"GET": ANY_ROLE, "POST": RUN_WRITERS}
    sees = "runs"
    serializer_class = RunSerializer
    filterset_class = RunFilter
    filter_backends = [django_filters.rest_framework.DjangoFilterBackend]

    def get_queryset(self) -> QuerySet[Run]:
        if _fake(self):
            return Run.objects.none()
        return Run.objects.filter(collection=self.collection).select_related("owner")

    @extend_schema(
        summary="The collection's runs",
        responses={200: RunSerializer(many=True), **_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(RunSerializer(page, many=True).data)

    @extend_schema(
        summary="Submit a run (organisers and system owners): TREC file or JSON results",
        description="multipart/form-data with `file` (a TREC run: `qid Q0 docno rank score "
        "tag`; named by `name` or the tag; with `split_tags=true` one run per tag, all listed "
        "in `runs`), or JSON `{name, description, results: [{qid, docno, score?}]}` "
        "(without scores the given order per query is the ranking). The caller becomes the "
        "run's owner. Scores are computed after the write commits.",
        request=RUN_REQUEST,
        responses={201: RunWriteSerializer, **_errors(400, 401, 403, 404, 413)},
    )
    def post(self, request: Request, slug: str) -> Response:
        written = _written(self.store(request, run_name=None, replace=False))
        return Response(RunWriteSerializer(written).data, status=status.HTTP_201_CREATED)


class RunDetailApi(RunWriting):
    roles = {"GET": ANY_ROLE, "PUT": RUN_WRITERS, "DELETE": RUN_WRITERS}
    sees = "runs"

    def _run(self, name: str) -> Run | None:
        return Run.objects.filter(collection=self.collection, name=name).first()

    def _check_owner(self, run: Run) -> None:
        if not self.may_change(run):
            raise PermissionDenied("System owners may change only their own runs.")

    @extend_schema(summary="One run", responses={200: RunSerializer, **_errors(401, 403, 404)})
    def get(self, request: Request, slug: str, name: str) -> Response:
        run = self._run(name)
        if run is None:
            raise NotFound("No such run.")
        return Response(RunSerializer(run).data)

    @extend_schema(
        summary="Replace a run's results, or create it (its organisers or owner)",
        description="Same bodies as POST .../runs/; the URL names the run.",
        request=RUN_REQUEST,
        responses={
            200: RunWriteSerializer,
            201: RunWriteSerializer,
            **_errors(400, 401, 403, 404, 413),
        },
    )
    def put(self, request: Request, slug: str, name: str) -> Response:
        existing = self._run(name)
        if existing is not None:
            self._check_owner(existing)
        written = _written(self.store(request, run_name=name, replace=True))
        return Response(
            RunWriteSerializer(written).data,
            status=status.HTTP_200_OK if existing else status.HTTP_201_CREATED,
        )

    @extend_schema(
        summary="Delete a run with its scores (its organisers or owner)",
        responses={204: None, **_errors(401, 403, 404)},
    )
    def delete(self, request: Request, slug: str, name: str) -> Response:
        run = self._run(name)
        if run is None:
            raise NotFound("No such run.")
        self._check_owner(run)
        services.run_delete(run=run, may_delete=self.may_change)
        return Response(status=status.HTTP_204_NO_CONTENT)
