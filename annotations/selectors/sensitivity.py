"""How much the system ranking depends on who judged: the reads behind
`annotations.metrics.sensitivity`, cached under the scores stamp.

The effective grades are the collection's aggregation rule, adjudications included; the
rescored queries are scored from the stored rankings with the same scoring code as the
stored scores, so the effective ranking here is the leaderboard's own.
"""

from __future__ import annotations

from collections import defaultdict

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count

from annotations import selectors
from annotations.metrics.sensitivity import (
    Sensitivity,
    SensitivityInputs,
    queries_to_rescore,
    sensitivity,
)
from annotations.models import Collection, Judgement, Run
from annotations.selectors.scores_state import scores_state
from annotations.selectors.stored_scores import evaluated_queries, query_vector, stored_ndcg


def assessor_sensitivity(*, collection: Collection, k: int) -> Sensitivity:
    """The sensitivity of the leaderboard at k to who judged; cached under the scores stamp."""
    key = f"sensitivity:v2:{collection.id}:{k}:{scores_state(collection=collection).stamp}"
    found = cache.get(key)
    if found is None:
        found = sensitivity(_inputs(collection, k))
        cache.set(key, found, timeout=3600)
    return found


def _inputs(collection: Collection, k: int) -> SensitivityInputs:
    """Everything the sensitivity at k is computed from, read."""
    runs = dict(
        Run.objects.filter(collection=collection, scored_at__isnull=False).values_list("id", "name")
    )
    evaluated = [query_id for query_id, _, _ in evaluated_queries(collection, k)]
    stored = stored_ndcg(collection, list(runs), k)
    vectors = {run_id: query_vector(collection, evaluated, stored[run_id]) for run_id in runs}
    judgements = Judgement.objects.filter(query__collection=collection)
    shared = (
        judgements.values("query_id", "document_id")
        .annotate(assessors=Count("assessor_id"))
        .filter(assessors__gte=2)
    )
    involved = set(
        judgements.filter(query_id__in=shared.values("query_id"))
        .values_list("query_id", "document_id", "assessor_id")
        .iterator()
    )
    shared_keys = set(shared.values_list("query_id", "document_id"))
    assessor_ids = sorted({a for q, d, a in involved if (q, d) in shared_keys})
    own: dict[int, dict[int, dict[int, int]]] = defaultdict(lambda: defaultdict(dict))
    for query_id, document_id, assessor_id, grade in judgements.filter(
        assessor_id__in=assessor_ids
    ).values_list("query_id", "document_id", "assessor_id", "grade"):
        own[assessor_id][query_id][document_id] = grade
    affected = sorted({q for grades in own.values() for q in grades})
    effective = dict(selectors.effective_grades_by_query(collection=collection, query_ids=affected))
    rankings = {
        query_id: selectors.query_rankings(query_id=query_id, depth=k, run_ids=list(runs))
        for query_id in queries_to_rescore(own, effective, set(evaluated))
    }
    names = dict(get_user_model().objects.filter(id__in=assessor_ids).values_list("id", "username"))
    return SensitivityInputs(
        k=k,
        gain=collection.gain,
        runs=runs,
        vectors=vectors,
        shared_pairs=shared.count(),
        own=own,
        effective=effective,
        names=names,
        rankings=rankings,
    )
