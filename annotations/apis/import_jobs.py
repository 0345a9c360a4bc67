"""Import jobs through the API: create one by upload or from an ir_datasets id (202 with the
job's URL), read its state and progress, list a collection's jobs; the import page's
services, checks and messages."""

from __future__ import annotations

from typing import Any

import django_filters
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import services
from annotations.api_errors import NotInstalled
from annotations.apis._base import (
    RUN_WRITERS,
    STAFF_ROLES,
    CollectionApiView,
    CollectionListApiView,
    StrictFilterSet,
    calling_user,
    checked_upload,
    documented_errors,
    is_schema_view,
    refuse_large_body,
)
from annotations.formats import ir_records
from annotations.models import Collection, ImportJob
from annotations.permissions import ORGANISER
from annotations.selectors.jobs import import_job_state, import_job_with_progress
from annotations.serializers import (
    ImportJobSerializer,
    ImportJobUploadSerializer,
    IrDatasetImportSerializer,
)
from annotations.services.job_queue import import_jobs_start
from annotations.services.jobs import import_job_create, upload_text_problem
from annotations.services.standard_collections import ir_dataset_job_start

LOCATION = OpenApiParameter(
    "Location",
    str,
    location=OpenApiParameter.HEADER,
    response=[202],
    description="The import job's URL: GET it for its state and progress.",
)
# A file over this many MB sent to a synchronous import endpoint becomes an import job: its
# import could otherwise run near the server's request timeout (gunicorn's), and a job
# reports its progress and survives a dropped connection.
JOB_MB = 10
LARGE_AS_JOB = (
    f" A file over {JOB_MB} MB is not imported in the request: "
    "the answer is a 202 with its import job (as POST import-jobs/) and its URL in `Location`."
)
ACCEPTED = OpenApiResponse(
    ImportJobSerializer,
    description="Accepted: the file is stored and its import job queued; the body is the job "
    "and `Location` its URL.",
)


def job_url(request: Request, job: ImportJob) -> str:
    path = reverse("api:import-job", kwargs={"slug": job.collection.slug, "job_id": job.id})
    return request.build_absolute_uri(path)


def job_body(request: Request, job: ImportJob) -> dict[str, Any]:
    return {**import_job_state(import_job_with_progress(job)), "url": job_url(request, job)}


def job_accepted(request: Request, job: ImportJob) -> Response:
    """The 202 of an upload taken as a job: the job, and its URL in `Location`."""
    job.refresh_from_db()
    url = job_url(request, job)
    return Response(job_body(request, job), status=202, headers={"Location": url})


def upload_refused(upload: UploadedFile) -> None:
    """The page's refusals at the door: an empty file, or one that is not text (400)."""
    problem = upload_text_problem(upload)
    if problem is not None:
        raise ValidationError({"file": [f"{upload.name}: {problem}; nothing was imported"]})


def runs_in_a_job(upload: UploadedFile) -> bool:
    """Whether a synchronous import endpoint takes this upload as a job instead (a file over
    JOB_MB), so that no request runs near the server's timeout."""
    return (upload.size or 0) > JOB_MB * 1024 * 1024


def job_start(
    request: Request, collection: Collection, kind: str, upload: UploadedFile, **options: Any
) -> Response:
    """Store the upload as a job of this kind, start it, and answer 202."""
    upload_refused(upload)
    job = import_job_create(
        collection=collection, kind=kind, upload=upload, created_by=calling_user(request),
        **options,
    )  # fmt: skip
    import_jobs_start(jobs=[job])
    return job_accepted(request, job)


def may_import(roles: frozenset[str], kind: str) -> None:
    """Runs: organisers and system owners; topics, documents and qrels: organisers."""
    if kind != ImportJob.RUN and ORGANISER not in roles:
        raise PermissionDenied("Only organisers import topics, documents and qrels.")


class ImportJobFilter(StrictFilterSet):
    state = django_filters.ChoiceFilter(choices=ImportJob.STATE_CHOICES)
    kind = django_filters.ChoiceFilter(choices=ImportJob.KIND_CHOICES)

    class Meta:
        model = ImportJob
        fields = ["state", "kind"]


def visible_jobs(view: CollectionApiView) -> QuerySet[ImportJob]:
    """Organisers see every job of the collection, system owners their own uploads."""
    jobs = ImportJob.objects.filter(collection=view.collection).select_related(
        "collection", "created_by", "assessor"
    )
    if ORGANISER not in view.roles_held:
        jobs = jobs.filter(created_by=calling_user(view.request))
    return jobs.order_by("-created", "-id")


