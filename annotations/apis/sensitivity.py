"""Assessor sensitivity: the leaderboard with each assessor's own grades, and under each rule
for machine grades (organisers)."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import (
    K_PARAMETER,
    STAFF_ROLES,
    CollectionApiView,
    cutoff_of,
    documented_errors,
)
from annotations.selectors.machine_rankings import machine_rules_comparison
from annotations.selectors.sensitivity import assessor_sensitivity
from annotations.serializers.sensitivity import (
    MachineRulesSerializer,
    SensitivitySerializer,
)


class SensitivityApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="How the ranking at k depends on who judged (per-assessor rankings, tau, tau_ap)",
        parameters=[K_PARAMETER],
        responses={200: SensitivitySerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        k = cutoff_of(self.collection, request)
        result = assessor_sensitivity(collection=self.collection, k=k)
        body = asdict(result)
        body["swings"] = [{**row, "swing": row["worst"] - row["best"]} for row in body["swings"]]
        return Response(SensitivitySerializer({"collection": self.collection.slug, **body}).data)


class MachineRulesApi(CollectionApiView):
    roles = {"GET": STAFF_ROLES}

    @extend_schema(
        summary="The ranking at k under each rule for machine grades (people only, "
        "machine-filled, one assessor), tau and tau_ap against people only, the runs that move",
        parameters=[K_PARAMETER],
        responses={200: MachineRulesSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        k = cutoff_of(self.collection, request)
        found = machine_rules_comparison(collection=self.collection, k=k)
        body = {"collection": self.collection.slug, "k": k, "rule": self.collection.machine_grades}
        if found is None:
            body |= {"machine_pairs": 0, "filled_pairs": 0, "queries": 0, "rules": [], "moves": []}
        else:
            body |= asdict(found)
        return Response(MachineRulesSerializer(body).data)
