"""How much the system ranking depends on who judged (Voorhees 2000).

For every assessor who shares a judged pair with another assessor, the leaderboard at k is
computed again with that assessor's own grades on the pairs they judged and the effective
grade (the collection's aggregation rule, adjudications included) everywhere else. Only the
queries where an assessor's grades differ from the effective ones are scored again (from the
stored rankings, with the same scoring code as the stored scores); every other query keeps
its stored value. Means follow the collection's missing-query rule and are correctly
rounded, so the effective ranking here is the leaderboard's own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count

from annotations import selectors
from annotations.metrics import ndcg, rank_correlation
from annotations.metrics.ndcg import ordered_mean
from annotations.models import Collection, Judgement, Run
from annotations.selectors.scores_state import scores_state
from annotations.selectors.stored_scores import evaluated_queries, query_vector, stored_ndcg


@dataclass(frozen=True)
class AssessorRanking:
    """The leaderboard as one assessor's grades would have it."""

    assessor: str
    judged: int  # pairs this assessor judged
    differing: int  # of which their grade differs from the effective one
    queries: int  # queries scored again with their grades
    ranking: list[str]  # run names, best first
    means: dict[str, float]  # run name -> mean nDCG@k
    tau: float | None  # Kendall's tau-b against the effective ranking
    tau_ap: float | None  # AP correlation, the effective ranking as truth


@dataclass(frozen=True)
class RankingPair:
    first: str
    second: str
    tau: float | None
    tau_ap: float | None  # symmetric: neither ranking is the truth


@dataclass(frozen=True)
class RunSwing:
    run: str
    effective_rank: int
    best: int
    worst: int

    @property
    def swing(self) -> int:
        return self.worst - self.best


@dataclass(frozen=True)
class Sensitivity:
    k: int
    shared_pairs: int  # pairs judged by two or more assessors
    effective: list[str]
    effective_means: dict[str, float]
    assessors: list[AssessorRanking]
    pairs: list[RankingPair]
    swings: list[RunSwing]  # largest swing first


def assessor_sensitivity(*, collection: Collection, k: int) -> Sensitivity:
    """The sensitivity of the leaderboard at k to who judged; cached under the scores stamp."""
    key = f"sensitivity:{collection.id}:{k}:{scores_state(collection=collection).stamp}"
    found = cache.get(key)
    if found is None:
        found = _compute(collection, k)
        cache.set(key, found, timeout=3600)
    return found


def _compute(collection: Collection, k: int) -> Sensitivity:
    runs = dict(
        Run.objects.filter(collection=collection, scored_at__isnull=False).values_list("id", "name")
    )
    evaluated = [query_id for query_id, _, _ in evaluated_queries(collection, k)]
    stored = stored_ndcg(collection, list(runs), k)
    vectors = {run_id: query_vector(collection, evaluated, stored[run_id]) for run_id in runs}
    effective_means = {
        runs[run_id]: ordered_mean(list(v.values())) for run_id, v in vectors.items()
    }
    effective = rank_correlation.ranking(effective_means)

    judgements = Judgement.objects.filter(query__collection=collection)
    shared = (
        judgements.values("query_id", "document_id")
        .annotate(assessors=Count("assessor_id"))
        .filter(assessors__gte=2)
    )
    shared_pairs = shared.count()
    involved = set(
        judgements.filter(
            query_id__in=shared.values("query_id"),
        )
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
    effective_grades = dict(
        selectors.effective_grades_by_query(collection=collection, query_ids=affected)
    )
    names = dict(get_user_model().objects.filter(id__in=assessor_ids).values_list("id", "username"))
    rankings_of: dict[int, dict[int, list[int]]] = {}
    counted = set(evaluated)

    assessors: list[AssessorRanking] = []
    for assessor_id in assessor_ids:
        changed_vectors = {run_id: dict(vector) for run_id, vector in vectors.items()}
        judged = differing = rescored = 0
        for query_id, grades in own[assessor_id].items():
            base = effective_grades.get(query_id, {})
            judged += len(grades)
            changes = {doc: g for doc, g in grades.items() if base.get(doc) != g}
            if not changes or query_id not in counted:
                continue
            differing += len(changes)
            rescored += 1
            variant = {**base, **changes}
            if query_id not in rankings_of:
                rankings_of[query_id] = selectors.query_rankings(
                    query_id=query_id, depth=k, run_ids=list(runs)
                )
            _rescore(collection, k, query_id, variant, rankings_of[query_id], changed_vectors)
        means = {runs[r]: ordered_mean(list(v.values())) for r, v in changed_vectors.items()}
        ordered = rank_correlation.ranking(means)
        assessors.append(
            AssessorRanking(
                assessor=names.get(assessor_id, str(assessor_id)),
                judged=judged,
                differing=differing,
                queries=rescored,
                ranking=ordered,
                means=means,
                tau=_tau(effective_means, means),
                tau_ap=rank_correlation.tau_ap(effective, ordered),
            )
        )
    pairs = [
        RankingPair(
            first=a.assessor,
            second=b.assessor,
            tau=_tau(a.means, b.means),
            tau_ap=rank_correlation.tau_ap_symmetric(a.ranking, b.ranking),
        )
        for index, a in enumerate(assessors)
        for b in assessors[index + 1 :]
    ]
    bounds = rank_correlation.rank_swings(
        {"": effective, **{a.assessor: a.ranking for a in assessors}}
    )
    position = {name: index for index, name in enumerate(effective, start=1)}
    swings = sorted(
        (RunSwing(name, position[name], best, worst) for name, (best, worst) in bounds.items()),
        key=lambda s: (-s.swing, s.effective_rank),
    )
    return Sensitivity(
        k=k,
        shared_pairs=shared_pairs,
        effective=effective,
        effective_means=effective_means,
        assessors=assessors,
        pairs=pairs,
        swings=swings,
    )


def _rescore(
    collection: Collection,
    k: int,
    query_id: int,
    grades: Mapping[int, int],
    rankings: Mapping[int, list[int]],
    vectors: dict[int, dict[int, float]],
) -> None:
    """Replace the query's value in every run's vector by its nDCG@k under `grades`."""
    idcgs = ndcg.idcgs_for(grades.values(), [k], collection.gain)
    for run_id, vector in vectors.items():
        if query_id not in vector:
            continue  # a run that skipped the query (missing-query rule "skip")
        ranking = rankings.get(run_id)
        if ranking is None:
            continue  # missing: 0.0 whatever the grades
        vector[query_id] = ndcg.query_scores(ranking, grades, [k], collection.gain, idcgs)[k].ndcg


def _tau(first: Mapping[str, float], second: Mapping[str, float]) -> float | None:
    names = sorted(first)
    return rank_correlation.kendall_tau_b([first[n] for n in names], [second[n] for n in names])
