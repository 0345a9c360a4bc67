"""Machine judges (organisers): add, change, try, run over a pool, follow and cancel runs."""

from __future__ import annotations

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import (
    STAFF_ROLES,
    CollectionApiView,
    CollectionListApiView,
    calling_user,
    created,
    documented_errors,
    is_schema_view,
)
from annotations.models import JudgeRun, JudgeRunFailure, MachineJudge, Pool
from annotations.selectors.judge_runs import run_failures
from annotations.serializers.judges import (
    JudgeRunCreateSerializer,
    JudgeRunFailureSerializer,
    JudgeRunRetrySerializer,
    JudgeRunSerializer,
    MachineJudgeSerializer,
    MachineJudgeUpdateSerializer,
    MachineJudgeWriteSerializer,
    TriedSerializer,
)
from annotations.services.judges import (
    judge_create,
    judge_run_cancel,
    judge_run_retry,
    judge_run_start,
    judge_try,
    judge_update,
)


class _JudgeApiView(CollectionApiView):
    roles = {"GET": STAFF_ROLES, "POST": STAFF_ROLES, "PATCH": STAFF_ROLES}

    def judge(self, name: str) -> MachineJudge:
        found = MachineJudge.objects.filter(collection=self.collection, name=name).first()
        if found is None:
            raise NotFound("No such machine judge.")
        return found

    def run(self, name: str, run_id: int) -> JudgeRun:
        found = (
            JudgeRun.objects.filter(judge=self.judge(name), id=run_id)
            .select_related("judge")
            .first()
        )
        if found is None:
            raise NotFound("No such run.")
        return found


def _accepted(run: JudgeRun, request: Request, slug: str, name: str) -> Response:
    """202 with the queued run, and where to follow it."""
    response = Response(JudgeRunSerializer(run).data, status=202)
    response["Location"] = request.build_absolute_uri(
        reverse("api:judge-run", kwargs={"slug": slug, "name": name, "run_id": run.id})
    )
    return response


class MachineJudgeListApi(CollectionListApiView, _JudgeApiView):
    serializer_class = MachineJudgeSerializer

    def get_queryset(self) -> QuerySet[MachineJudge]:
        if is_schema_view(self):
            return MachineJudge.objects.none()
        return MachineJudge.objects.filter(collection=self.collection).select_related("account")

    @extend_schema(
        summary="The collection's machine judges",
        responses={200: MachineJudgeSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Add a machine judge (an OpenAI-compatible endpoint; the key stays in the "
        "server's environment variable `api_key_env`)",
        request=MachineJudgeWriteSerializer,
        responses={201: MachineJudgeSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, slug: str) -> Response:
        given = MachineJudgeWriteSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        values = dict(given.validated_data)
        judge = judge_create(
            collection=self.collection,
            name=values.pop("name"),
            created_by=calling_user(request),
            **values,
        )
        return created(
            MachineJudgeSerializer(judge).data,
            request,
            "judge",
            slug=self.collection.slug,
            name=judge.name,
        )


class MachineJudgeDetailApi(_JudgeApiView):
    @extend_schema(
        summary="One machine judge",
        responses={200: MachineJudgeSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        return Response(MachineJudgeSerializer(self.judge(name)).data)

    @extend_schema(
        summary="Change a judge's settings (a changed prompt raises its version)",
        request=MachineJudgeUpdateSerializer,
        responses={200: MachineJudgeSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def patch(self, request: Request, slug: str, name: str) -> Response:
        given = MachineJudgeUpdateSerializer(data=request.data, partial=True)
        given.is_valid(raise_exception=True)
        judge = judge_update(judge=self.judge(name), **given.validated_data)
        return Response(MachineJudgeSerializer(judge).data)


class MachineJudgeTryApi(_JudgeApiView):
    @extend_schema(
        summary="Ask the judge about 5 pairs of the collection's first pool; nothing is stored",
        request=None,
        responses={200: TriedSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, name: str) -> Response:
        tried = judge_try(judge=self.judge(name))
        return Response(TriedSerializer(tried, many=True).data)


class JudgeRunListApi(CollectionListApiView, _JudgeApiView):
    serializer_class = JudgeRunSerializer

    def get_queryset(self) -> QuerySet[JudgeRun]:
        if is_schema_view(self):
            return JudgeRun.objects.none()
        return JudgeRun.objects.filter(judge=self.judge(self.kwargs["name"])).select_related(
            "judge"
        )

    @extend_schema(
        summary="The judge's runs, newest first: state, progress, tokens, cost",
        responses={200: JudgeRunSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Run the judge over a pool in the background (202 with the run)",
        request=JudgeRunCreateSerializer,
        responses={202: JudgeRunSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, slug: str, name: str) -> Response:
        given = JudgeRunCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        pool = Pool.objects.filter(
            collection=self.collection, id=given.validated_data["pool"]
        ).first()
        if pool is None:
            raise ValidationError({"pool": ["No such pool in this collection."]})
        run = judge_run_start(
            judge=self.judge(name),
            pool=pool,
            scope=given.validated_data["scope"],
            created_by=calling_user(request),
        )
        return _accepted(run, request, slug, name)


class JudgeRunDetailApi(_JudgeApiView):
    @extend_schema(
        summary="One run of the judge: state, progress, time left, pace, tokens, cost",
        responses={200: JudgeRunSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str, run_id: int) -> Response:
        return Response(JudgeRunSerializer(self.run(name, run_id)).data)


class JudgeRunFailureListApi(CollectionListApiView, _JudgeApiView):
    serializer_class = JudgeRunFailureSerializer

    def get_queryset(self) -> QuerySet[JudgeRunFailure]:
        if is_schema_view(self):
            return JudgeRunFailure.objects.none()
        return run_failures(self.run(self.kwargs["name"], self.kwargs["run_id"]))

    @extend_schema(
        summary="The pairs of a run that got no grade, with the kind of failure",
        responses={
            200: JudgeRunFailureSerializer(many=True),
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str, name: str, run_id: int) -> Response:
        return self.list_response(self.get_queryset())


class JudgeRunRetryApi(_JudgeApiView):
    @extend_schema(
        summary="Retry a run in a new one: its failed pairs, or the whole run when it failed "
        "or was cancelled (202 with the new run)",
        request=JudgeRunRetrySerializer,
        responses={202: JudgeRunSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, slug: str, name: str, run_id: int) -> Response:
        given = JudgeRunRetrySerializer(data=request.data)
        given.is_valid(raise_exception=True)
        run = judge_run_retry(
            run=self.run(name, run_id),
            failed_only=given.validated_data["pairs"] == "failed",
            created_by=calling_user(request),
        )
        return _accepted(run, request, slug, name)


class JudgeRunCancelApi(_JudgeApiView):
    @extend_schema(
        summary="Cancel a run (it stops after the pairs in flight; running again resumes)",
        request=None,
        responses={200: JudgeRunSerializer, **documented_errors(401, 403, 404)},
    )
    def post(self, request: Request, slug: str, name: str, run_id: int) -> Response:
        run = JudgeRun.objects.filter(judge=self.judge(name), id=run_id).first()
        if run is None:
            raise NotFound("No such run.")
        judge_run_cancel(run=run)
        run.refresh_from_db()
        return Response(JudgeRunSerializer(run).data)