class ImportJobListCreateApi(CollectionListApiView):
    roles = {"GET": RUN_WRITERS, "POST": RUN_WRITERS}
    parser_classes = [MultiPartParser]
    serializer_class = ImportJobSerializer
    filterset_class = ImportJobFilter

    def get_queryset(self) -> QuerySet[ImportJob]:
        if is_schema_view(self):
            return ImportJob.objects.none()
        return visible_jobs(self)

    @extend_schema(
        summary="The collection's import jobs, newest first (organisers; owners their own)",
        responses={200: ImportJobSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([job_body(request, job) for job in page or []])

    @extend_schema(
        summary="Import a file as a job: 202 with its URL (organisers; owners: runs)",
        description="The import page's upload as one request: the file is checked at the door "
        "(empty, not text, too large: 400/413, nothing stored), stored and queued; its import "
        "runs on a worker with the "
        "parsers of the import commands, all or nothing. Poll `Location` for the progress in "
        "the units of the work (lines parsed, rows stored, queries scored); a bad line fails "
        "the job with `error` naming file, line and field.",
        request={"multipart/form-data": ImportJobUploadSerializer},
        responses={202: ACCEPTED, **documented_errors(400, 401, 403, 404, 413)},
        parameters=[LOCATION],
    )
    def post(self, request: Request, slug: str) -> Response:
        refuse_large_body(request)
        form = ImportJobUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        kind = data["kind"]
        may_import(self.roles_held, kind)
        upload = checked_upload(data["file"])
        options: dict[str, Any] = {}
        if kind == ImportJob.QRELS:
            options["assessor"] = services.qrels_assessor(
                collection=self.collection,
                username=data.get("assessor"),
                default=calling_user(request),
            )
        if kind == ImportJob.RUN:
            if data.get("name") and data["split_tags"]:
                problem = "a run name names no run: each tag names its run"
                raise ValidationError({"name": [problem]})
            options.update(
                run_name=data.get("name") or "", description=data["description"],
                replace=data["replace"], split_tags=data["split_tags"],
            )  # fmt: skip
        return job_start(request, self.collection, kind, upload, **options)


class ImportJobDetailApi(CollectionApiView):
    roles = {"GET": RUN_WRITERS}

    @extend_schema(
        summary="One import job: its state and progress (organisers; owners their own)",
        responses={200: ImportJobSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, job_id: int) -> Response:
        job = visible_jobs(self).filter(id=job_id).first()
        if job is None:
            raise NotFound("No such import job.")
        return Response(job_body(request, job))


class IrDatasetImportApi(CollectionApiView):
    roles = {"POST": STAFF_ROLES}

    @extend_schema(
        summary="Import a standard collection by its ir_datasets id as a job: 202 with its URL "
        "(organisers; as import_ir_datasets)",
        description="The import page's *Standard collection* form in one request, and the "
        "import_ir_datasets command's options: the dataset id and its parts are checked at "
        "once (an id ir_datasets does not know, or a part the dataset lacks: 400, nothing "
        "queued); the job reads the parts on a worker (downloading what is not under the "
        "worker's IR_DATASETS_HOME) through the parsers of the file imports, all or nothing. "
        "Poll `Location` for the records read; a dataset out of reach fails the job with "
        "`error` naming the dataset, the files missing and how to place a local copy "
        "(IR_DATASETS_HOME); Retry it once they are in place. Every part sends its "
        "`import.finished` event. A server installed without ir_datasets answers 400 "
        "(code `not_installed`) saying how to add it.",
        request=IrDatasetImportSerializer,
        responses={
            202: OpenApiResponse(
                ImportJobSerializer,
                description="Accepted: the job is queued; the body is the job and `Location` "
                "its URL.",
            ),
            **documented_errors(400, 401, 403, 404, 413),
        },
        parameters=[LOCATION],
    )
    def post(self, request: Request, slug: str) -> Response:
        if not ir_records.installed():
            raise NotInstalled(ir_records.NOT_INSTALLED)
        form = IrDatasetImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        assessor = None
        if data.get("assessor"):
            assessor = services.qrels_assessor(
                collection=self.collection, username=data["assessor"]
            )
        job = ir_dataset_job_start(
            collection=self.collection,
            dataset_id=data["dataset"],
            parts=data["parts"],
            assessor=assessor,
            run_name=data.get("run_name") or "",
            created_by=calling_user(request),
        )
        return job_accepted(request, job)
