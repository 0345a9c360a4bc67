"""Search systems (organisers): describe, change, try, fetch runs, follow, cancel and retry
fetches, and read the queries a fetch got no answer for."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import (
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
from annotations.models import FetchFailure, ImportJob, QrelsVersion, Run, SearchSystem
from annotations.selectors.leaderboards import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from annotations.selectors.system_history import (
    main_cutoff,
    previous_run,
    runs_changed,
    system_history,
)
from annotations.serializers.fields import ID_SCHEMA
from annotations.serializers.systems import (
    FetchCreateSerializer,
    FetchFailureSerializer,
    FetchSerializer,
    SearchSystemSerializer,
    SearchSystemUpdateSerializer,
    SearchSystemWriteSerializer,
    SystemChangeSerializer,
    SystemHistorySerializer,
    SystemTriedSerializer,
)
from annotations.services.job_recovery import import_job_retry
from annotations.services.system_fetch import system_fetch_cancel, system_fetch_start
from annotations.services.systems import system_create, system_try, system_update


class _SystemApiView(CollectionApiView):
    roles = {"GET": STAFF_ROLES, "POST": STAFF_ROLES, "PATCH": STAFF_ROLES}

    def system(self, name: str) -> SearchSystem:
        found = SearchSystem.objects.filter(collection=self.collection, name=name).first()
        if found is None:
            raise NotFound("No such search system.")
        return found

    def fetch(self, name: str, job_id: int) -> ImportJob:
        found = (
            ImportJob.objects.filter(system=self.system(name), id=job_id)
            .select_related("collection")
            .first()
        )
        if found is None:
            raise NotFound("No such fetch.")
        return found


def _values(data: dict[str, Any]) -> dict[str, Any]:
    values = dict(data)
    if "headers" in values:
        values["headers"] = [dict(header) for header in values["headers"]]
    return values


def _accepted(job: ImportJob, request: Request, slug: str, name: str) -> Response:
    """202 with the queued fetch, and where to follow it."""
    response = Response(FetchSerializer(job).data, status=202)
    response["Location"] = request.build_absolute_uri(
        reverse("api:system-fetch", kwargs={"slug": slug, "name": name, "job_id": job.id})
    )
    return response


class SearchSystemListApi(PagedList, _SystemApiView):
    @extend_schema(
        summary="The collection's search systems",
        responses={200: SearchSystemSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        systems = SearchSystem.objects.filter(collection=self.collection).order_by("name")
        return self.pages(request, systems, lambda system: system, SearchSystemSerializer)

    @extend_schema(
        summary="Describe a search system: its endpoint, request and how its answer is read "
        "(secrets stay in the server's NDCG_SEARCH_KEY_* variables)",
        request=SearchSystemWriteSerializer,
        responses={201: SearchSystemSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, slug: str) -> Response:
        given = SearchSystemWriteSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        values = _values(given.validated_data)
        system = system_create(
            collection=self.collection,
            name=values.pop("name"),
            created_by=calling_user(request),
            **values,
        )
        return created(
            SearchSystemSerializer(system).data, request, "system",
            slug=self.collection.slug, name=system.name,
        )  # fmt: skip


class SearchSystemDetailApi(_SystemApiView):
    @extend_schema(
        summary="One search system",
        responses={200: SearchSystemSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        return Response(SearchSystemSerializer(self.system(name)).data)

    @extend_schema(
        summary="Change a search system's description",
        request=SearchSystemUpdateSerializer,
        responses={200: SearchSystemSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def patch(self, request: Request, slug: str, name: str) -> Response:
        given = SearchSystemUpdateSerializer(data=request.data, partial=True)
        given.is_valid(raise_exception=True)
        system = system_update(system=self.system(name), **_values(given.validated_data))
        return Response(SearchSystemSerializer(system).data)


class SearchSystemTryApi(_SystemApiView):
    @extend_schema(
        summary="Ask the system the collection's first 3 queries and show what would be "
        "stored (parsed hits, never the raw answer); nothing is stored",
        request=None,
        responses={200: SystemTriedSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, name: str) -> Response:
        tried = system_try(system=self.system(name))
        return Response(SystemTriedSerializer(tried, many=True).data)


class SystemFetchListApi(PagedList, _SystemApiView):
    @extend_schema(
        summary="The system's fetches, newest first: state, progress in queries, summary",
        responses={200: FetchSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        jobs = (
            ImportJob.objects.filter(system=self.system(name))
            .select_related("collection")
            .order_by("-created", "-id")
        )
        return self.pages(request, jobs, lambda job: job, FetchSerializer)

    @extend_schema(
        summary="Fetch a run from the system in the background: every query of the "
        "collection asked, the answers stored as a new run (202 with the fetch)",
        request=FetchCreateSerializer,
        responses={202: FetchSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, slug: str, name: str) -> Response:
        given = FetchCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        job = system_fetch_start(
            system=self.system(name),
            label=given.validated_data["run"],
            created_by=calling_user(request),
        )
        job.refresh_from_db()
        return _accepted(job, request, slug, name)


class SystemFetchDetailApi(_SystemApiView):
    @extend_schema(
        summary="One fetch: state, progress in queries asked, the run it stored or why not",
        responses={200: FetchSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str, job_id: int) -> Response:
        return Response(FetchSerializer(self.fetch(name, job_id)).data)


class SystemFetchFailureListApi(PagedList, _SystemApiView):
    @extend_schema(
        summary="The queries a fetch got no answer for, with the HTTP status and why",
        responses={200: FetchFailureSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str, job_id: int) -> Response:
        failures = FetchFailure.objects.filter(job=self.fetch(name, job_id)).order_by("qid")
        return self.pages(request, failures, lambda failure: failure, FetchFailureSerializer)


class SystemFetchCancelApi(_SystemApiView):
    @extend_schema(
        summary="Cancel a fetch (it stops after the queries in flight; nothing is stored)",
        request=None,
        responses={200: FetchSerializer, **documented_errors(401, 403, 404)},
    )
    def post(self, request: Request, slug: str, name: str, job_id: int) -> Response:
        job = self.fetch(name, job_id)
        system_fetch_cancel(job=job)
        job.refresh_from_db()
        return Response(FetchSerializer(job).data)


class SystemFetchRetryApi(_SystemApiView):
    @extend_schema(
        summary="Fetch again a fetch that failed or was cancelled (202 with it, queued)",
        request=None,
        responses={202: FetchSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, name: str, job_id: int) -> Response:
        job = import_job_retry(job=self.fetch(name, job_id), by=calling_user(request))
        return _accepted(job, request, slug, name)


def _main_or_asked(view: CollectionApiView, request: Request) -> int:
    """k from `k=`, the collection's main cutoff without one."""
    if request.query_params.get("k") is None:
        return main_cutoff(view.collection)
    return cutoff_of(view.collection, request)


