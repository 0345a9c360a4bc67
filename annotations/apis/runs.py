"""Runs: list, upload, read, replace, delete; ownership decided where the write happens."""

from __future__ import annotations

from typing import Any, BinaryIO, cast

import django_filters
from django.db import transaction
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import services
from annotations.apis._base import (
    RUN_WRITERS,
    STAFF_ROLES,
    CollectionApiView,
    StrictFilterSet,
    calling_user,
    checked_upload,
    created,
    documented_errors,
    is_schema_view,
    refuse_large_body,
)
from annotations.apis.import_jobs import ACCEPTED, LARGE_AS_JOB, LOCATION, job_start, runs_in_a_job
from annotations.formats.trec import TrecFormatError
from annotations.models import Collection, ImportJob, Run
from annotations.parsers import SafeJSONParser
from annotations.permissions import (
    ANY_ROLE,
    may_replace_run,
)
from annotations.selectors.run_archive import runs_zip
from annotations.serializers import (
    RunJsonSerializer,
    RunSerializer,
    RunUploadSerializer,
    RunWriteSerializer,
)

_PUT_NAMES_ONE = "A PUT names one run: POST the file to runs/ to split its tags."


class RunFilter(StrictFilterSet):
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


def _told(collection: Collection, file_name: str, imported: list[services.RunImported]) -> None:
    services.import_told(
        collection=collection,
        kind=ImportJob.RUN,
        file_name=file_name,
        summary="; ".join(str(item) for item in imported),
    )


class RunWriting(CollectionApiView):
    """Run creation and replacement: a TREC file (multipart) here, JSON results at
    runs/{name}/results/ (one content type per operation, as generated clients need)."""

    parser_classes = [MultiPartParser]

    def may_change(self, run: Run) -> bool:
        """Whether the caller may replace or delete this run (decided on the locked row)."""
        return may_replace_run(
            roles=self.roles_held, user=self.request.user, run_owner_id=run.owner_id
        )

    def upload_form(self, request: Request) -> dict[str, Any]:
        """The request's run file and options, checked (a 413 for a file over the limit)."""
        refuse_large_body(request)
        upload_form = RunUploadSerializer(data=request.data)
        upload_form.is_valid(raise_exception=True)
        checked_upload(upload_form.validated_data["file"])
        return dict(upload_form.validated_data)

    def as_job(
        self, request: Request, form: dict[str, Any], *, run_name: str | None, replace: bool
    ) -> Response | None:
        """A file over `import_jobs.JOB_MB` is taken as an import job (202), not imported
        in the request; None for a smaller one."""
        upload = form["file"]
        if not runs_in_a_job(upload):
            return None
        if form["split_tags"] and run_name is not None:
            raise ValidationError({"split_tags": [_PUT_NAMES_ONE]})
        return job_start(
            request, self.collection, ImportJob.RUN, upload,
            run_name=run_name or form.get("name") or "", description=form["description"],
            replace=replace, split_tags=form["split_tags"],
        )  # fmt: skip

    def store(
        self, request: Request, form: dict[str, Any], *, run_name: str | None, replace: bool
    ) -> list[services.RunImported]:
        """Store the request's run file (or its runs, one per tag, with `split_tags`)."""
        upload = form["file"]
        split_tags = form["split_tags"]
        if split_tags and run_name is not None:
            raise ValidationError({"split_tags": [_PUT_NAMES_ONE]})
        try:
            with transaction.atomic():
                imported = services.run_files_import(
                    collection=self.collection,
                    sources=[cast(BinaryIO, upload)],
                    names=[upload.name],
                    run_name=run_name or form.get("name"),
                    split_tags=split_tags,
                    owner=calling_user(request),
                    description=form["description"],
                    replace=replace,
                    may_replace=self.may_change,
                )
                _told(self.collection, upload.name or "upload", imported)
                return imported
        except TrecFormatError:
            raise
        except ValueError as error:  # a ranking the scorer cannot order
            raise ValidationError({"results": [str(error)]}) from None

    def store_json(self, request: Request, *, run_name: str) -> list[services.RunImported]:
        form = RunJsonSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            with transaction.atomic():
                run, count = services.run_store(
                    collection=self.collection,
                    run_name=run_name,
                    results=form.grouped(),
                    owner=calling_user(request),
                    description=form.validated_data["description"],
                    replace=True,
                    may_replace=self.may_change,
                )
                imported = [services.RunImported(run, count, "results")]
                _told(self.collection, "results", imported)
        except ValueError as error:  # a ranking the scorer cannot order
            raise ValidationError({"results": [str(error)]}) from None
        return imported


