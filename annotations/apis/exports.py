"""Downloads as the exports page gives them: an assessor's own qrels, a run file, stored
scores in trec_eval's layout, CSV or JSON (never recomputed)."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request

from annotations.apis._base import (
    RUN_WRITERS,
    STAFF_ROLES,
    CollectionApiView,
    documented_errors,
)
from annotations.forms.exports import ScoresExportForm
from annotations.models import Judgement, Run
from annotations.selectors import exports
from annotations.serializers.fields import ID_SCHEMA

TEXT = "text/plain; charset=utf-8"


def _download(
    pieces: Iterable[str | bytes], filename: str, content_type: str = TEXT
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(pieces, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename) or ""
    return response


def _text(description: str) -> dict[tuple[int, str], OpenApiResponse]:
    return {(200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description=description)}


class AssessorQrelsApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="One assessor's own grades as TREC qrels (not the effective grades)",
        parameters=[
            OpenApiParameter(
                "assessor",
                {"type": "string", "minLength": 1, "maxLength": 150},
                required=True,
                description="The assessor's username.",
            )
        ],
        responses={**_text("`qid 0 docno grade` lines"), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        username = request.query_params.get("assessor", "")
        if not username:
            raise ValidationError({"assessor": ["Name the assessor (a username)."]})
        assessor = get_user_model().objects.filter(username=username).first()
        if (
            assessor is None
            or not Judgement.objects.filter(
                query__collection=self.collection, assessor=assessor
            ).exists()
        ):
            raise NotFound("No judgements of this assessor.")
        pieces = exports.assessor_qrels_text(collection=self.collection, assessor_id=assessor.pk)
        return _download(pieces, f"{self.collection.slug}-{assessor.get_username()}.qrels")


class RunDownloadApi(CollectionApiView):
    roles = {"GET": RUN_WRITERS}
    sees = "runs"

    @extend_schema(
        summary="A run as a TREC run file (organisers, and the run's owner)",
        responses={
            **_text("`qid Q0 docno rank score tag` lines, as export_run writes them"),
            **documented_errors(401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str, name: str) -> StreamingHttpResponse:
        run = Run.objects.filter(collection=self.collection, name=name).first()
        if run is None or not self.access.may_change_run(run):
            raise NotFound("No such run.")
        return _download(exports.run_text(run=run), f"{run.name}.run")


class _ScoresExport(CollectionApiView):
    """Stored scores in one layout, read by the exports page's form (`layout` is the path's)."""

    roles = {"GET": STAFF_ROLES}
    layout = ""

    def export(self, request: Request) -> StreamingHttpResponse:
        # As strict as the schema: a blank value is no value, a boolean is true or false.
        problems = {
            name: ["Give a value, or leave the parameter out."]
            for name, value in request.query_params.items()
            if value == ""
        }
        if request.query_params.get("per_query", "true") not in {"true", "false"}:
            problems["per_query"] = ["Give true or false."]
        if problems:
            raise ValidationError(problems)
        given = request.query_params.copy()
        given["format"] = self.layout
        form = ScoresExportForm(given, collection=self.collection)
        if not form.is_valid():
            raise ValidationError(
                {
                    field: [str(problem["message"]) for problem in problems]
                    for field, problems in form.errors.get_json_data().items()
                }
            )
        data = form.cleaned_data
        download = exports.scores_download(
            collection=self.collection,
            layout=self.layout,
            run=data["run"],
            ks=form.ks(),
            per_query=data["per_query"],
        )
        return _download(*download)


K_EXPORT = OpenApiParameter(
    "k",
    {"type": "integer", "minimum": 1, "maximum": 1000},
    description="One of the collection's cutoffs (another is a 400); empty: all of them.",
)
RUN_EXPORT = OpenApiParameter(
    "run", ID_SCHEMA, description="A run's name, as it is; empty: every run."
)
STORED = (
    "Stored scores only, at full precision, as `evaluate` prints them (never recomputed "
    "here: a pending query keeps its last scores; see `pending`)."
)


class ScoresTrecExportApi(_ScoresExport):
    layout = "trec"

    @extend_schema(
        summary="A run's stored scores in trec_eval's layout (organisers)",
        description=STORED,
        parameters=[
            OpenApiParameter("run", ID_SCHEMA, required=True, description="The run's name."),
            K_EXPORT,
            OpenApiParameter("per_query", bool, description="Per-query lines too (trec_eval -q)."),
        ],
        responses={
            **_text("`ndcg_cut_K<tab>qid<tab>value` lines"),
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        return self.export(request)


class ScoresCsvExportApi(_ScoresExport):
    layout = "csv"

    @extend_schema(
        summary="Stored scores as CSV: a row per run, query and k, then the means (organisers)",
        description=STORED,
        parameters=[RUN_EXPORT, K_EXPORT],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="Columns " + ", ".join(exports.SCORE_COLUMNS) + ".",
            ),
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        return self.export(request)


class ScoresJsonExportApi(_ScoresExport):
    layout = "json"

    @extend_schema(
        summary="Stored scores as JSON: every run, query and k, means, IDCGs (organisers)",
        description=STORED + " As `evaluate --format json`.",
        parameters=[RUN_EXPORT, K_EXPORT],
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="The scores document."),
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        return self.export(request)
