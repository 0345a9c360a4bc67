"""Pools and assignments (organisers): build by depth or by impact, extend, assign with
overlap, per-assessor progress, release or hand over what an assessor has left."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import services
from annotations.apis._base import (
    STAFF_ROLES,
    CollectionApiView,
    PagedList,
    calling_user,
    created,
    documented_errors,
)
from annotations.models import Assignment, Collection, Pool, Query, Run
from annotations.selectors import judging
from annotations.serializers.pools import (
    AssignedSerializer,
    AssignInputSerializer,
    PoolCreateSerializer,
    PoolExtendedSerializer,
    PoolExtendSerializer,
    PoolSerializer,
    PoolStatusSerializer,
    ReleasedSerializer,
    ReleaseInputSerializer,
)
from annotations.services.assignments import assignment_release


def runs_named(collection: Collection, names: list[str], field: str = "runs") -> list[Run]:
    """The collection's runs of these names, in their order; an unknown name is a 400."""
    found = {run.name: run for run in Run.objects.filter(collection=collection, name__in=names)}
    unknown = [name for name in names if name not in found]
    if unknown:
        raise ValidationError({field: [f"Unknown runs: {', '.join(map(repr, unknown))}."]})
    return [found[name] for name in dict.fromkeys(names)]


def queries_named(collection: Collection, qids: list[str], field: str = "queries") -> list[Query]:
    """The collection's queries of these qids (as the pool forms read them); unknown: a 400."""
    found = {q.qid: q for q in Query.objects.filter(collection=collection, qid__in=qids)}
    unknown = [qid for qid in qids if qid not in found]
    if unknown:
        raise ValidationError({field: [f"Unknown queries: {', '.join(map(repr, unknown))}."]})
    return [found[qid] for qid in dict.fromkeys(qids)]


def assignment_body(assignment: Assignment) -> dict[str, Any]:
    progress = judging.assignment_progress(assignment=assignment)
    return {
        "id": assignment.id,
        "pool": assignment.pool_id,
        "pool_name": assignment.pool.name,
        "assessor": assignment.assessor.get_username(),
        "created": assignment.created,
        "progress": {
            "judged": progress.judged,
            "skipped": progress.skipped,
            "left": progress.left,
            "total": progress.total,
            "percent": progress.percent,
        },
    }


def _pool_body(pool: Pool, *, assignments: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": pool.id,
        "name": pool.name,
        "depth": pool.depth,
        "order": pool.order,
        "budget": pool.budget,
        "per_query": pool.per_query,
        "overlap": pool.overlap,
        "runs": sorted(pool.runs.values_list("name", flat=True)),
        "queries": sorted(pool.queries.values_list("qid", flat=True)),
        "entries": pool.entries.count(),
        "unassigned": judging.pool_unassigned_count(pool=pool),
        "created": pool.created,
        "updated": pool.updated,
    }
    if assignments:
        body["assignments"] = [
            assignment_body(a)
            for a in Assignment.objects.filter(pool=pool)
            .select_related("pool", "assessor")
            .order_by("assessor__username")
        ]
    return body


class PoolApiView(CollectionApiView):
    def pool(self, pool_id: int) -> Pool:
        return get_object_or_404(Pool, id=pool_id, collection=self.collection)


