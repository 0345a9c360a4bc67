"""The leaderboard under each rule for machine grades: the reads behind
`annotations.metrics.machine_rankings`, cached under the scores stamp."""

from __future__ import annotations

from collections import defaultdict

from django.core.cache import cache

from annotations.metrics.machine_grades import MACHINE_RULES
from annotations.metrics.machine_rankings import MachineComparison, RuleInputs, machine_comparison
from annotations.models import Collection, Judgement, Query, Run
from annotations.selectors.grades import effective_grades_by_query, machine_accounts
from annotations.selectors.rankings import top_documents
from annotations.selectors.scores_state import scores_state
from annotations.selectors.stored_scores import evaluated_queries, stored_ndcg


def machine_rules_comparison(*, collection: Collection, k: int) -> MachineComparison | None:
    """The comparison at k, or None when no machine judge has graded in the collection."""
    key = f"machine-rules:v1:{collection.id}:{k}:{scores_state(collection=collection).stamp}"
    found = cache.get(key)
    if found is None:
        inputs = _inputs(collection, k)
        found = machine_comparison(inputs) if inputs.machine_pairs else False
        cache.set(key, found, timeout=3600)
    return found or None


def _inputs(collection: Collection, k: int) -> RuleInputs:
    runs = dict(
        Run.objects.filter(collection=collection, scored_at__isnull=False).values_list("id", "name")
    )
    evaluated = evaluated_queries(collection, k)
    judgements = Judgement.objects.filter(query__collection=collection)
    machines = machine_accounts(collection)
    pairs = set(judgements.filter(assessor_id__in=machines).values_list("query_id", "document_id"))
    affected = sorted({query_id for query_id, _ in pairs})
    people = set(
        judgements.filter(query_id__in=affected)
        .exclude(assessor_id__in=machines)
        .values_list("query_id", "document_id")
    )
    rankings: dict[int, dict[int, list[int]]] = {query_id: {} for query_id in affected}
    if affected and runs:
        for run_id, query_id, documents in top_documents(
            run_ids=list(runs), query_ids=affected, depth=k
        ):
            rankings[query_id][run_id] = documents
    grades: dict[str, dict[int, dict[int, int]]] = defaultdict(dict)
    for rule in MACHINE_RULES:
        grades[rule] = dict(
            effective_grades_by_query(collection=collection, query_ids=affected, machine_rule=rule)
        )
    qids = {query_id: qid for query_id, qid, _ in evaluated}
    qids.update(Query.objects.filter(id__in=affected).values_list("id", "qid"))
    return RuleInputs(
        k=k,
        gain=collection.gain,
        missing_queries=collection.missing_queries,
        runs=runs,
        qids=qids,
        stored=stored_ndcg(collection, list(runs), k),
        evaluated=[query_id for query_id, _, _ in evaluated],
        grades=grades,
        rankings=rankings,
        machine_pairs=len(pairs),
        filled_pairs=sum(1 for pair in pairs if pair not in people),
    )