class RunListCreateApi(GenericAPIView, RunWriting):  # type: ignore[type-arg]
    roles = {"GET": ANY_ROLE, "POST": RUN_WRITERS}
    sees = "runs"
    serializer_class = RunSerializer
    filterset_class = RunFilter
    filter_backends = [django_filters.rest_framework.DjangoFilterBackend]

    def get_queryset(self) -> QuerySet[Run]:
        if is_schema_view(self):
            return Run.objects.none()
        return Run.objects.filter(collection=self.collection).select_related("owner")

    @extend_schema(
        summary="The collection's runs",
        responses={200: RunSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(RunSerializer(page, many=True).data)

    @extend_schema(
        summary="Submit a run as a TREC file (organisers and system owners)",
        description="`file`: a TREC run, `qid Q0 docno rank score tag`, named by `name` or "
        "by its tag; a run of that name must not exist yet (replace it with PUT). With "
        "`split_tags=true` a file of several tags becomes one run per tag, all listed in "
        "`runs`. All or nothing: a bad line is a 400 naming file, line and field. JSON results "
        "go to PUT runs/{name}/results/. The caller becomes the run's owner. Scores are "
        "computed after the write commits." + LARGE_AS_JOB,
        request={"multipart/form-data": RunUploadSerializer},
        responses={
            201: RunWriteSerializer,
            202: ACCEPTED,
            **documented_errors(400, 401, 403, 404, 413),
        },
        parameters=[LOCATION],
    )
    def post(self, request: Request, slug: str) -> Response:
        form = self.upload_form(request)
        job = self.as_job(request, form, run_name=None, replace=False)
        if job is not None:
            return job
        written = _written(self.store(request, form, run_name=None, replace=False))
        run = cast(Run, written["run"])
        return created(RunWriteSerializer(written).data, request, "run", slug=slug, name=run.name)


class RunDetailApi(RunWriting):
    roles = {"GET": ANY_ROLE, "PUT": RUN_WRITERS, "DELETE": RUN_WRITERS}
    sees = "runs"

    def _run(self, name: str) -> Run | None:
        return Run.objects.filter(collection=self.collection, name=name).first()

    def _check_owner(self, run: Run) -> None:
        if not self.may_change(run):
            raise PermissionDenied("System owners may change only their own runs.")

    @extend_schema(
        summary="One run", responses={200: RunSerializer, **documented_errors(401, 403, 404)}
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        run = self._run(name)
        if run is None:
            raise NotFound("No such run.")
        return Response(RunSerializer(run).data)

    @extend_schema(
        summary="Replace a run from a TREC file, or create it (organisers, or its owner)",
        description="The same body as POST runs/; the URL names the run (`name` is ignored)."
        + LARGE_AS_JOB,
        request={"multipart/form-data": RunUploadSerializer},
        parameters=[LOCATION],
        responses={
            200: RunWriteSerializer,
            201: RunWriteSerializer,
            202: ACCEPTED,
            **documented_errors(400, 401, 403, 404, 413),
        },
    )
    def put(self, request: Request, slug: str, name: str) -> Response:
        existing = self._run(name)
        if existing is not None:
            self._check_owner(existing)
        form = self.upload_form(request)
        job = self.as_job(request, form, run_name=name, replace=True)
        if job is not None:
            return job
        written = _written(self.store(request, form, run_name=name, replace=True))
        data = RunWriteSerializer(written).data
        if existing:
            return Response(data, status=status.HTTP_200_OK)
        return created(data, request, "run", slug=slug, name=name)

    @extend_schema(
        summary="Delete a run with its scores (its organisers or owner)",
        responses={204: None, **documented_errors(401, 403, 404)},
    )
    def delete(self, request: Request, slug: str, name: str) -> Response:
        run = self._run(name)
        if run is None:
            raise NotFound("No such run.")
        self._check_owner(run)
        services.run_delete(run=run, may_delete=self.may_change)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunResultsApi(RunWriting):
    roles = {"PUT": RUN_WRITERS}
    parser_classes = [SafeJSONParser]

    @extend_schema(
        summary="Replace a run's results from JSON, or create it (organisers, or its owner)",
        description="`{description, results: [{qid, docno, score?, rank?}]}`; without scores "
        "the given order per query is the ranking. The URL names the run; the caller becomes "
        "the owner of a run this creates. Scores are computed after the write commits.",
        request=RunJsonSerializer,
        responses={
            200: RunWriteSerializer,
            201: RunWriteSerializer,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def put(self, request: Request, slug: str, name: str) -> Response:
        existing = Run.objects.filter(collection=self.collection, name=name).first()
        if existing is not None and not self.may_change(existing):
            raise PermissionDenied("System owners may change only their own runs.")
        written = _written(self.store_json(request, run_name=name))
        data = RunWriteSerializer(written).data
        if existing:
            return Response(data, status=status.HTTP_200_OK)
        return created(data, request, "run", slug=slug, name=name)


class RunsZipApi(CollectionApiView):
    """Every run of the collection in one zip (organisers), streamed as it is written."""

    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="All runs as one zip of TREC run files (organisers)",
        description="One member per run, `<name>.run` (a `/`, `\\`, `~`, `:` or other character "
        "a file name cannot hold written `~XX`, its hex code), each as export_run writes it. "
        "Streamed: the archive is compressed as the runs are read.",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The zip archive (`<slug>-runs.zip`)"
            ),
            **documented_errors(401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        response = StreamingHttpResponse(
            runs_zip(collection=self.collection), content_type="application/octet-stream"
        )
        filename = f"{self.collection.slug}-runs.zip"
        response["Content-Disposition"] = content_disposition_header(True, filename) or ""
        return response