class PoolListCreateApi(PagedList, CollectionApiView):
    roles = {"GET": STAFF_ROLES, "POST": STAFF_ROLES}

    @extend_schema(
        summary="The collection's pools, newest first (organisers)",
        responses={200: PoolSerializer(many=True), **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        pools = judging.pools_of(collection=self.collection)
        return self.pages(request, pools, _pool_body, PoolSerializer)

    @extend_schema(
        summary="Build a pool: every run's top `depth`, or by impact within a budget",
        description="As the pools page: `runs` and `queries` empty take every run and "
        "query; pairs already judged are left out unless `include_judged`. With "
        "`order=impact` only the `budget` pairs of highest impact at cutoff `depth` are "
        "pooled (pairs that can change no undecided comparison are left out), at most "
        "`per_query` of one query (by default twice the budget's even share).",
        request=PoolCreateSerializer,
        responses={201: PoolSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        form = PoolCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        pool, _ = services.pool_build(
            collection=self.collection,
            name=data["name"],
            depth=data["depth"],
            runs=runs_named(self.collection, data["runs"]) or None,
            queries=queries_named(self.collection, data["queries"]),
            include_judged=data["include_judged"],
            order=data["order"],
            budget=data["budget"],
            per_query=data["per_query"],
            created_by=calling_user(request),
        )
        body = PoolSerializer(_pool_body(pool)).data
        return created(body, request, "pool", slug=slug, pool_id=pool.id)


class PoolDetailApi(PoolApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="A pool's status: size, pairs short of the overlap, every assessor's progress",
        responses={200: PoolStatusSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, pool_id: int) -> Response:
        pool = self.pool(pool_id)
        return Response(PoolStatusSerializer(_pool_body(pool, assignments=True)).data)


class PoolExtendApi(PoolApiView):
    roles = {"POST": STAFF_ROLES}

    @extend_schema(
        summary="Extend a pool: new runs, a deeper cut, more queries",
        description="Existing pairs, assignments and judgements stay; the new pairs wait "
        "for the next assignment.",
        request=PoolExtendSerializer,
        responses={200: PoolExtendedSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, pool_id: int) -> Response:
        pool = self.pool(pool_id)
        form = PoolExtendSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        added = services.pool_extend(
            pool=pool,
            depth=data["depth"],
            runs=runs_named(self.collection, data["runs"]) or None,
            queries=queries_named(self.collection, data["queries"]) or None,
            include_judged=data["include_judged"],
        )
        return Response(PoolExtendedSerializer({"added": added, "pool": _pool_body(pool)}).data)


class PoolAssignApi(PoolApiView):
    roles = {"POST": STAFF_ROLES}

    @extend_schema(
        summary="Assign a pool's pairs so that each has `overlap` assessors",
        description="As the pool page: only pairs short of the overlap are handed out "
        "(again after an extension: just the new ones), to those with fewest pairs, keeping a "
        "query with the same people. Every assessor must already be an organiser or assessor "
        "of the collection (`members/`); any other name, an account or not, gets the same 400.",
        request=AssignInputSerializer,
        responses={200: AssignedSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, pool_id: int) -> Response:
        pool = self.pool(pool_id)
        form = AssignInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        result = services.assignment_create(
            pool=pool,
            assessors=services.grading_members_named(
                collection=self.collection, usernames=data["assessors"], field="assessors"
            ),
            overlap=data["overlap"],
            queries=queries_named(self.collection, data["queries"]),
            pairs=data["pairs"],
            created_by=calling_user(request),
        )
        body = [
            {"added": added, "assignment": assignment_body(assignment)}
            for assignment, added in result
        ]
        return Response(AssignedSerializer(body, many=True).data)


class AssignmentReleaseApi(CollectionApiView):
    roles = {"POST": STAFF_ROLES}

    @extend_schema(
        summary="Release what an assessor has left, or hand it to another assessor",
        description="The pairs the assessor has not graded (skipped ones included) leave the "
        "assignment: back to the pool (the next assignment hands them out) or, with `to`, "
        "appended to that assessor's assignment of the pool (`to` must already be an organiser "
        "or assessor of the collection, as for assign). Grades given stay.",
        request=ReleaseInputSerializer,
        responses={200: ReleasedSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, assignment_id: int) -> Response:
        assignment = get_object_or_404(
            Assignment.objects.select_related("pool__collection", "assessor"),
            id=assignment_id,
            pool__collection=self.collection,
        )
        form = ReleaseInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        to_name = form.validated_data["to"]
        to = (
            services.grading_members_named(
                collection=self.collection, usernames=[to_name], field="to"
            )[0]
            if to_name
            else None
        )
        released, handed = assignment_release(
            assignment=assignment, actor=calling_user(request), to=to
        )
        target = (
            Assignment.objects.select_related("pool", "assessor")
            .filter(pool=assignment.pool, assessor=to)
            .first()
            if to is not None
            else None
        )
        body = {
            "released": released,
            "handed_over": handed,
            "assignment": assignment_body(assignment),
            "to": assignment_body(target) if target is not None else None,
        }
        return Response(ReleasedSerializer(body).data)
