"""REST API v1, one class per resource path: thin calls into services and selectors."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, BinaryIO, cast

import django_filters
from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations import selectors, services, snapshots
from annotations.api_errors import UploadTooLarge
from annotations.models import Collection, Document, Judgement, Membership, Query, Run
from annotations.parsers import SafeJSONParser
from annotations.permissions import (
    ANY_ROLE,
    ASSESSOR,
    ORGANISER,
    OWNER,
    CollectionRole,
    may_create_collections,
    may_replace_run,
)
from annotations.selectors import comparisons, leaderboards, scores_state, stored_scores
from annotations.serializers import (
    CollectionCreateSerializer,
    CollectionSerializer,
    CollectionUpdateSerializer,
    ComparisonSerializer,
    DocumentInputSerializer,
    DocumentSerializer,
    ErrorSerializer,
    ImportSummarySerializer,
    JudgementInputSerializer,
    JudgementSerializer,
    LeaderboardSerializer,
    QueryInputSerializer,
    QuerySerializer,
    RunJsonSerializer,
    RunScoresSerializer,
    RunSerializer,
    RunUploadSerializer,
    RunWriteSerializer,
)
from annotations.trec import TrecFormatError

STAFF_ROLES = frozenset({ORGANISER})
TEAM_ROLES = frozenset({ORGANISER, ASSESSOR})
RUN_WRITERS = frozenset({ORGANISER, OWNER})


def _errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: OpenApiResponse(ErrorSerializer, description="Error") for code in codes}


K_PARAMETER = OpenApiParameter(
    "k", int, description="Cutoff; one of the collection's cutoffs (default 10 or the middle)."
)


def _cutoff(collection: Collection, request: Request) -> int:
    raw = request.query_params.get("k")
    if raw is not None and not (raw.isdigit() and int(raw) in collection.sorted_cutoffs):
        raise ValidationError({"k": [f"k must be one of {collection.sorted_cutoffs}."]})
    return selectors.cutoff_from(collection, raw)


class ApiView(APIView):
    """Base of every API view (errors get one body through settings' EXCEPTION_HANDLER)."""


class CollectionApiView(ApiView):
    """An API view under /collections/{slug}/, guarded by the caller's role in it."""

    permission_classes = [CollectionRole]
    roles: dict[str, frozenset[str]] = {}
    public_read = False
    collection: Collection
    roles_held: frozenset[str]


class CollectionListApiView(GenericAPIView, CollectionApiView):  # type: ignore[type-arg]
    """A paginated, filtered list under a collection."""

    filter_backends = [django_filters.rest_framework.DjangoFilterBackend]

    def list_response(self, queryset: QuerySet[Any]) -> Response:
        page = self.paginate_queryset(self.filter_queryset(queryset))
        serializer = self.get_serializer(page, many=True)
        return self.get_paginated_response(serializer.data)


def _user(request: Request) -> User:
    """The caller; the permission classes have already refused anonymous writers."""
    return cast(User, request.user)


def _fake(view: Any) -> bool:
    return getattr(view, "swagger_fake_view", False)


# --- collections --------------------------------------------------------------------------


class CollectionListCreateApi(GenericAPIView, ApiView):  # type: ignore[type-arg]
    serializer_class = CollectionSerializer

    def get_queryset(self) -> QuerySet[Collection]:
        if _fake(self):
            return Collection.objects.none()
        return selectors.collections_visible(user=self.request.user).prefetch_related("grades")

    def _roles(self) -> dict[int, frozenset[str]]:
        user = self.request.user
        if user.is_staff:
            return {c.id: ANY_ROLE for c in Collection.objects.only("id")}
        roles: dict[int, set[str]] = {}
        for collection_id, role in Membership.objects.filter(user=_user(self.request)).values_list(
            "collection_id", "role"
        ):
            roles.setdefault(collection_id, set()).add(role)
        return {key: frozenset(value) for key, value in roles.items()}

    @extend_schema(
        summary="Collections the caller may open",
        responses={200: CollectionSerializer(many=True), **_errors(401)},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        serializer = CollectionSerializer(page, many=True, context={"roles": self._roles()})
        return self.get_paginated_response(serializer.data)

    @extend_schema(
        summary="Create a collection (staff, or organisers of another collection)",
        request=CollectionCreateSerializer,
        responses={201: CollectionSerializer, **_errors(400, 401, 403)},
    )
    def post(self, request: Request) -> Response:
        if not may_create_collections(request.user):
            raise PermissionDenied("Only staff and organisers may create collections.")
        serializer = CollectionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        grades = data.pop("grades", None)
        collection = services.collection_create_with_organiser(
            organiser=_user(request),
            grades=None
            if grades is None
            else [(g["value"], g["label"], g["definition"]) for g in grades],
            **data,
        )
        context = {"roles": {collection.id: ANY_ROLE if request.user.is_staff else {ORGANISER}}}
        return Response(
            CollectionSerializer(collection, context=context).data, status=status.HTTP_201_CREATED
        )


class CollectionDetailApi(CollectionApiView):
    roles = {"GET": ANY_ROLE, "PATCH": STAFF_ROLES}

    def _body(self) -> dict[str, Any]:
        context = {"roles": {self.collection.id: self.roles_held}}
        return CollectionSerializer(self.collection, context=context).data

    @extend_schema(
        summary="A collection with its settings and grade scale",
        responses={200: CollectionSerializer, **_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(self._body())

    @extend_schema(
        summary="Change a collection's settings (organisers); scoring settings rescore",
        request=CollectionUpdateSerializer,
        responses={200: CollectionSerializer, **_errors(400, 401, 403, 404)},
    )
    def patch(self, request: Request, slug: str) -> Response:
        serializer = CollectionUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        public = changes.pop("public_leaderboard", None)
        if changes:
            services.collection_update(collection=self.collection, **changes)
        if public is not None:
            services.collection_publish(collection=self.collection, public=public)
        return Response(self._body())


# --- queries and documents ----------------------------------------------------------------


class QueryFilter(django_filters.FilterSet):
    qid = django_filters.CharFilter()
    title = django_filters.CharFilter(lookup_expr="icontains")
    judged = django_filters.BooleanFilter(
        method="filter_judged", label="Only queries with (or without) judgements"
    )

    class Meta:
        model = Query
        fields = ["qid", "title", "judged"]

    def filter_judged(self, queryset: QuerySet[Query], name: str, value: bool) -> QuerySet[Query]:
        return queryset.filter(judgements__isnull=not value).distinct()


class QueryListCreateApi(CollectionListApiView):
    roles = {"GET": ANY_ROLE, "POST": STAFF_ROLES}
    serializer_class = QuerySerializer
    filterset_class = QueryFilter

    def get_queryset(self) -> QuerySet[Query]:
        if _fake(self):
            return Query.objects.none()
        return Query.objects.filter(collection=self.collection).order_by("qid")

    @extend_schema(
        summary="The collection's queries",
        responses={200: QuerySerializer(many=True), **_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Create or update queries by qid (organisers; all or nothing)",
        request=QueryInputSerializer(many=True),
        responses={201: ImportSummarySerializer, **_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        serializer = QueryInputSerializer(data=request.data, many=True)
        serializer.is_valid(raise_exception=True)
        summary = services.queries_store(
            collection=self.collection,
            queries=[services.QueryFields(**item) for item in serializer.validated_data],
        )
        return Response(ImportSummarySerializer(summary).data, status=status.HTTP_201_CREATED)


class DocumentFilter(django_filters.FilterSet):
    docno = django_filters.CharFilter()
    title = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Document
        fields = ["docno", "title"]


class DocumentListCreateApi(CollectionListApiView):
    roles = {"GET": ANY_ROLE, "POST": STAFF_ROLES}
    serializer_class = DocumentSerializer
    filterset_class = DocumentFilter

    def get_queryset(self) -> QuerySet[Document]:
        if _fake(self):
            return Document.objects.none()
        return Document.objects.filter(collection=self.collection).order_by("docno")

    @extend_schema(
        summary="The collection's documents",
        responses={200: DocumentSerializer(many=True), **_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Create or update documents by docno (organisers; all or nothing)",
        request=DocumentInputSerializer(many=True),
        responses={201: ImportSummarySerializer, **_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        serializer = DocumentInputSerializer(data=request.data, many=True)
        serializer.is_valid(raise_exception=True)
        summary = services.documents_store(
            collection=self.collection,
            documents=[services.DocumentFields(**item) for item in serializer.validated_data],
        )
        return Response(ImportSummarySerializer(summary).data, status=status.HTTP_201_CREATED)


# --- runs ---------------------------------------------------------------------------------


class RunFilter(django_filters.FilterSet):
    name = django_filters.CharFilter()
    owner = django_filters.CharFilter(field_name="owner__username")
    pending = django_filters.BooleanFilter(field_name="scored_at", lookup_expr="isnull")

    class Meta:
        model = Run
        fields = ["name", "owner", "pending"]


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

    def store(self, request: Request, *, run_name: str | None, replace: bool) -> tuple[Run, int]:
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
                return services.run_import(
                    collection=self.collection,
                    source=cast(BinaryIO, upload),
                    name=upload.name,
                    run_name=run_name or upload_form.validated_data.get("name"),
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
            return services.run_store(
                collection=self.collection,
                run_name=name,
                results=form.grouped(),
                owner=owner,
                description=form.validated_data["description"],
                replace=replace,
                may_replace=self.may_change,
            )
        except TrecFormatError:
            raise
        except ValueError as error:  # a ranking the scorer cannot order
            raise ValidationError({"results": [str(error)]}) from None


class RunListCreateApi(GenericAPIView, RunWriting):  # type: ignore[type-arg]
    roles = {"GET": ANY_ROLE, "POST": RUN_WRITERS}
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
        "tag`; named by `name` or the tag), or JSON `{name, description, results: [{qid, "
        "docno, score?}]}` (without scores the given order per query is the ranking). The "
        "caller becomes the run's owner. Scores are computed after the write commits.",
        request=RUN_REQUEST,
        responses={201: RunWriteSerializer, **_errors(400, 401, 403, 404, 413)},
    )
    def post(self, request: Request, slug: str) -> Response:
        run, count = self.store(request, run_name=None, replace=False)
        run.refresh_from_db()
        return Response(
            RunWriteSerializer({"run": run, "results": count}).data, status=status.HTTP_201_CREATED
        )


class RunDetailApi(RunWriting):
    roles = {"GET": ANY_ROLE, "PUT": RUN_WRITERS, "DELETE": RUN_WRITERS}

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
        run, count = self.store(request, run_name=name, replace=True)
        run.refresh_from_db()
        return Response(
            RunWriteSerializer({"run": run, "results": count}).data,
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


# --- judgements ---------------------------------------------------------------------------


class JudgementFilter(django_filters.FilterSet):
    qid = django_filters.CharFilter(field_name="query__qid")
    docno = django_filters.CharFilter(field_name="document__docno")
    assessor = django_filters.CharFilter(field_name="assessor__username")
    grade = django_filters.NumberFilter()
    grade_min = django_filters.NumberFilter(field_name="grade", lookup_expr="gte")
    grade_max = django_filters.NumberFilter(field_name="grade", lookup_expr="lte")
    updated_after = django_filters.IsoDateTimeFilter(method="filter_updated_after")

    class Meta:
        model = Judgement
        fields = ["qid", "docno", "assessor", "grade", "grade_min", "grade_max", "updated_after"]

    def filter_updated_after(
        self, queryset: QuerySet[Judgement], name: str, value: datetime
    ) -> QuerySet[Judgement]:
        # In UTC: PostgreSQL refuses UTC offsets of 16 hours and more, ISO 8601 does not.
        return queryset.filter(updated__gte=value.astimezone(UTC))


def _pair(collection: Collection, qid: str, docno: str) -> tuple[Query, Document]:
    query = Query.objects.filter(collection=collection, qid=qid).first()
    document = Document.objects.filter(collection=collection, docno=docno).first()
    problems: dict[str, list[str]] = {}
    if query is None:
        problems["qid"] = [f"No query {qid!r} in {collection.slug}."]
    if document is None:
        problems["docno"] = [f"No document {docno!r} in {collection.slug}."]
    if problems:
        raise ValidationError(problems)
    return cast(Query, query), cast(Document, document)


class JudgementListCreateApi(CollectionListApiView):
    roles = {"GET": TEAM_ROLES, "POST": TEAM_ROLES}
    serializer_class = JudgementSerializer
    filterset_class = JudgementFilter

    def get_queryset(self) -> QuerySet[Judgement]:
        if _fake(self):
            return Judgement.objects.none()
        judgements = Judgement.objects.filter(query__collection=self.collection).select_related(
            "query", "document", "assessor"
        )
        if ORGANISER not in self.roles_held:  # assessors see their own judgements only
            judgements = judgements.filter(assessor_id=self.request.user.pk)
        return judgements.order_by("query__qid", "document__docno", "assessor__username")

    @extend_schema(
        summary="Judgements: all for organisers, the caller's own for assessors",
        responses={200: JudgementSerializer(many=True), **_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Record the caller's judgement of (qid, docno): create or change it",
        description="Recorded with source=api and a history row; the query's scores are "
        "recomputed after the write (inline mode: before this response returns). As the "
        "import commands do, an organiser's judgement of a qid or docno the collection does "
        "not know yet creates the query or document (ids only), so a qrels file posted line "
        "by line gives the same IDCG as its import; assessors judge known pairs only.",
        request=JudgementInputSerializer,
        responses={
            200: JudgementSerializer,
            201: JudgementSerializer,
            **_errors(400, 401, 403, 404),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        form = JudgementInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        # One transaction: a judgement refused (a grade off the scale) creates no id either.
        with transaction.atomic():
            if ORGANISER in self.roles_held:
                services.queries_ensure(collection=self.collection, qids=[data["qid"]])
                services.documents_ensure(collection=self.collection, docnos=[data["docno"]])
            query, document = _pair(self.collection, data["qid"], data["docno"])
            judgement, created = services.judgement_upsert(
                query=query,
                document=document,
                assessor=_user(request),
                grade=data["grade"],
                note=data["note"],
                source="api",
            )
        judgement.refresh_from_db()
        return Response(
            JudgementSerializer(judgement).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


ASSESSOR_PARAMETER = OpenApiParameter(
    "assessor", str, description="Organisers: another assessor's judgement (username)."
)


class JudgementDetailApi(CollectionApiView):
    roles = {"GET": TEAM_ROLES, "DELETE": TEAM_ROLES}

    def _judgement(self, request: Request, qid: str, docno: str) -> Judgement:
        username = request.query_params.get("assessor")
        if username and username != request.user.get_username():
            if ORGANISER not in self.roles_held:
                raise PermissionDenied("Only organisers may address another assessor's work.")
            assessor_filter: dict[str, Any] = {"assessor__username": username}
        else:
            assessor_filter = {"assessor_id": request.user.pk}
        judgement = (
            Judgement.objects.filter(
                query__collection=self.collection,
                query__qid=qid,
                document__docno=docno,
                **assessor_filter,
            )
            .select_related("query", "document", "assessor")
            .first()
        )
        if judgement is None:
            raise NotFound("No such judgement.")
        return judgement

    @extend_schema(
        summary="The caller's judgement of (qid, docno)",
        parameters=[ASSESSOR_PARAMETER],
        responses={200: JudgementSerializer, **_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, qid: str, docno: str) -> Response:
        return Response(JudgementSerializer(self._judgement(request, qid, docno)).data)

    @extend_schema(
        summary="Delete the caller's judgement of (qid, docno), keeping its history",
        parameters=[ASSESSOR_PARAMETER],
        responses={204: None, **_errors(401, 403, 404)},
    )
    def delete(self, request: Request, slug: str, qid: str, docno: str) -> Response:
        judgement = self._judgement(request, qid, docno)
        services.judgement_delete(judgement=judgement, source="api", changed_by=_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class QrelsApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="The effective judgements as TREC qrels (organisers)",
        responses={
            (200, "text/plain"): OpenApiResponse(
                OpenApiTypes.STR, description="`qid 0 docno grade` lines"
            ),
            **_errors(401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        # Streamed as it is read (server-side cursor): constant memory at any size.
        response = StreamingHttpResponse(
            selectors.qrels_lines(collection=self.collection),
            content_type="text/plain; charset=utf-8",
        )
        response["Content-Disposition"] = f'inline; filename="{self.collection.slug}.qrels"'
        return response


# --- scores -------------------------------------------------------------------------------


def _state(state: scores_state.ScoresState) -> dict[str, Any]:
    return {
        "pending": state.pending,
        "pending_queries": state.pending_queries,
        "pending_runs": state.pending_runs,
        "last_recomputed": state.last_recomputed,
        "stamp": state.stamp,
    }


def leaderboard_body(board: leaderboards.Leaderboard) -> dict[str, Any]:
    """The leaderboard as the API returns it (the pages' self-refresh reads it too)."""
    collection = board.collection
    return LeaderboardSerializer(
        {
            "collection": collection.slug,
            "k": board.k,
            "statistics_computed_at": board.computed_at,
            "statistics_stamp": board.computed_stamp,
            "stale": board.stale,
            "cutoffs": collection.sorted_cutoffs,
            "gain": collection.gain,
            "missing_queries": collection.missing_queries,
            **_state(board.state),
            "bootstrap": {
                "resamples": board.resamples,
                "seed": board.bootstrap_seed,
                "confidence": board.confidence,
            },
            "significance": {
                "test": "paired randomization (sign flip) over queries",
                "permutations": board.permutations,
                "seed": board.permutation_seed,
                "correction": "Holm across adjacent pairs",
                "alpha": board.alpha,
            },
            "runs": board.rows,
            "unscored": [run.name for run in board.unscored],
        }
    ).data


class LeaderboardApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True

    @extend_schema(
        summary="Leaderboard at k: means, bootstrap CIs, tiers, judged@k, bounds",
        parameters=[K_PARAMETER],
        responses={200: LeaderboardSerializer, **_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        k = _cutoff(self.collection, request)
        board = snapshots.leaderboard_read(collection=self.collection, k=k)
        # The body changes only with the stamps: serialised once per process and stamp.
        computed = board.computed_at.timestamp() if board.computed_at else 0.0
        key = "leaderboard-body:" + ":".join(
            map(str, (self.collection.id, k, board.state.stamp, board.computed_stamp, computed))
        )
        body = cache.get(key)
        if body is None:
            body = leaderboard_body(board)
            cache.set(key, body, timeout=600)
        return Response(body)


class RunScoresApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True

    @extend_schema(
        summary="A run's per-query scores at k (full float precision)",
        parameters=[K_PARAMETER],
        responses={200: RunScoresSerializer, **_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        k = _cutoff(self.collection, request)
        run = Run.objects.filter(collection=self.collection, name=name).first()
        if run is None:
            raise NotFound("No such run.")
        scores = stored_scores.run_scores(run=run, k=k)
        body = {
            "collection": self.collection.slug,
            "run": run.name,
            "k": k,
            "pending": scores.pending,
            "ndcg": scores.ndcg,
            "judged": scores.judged,
            "ndcg_condensed": scores.ndcg_condensed,
            "queries": scores.queries,
            "per_query": scores.per_query,
        }
        return Response(RunScoresSerializer(body).data)


class CompareApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True

    @extend_schema(
        summary="Compare two runs at k: per-query differences, p-value, wins/ties/losses",
        parameters=[
            OpenApiParameter("a", str, required=True, description="First run's name."),
            OpenApiParameter("b", str, required=True, description="Second run's name."),
            K_PARAMETER,
        ],
        responses={200: ComparisonSerializer, **_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        k = _cutoff(self.collection, request)
        runs: dict[str, Run] = {}
        problems: dict[str, list[str]] = {}
        for key in ("a", "b"):
            name = request.query_params.get(key, "")
            run = (
                Run.objects.filter(collection=self.collection, name=name).first() if name else None
            )
            if run is None:
                problems[key] = [
                    f"No run named {name!r}." if name else "This parameter is required."
                ]
            else:
                runs[key] = run
        if problems:
            raise ValidationError(problems)
        comparison = comparisons.runs_compare(a=runs["a"], b=runs["b"], k=k)
        body = {
            "collection": self.collection.slug,
            "k": k,
            "a": comparison.a.name,
            "b": comparison.b.name,
            "pending": comparison.pending,
            "queries": len(comparison.rows),
            "mean_a": comparison.mean_a,
            "mean_b": comparison.mean_b,
            "mean_difference": comparison.mean_difference,
            "p_value": comparison.p_value,
            "permutations": comparison.permutations,
            "seed": comparison.seed,
            "wins": comparison.wins,
            "ties": comparison.ties,
            "losses": comparison.losses,
            "per_query": comparison.rows,
        }
        return Response(ComparisonSerializer(body).data)
