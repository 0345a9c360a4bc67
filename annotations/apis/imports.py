"""File imports, as the import commands do them: topics, documents and qrels (organisers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO, cast

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from annotations import services
from annotations.apis._base import (
    STAFF_ROLES,
    CollectionApiView,
    calling_user,
    checked_upload,
    documented_errors,
    refuse_large_body,
)
from annotations.apis.import_jobs import ACCEPTED, LARGE_AS_JOB, LOCATION, job_start, runs_in_a_job
from annotations.models import ImportJob
from annotations.serializers import (
    DocumentsUploadSerializer,
    ImportSummarySerializer,
    QrelsUploadSerializer,
    TopicsUploadSerializer,
)

ALL_OR_NOTHING = (
    " All or nothing: a bad line is a 400 whose `location` names the file, line and field "
    "(`file:line: field: problem (nothing was imported)`, as the command prints it)."
)


class FileImportApi(CollectionApiView):
    """POST a multipart `file`; the import service reads it as the command reads a path."""

    roles = {"POST": STAFF_ROLES}
    parser_classes = [MultiPartParser]
    form_class: type[Serializer[Any]]

    def import_file(self, source: BinaryIO, name: str, form: dict[str, Any]) -> Any:
        raise NotImplementedError

    kind = ImportJob.TOPICS

    def job_options(self, form: dict[str, Any]) -> dict[str, Any]:
        return {}

    def post(self, request: Request, slug: str) -> Response:
        refuse_large_body(request)
        form = self.form_class(data=request.data)
        form.is_valid(raise_exception=True)
        upload = checked_upload(form.validated_data["file"])
        if runs_in_a_job(upload):
            options = self.job_options(form.validated_data)
            return job_start(request, self.collection, self.kind, upload, **options)
        name = upload.name or "upload"
        with transaction.atomic():
            summary = self.import_file(cast(BinaryIO, upload), name, form.validated_data)
            services.import_told(
                collection=self.collection, kind=self.kind, file_name=name, summary=summary
            )
        return Response(ImportSummarySerializer(summary).data)


def _import_schema(
    summary: str, description: str, form: type[Serializer[Any]]
) -> Callable[..., Any]:
    return extend_schema(
        summary=summary,
        description=description + ALL_OR_NOTHING + LARGE_AS_JOB,
        request={"multipart/form-data": form},
        parameters=[LOCATION],
        responses={
            200: ImportSummarySerializer,
            202: ACCEPTED,
            **documented_errors(400, 401, 403, 404, 413),
        },
    )


class TopicsImportApi(FileImportApi):
    form_class = TopicsUploadSerializer

    def import_file(self, source: BinaryIO, name: str, form: dict[str, Any]) -> Any:
        return services.topics_import(collection=self.collection, source=source, name=name)

    @_import_schema(
        "Import a topic file (organisers; as import_topics)",
        "Queries are created or updated by qid from TSV (`qid<TAB>title`), JSONL (`qid`, "
        "`title`, `description`, `narrative`) or TREC topics (`<top> <num> <title> <desc> "
        "<narr>`).",
        TopicsUploadSerializer,
    )
    def post(self, request: Request, slug: str) -> Response:
        return super().post(request, slug)


class DocumentsImportApi(FileImportApi):
    form_class = DocumentsUploadSerializer
    kind = ImportJob.DOCUMENTS

    def import_file(self, source: BinaryIO, name: str, form: dict[str, Any]) -> Any:
        return services.documents_import(collection=self.collection, source=source, name=name)

    @_import_schema(
        "Import a document file (organisers; as import_documents)",
        "Documents are created or updated by docno from JSONL (`docno`, `title`, `text`, "
        "`url`) or TSV (`docno<TAB>text` or `docno<TAB>title<TAB>text`).",
        DocumentsUploadSerializer,
    )
    def post(self, request: Request, slug: str) -> Response:
        return super().post(request, slug)


class QrelsImportApi(FileImportApi):
    form_class = QrelsUploadSerializer
    kind = ImportJob.QRELS

    def assessor(self, form: dict[str, Any]) -> Any:
        return services.qrels_assessor(
            collection=self.collection,
            username=form.get("assessor"),
            default=calling_user(self.request),
        )

    def job_options(self, form: dict[str, Any]) -> dict[str, Any]:
        return {"assessor": self.assessor(form)}

    def import_file(self, source: BinaryIO, name: str, form: dict[str, Any]) -> Any:
        caller = calling_user(self.request)
        with transaction.atomic():
            assessor = self.assessor(form)
            return services.judgements_import(
                collection=self.collection,
                source=source,
                name=name,
                assessor=assessor,
                changed_by=caller,
            )

    @_import_schema(
        "Import TREC qrels as one assessor's judgements (organisers; as import_qrels)",
        "`qid iter docno grade` lines, grades on the collection's scale. The judgements are "
        "the caller's, or those of `assessor`: an organiser or assessor of the collection, or "
        "the import account `trec` (any other name, an account or not, is the same 400); "
        "re-importing updates changed "
        "grades (one history row each, source `import`), adds new pairs and leaves the others "
        "alone. Queries and documents the file names that the collection lacks are created "
        "(ids only). The affected queries are rescored after the import commits.",
        QrelsUploadSerializer,
    )
    def post(self, request: Request, slug: str) -> Response:
        return super().post(request, slug)