MAIN_K_PARAMETER = OpenApiParameter(
    "k",
    {"type": "integer", "minimum": 1, "maximum": 1000},
    description="The cutoff of nDCG@k: one of the collection's `cutoffs` (any other value is "
    "a 400). Default: the collection's main one, its first (smallest) cutoff.",
)


VERSION_PARAMETER = OpenApiParameter(
    "version",
    {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$", "maxLength": 100},
    description="A qrels version of the collection: each run's mean nDCG@k and CI on its "
    "judgements too (`version_mean`, ...). Versions are scored by nDCG@k: not with `measure`.",
)


class SystemHistoryApi(_SystemApiView):
    @extend_schema(
        summary="The system's runs in fetch order with the mean nDCG@k (or a kept measure) "
        "of each and its bootstrap CI: the system's score over time, also on a qrels version",
        parameters=[MAIN_K_PARAMETER, MEASURE_PARAMETER, VERSION_PARAMETER],
        responses={200: SystemHistorySerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        system = self.system(name)
        k = _main_or_asked(self, request)
        measure = measure_of(self.collection, request)
        version = self._version(request)
        if version is not None and measure is not None:
            raise ValidationError(
                {"version": ["A qrels version is scored by nDCG@k: ask without `measure`."]}
            )
        history = system_history(system=system, k=k, measure=measure, version=version)
        body = {
            "system": system, "measure": history.measure, "k": history.k,
            "confidence": history.confidence, "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED, "pending": history.pending,
            "main_k": main_cutoff(self.collection), "version": history.version,
            "points": history.points,
        }  # fmt: skip
        return Response(SystemHistorySerializer(body).data)

    def _version(self, request: Request) -> QrelsVersion | None:
        name = request.query_params.get("version")
        if not name:
            return None
        found = QrelsVersion.objects.filter(collection=self.collection, name=name).first()
        if found is None:
            names = QrelsVersion.objects.filter(collection=self.collection).values_list(
                "name", flat=True
            )
            known = ", ".join(names) or "none yet"
            raise ValidationError({"version": [f"No qrels version {name!r} (tagged: {known})."]})
        return found


class SystemChangesApi(_SystemApiView):
    @extend_schema(
        summary="What changed from one run of the system to another on nDCG@k or a kept "
        "measure: the paired test, the queries that moved most, the documents that entered or "
        "left the top k",
        parameters=[
            OpenApiParameter(
                "run", ID_SCHEMA, description="A run of the system (default: its latest)."
            ),
            OpenApiParameter(
                "previous",
                ID_SCHEMA,
                description="The run to compare with (default: the system's run before `run`).",
            ),
            MAIN_K_PARAMETER,
            MEASURE_PARAMETER,
        ],
        responses={200: SystemChangeSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        system = self.system(name)
        k = _main_or_asked(self, request)
        measure = measure_of(self.collection, request)
        new = self._run(system, "run") or (
            Run.objects.filter(system=system).order_by("-created", "-id").first()
        )
        if new is None:
            raise NotFound("No run fetched from this system yet.")
        old = self._run(system, "previous") or previous_run(new)
        if old is None or old.id == new.id:
            raise ValidationError({"previous": ["The run has no earlier run to compare with."]})
        change = runs_changed(old=old, new=new, k=k, measure=measure)
        return Response(SystemChangeSerializer(change).data)

    def _run(self, system: SearchSystem, key: str) -> Run | None:
        name = self.request.query_params.get(key)
        if not name:
            return None
        found = (
            Run.objects.filter(system=system, name=name).select_related("collection", "system")
        ).first()
        if found is None:
            raise NotFound(f"No run named {name!r} of this system.")
        return found
