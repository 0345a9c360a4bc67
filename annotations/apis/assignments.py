"""Assignments as assessors and organisers read them: the list with progress, and the pairs
of one in judging order (what the assessor grades, through judgements/)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import TEAM_ROLES, CollectionApiView, PagedList, documented_errors
from annotations.apis.pools import assignment_body
from annotations.models import Assignment
from annotations.permissions import ORGANISER
from annotations.selectors import judging
from annotations.serializers.pools import AssignmentItemSerializer, AssignmentSerializer


class _Assignments(CollectionApiView):
    roles = {"GET": TEAM_ROLES}

    def visible(self) -> QuerySet[Assignment]:
        """Every assignment of the collection for organisers, the caller's own for others."""
        assignments = Assignment.objects.filter(pool__collection=self.collection).select_related(
            "pool", "assessor"
        )
        if ORGANISER not in self.roles_held:
            assignments = assignments.filter(assessor_id=self.request.user.pk)
        return assignments.order_by("pool__name", "assessor__username")


class AssignmentListApi(PagedList, _Assignments):
    @extend_schema(
        summary="Assignments with progress: every one for organisers, the caller's own else",
        responses={200: AssignmentSerializer(many=True), **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.pages(request, self.visible(), assignment_body, AssignmentSerializer)


class AssignmentItemsApi(PagedList, _Assignments):
    @extend_schema(
        summary="An assignment's pairs in judging order, with the assessor's grades",
        description="Grade a pair with POST judgements/ (the assessor's own judgement); "
        "another assessor's assignment is a 404 to assessors, as on the judging pages.",
        responses={200: AssignmentItemSerializer(many=True), **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, assignment_id: int) -> Response:
        assignment = self.visible().filter(id=assignment_id).first()
        if assignment is None:
            raise NotFound("No such assignment.")
        items = judging.items_annotated(assignment=assignment)
        return self.pages(request, items, _item_body, AssignmentItemSerializer)


def _item_body(item: Any) -> dict[str, Any]:
    return {
        "position": item.position,
        "qid": item.entry.query.qid,
        "docno": item.entry.document.docno,
        "judged": item.judged,  # annotated
        "grade": item.grade,  # annotated
        "skipped": item.skipped,
        "note": item.note,
    }
