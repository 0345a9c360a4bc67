"""PURE: how much a system ranking depends on who judged (Voorhees 2000), from its inputs.

For every assessor who shares a judged pair with another assessor, the ranking at k is
computed again with that assessor's own grades on the pairs they judged and the effective
grade everywhere else. Only the queries where an assessor's grades differ from the effective
ones are scored again (`queries_to_rescore`: their rankings are all this needs beyond the
stored values); every other query keeps its stored value. Means are trec_eval's
(`ndcg.ordered_mean` over each run's values in qid order). `annotations.selectors.sensitivity`
reads the inputs; nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotations.metrics import ndcg, rank_correlation
from annotations.metrics.ndcg import ordered_mean

# assessor id -> query id -> document id -> grade
OwnGrades = Mapping[int, Mapping[int, Mapping[int, int]]]


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


@dataclass(frozen=True)
class SensitivityInputs:
    """What the sensitivity at k is computed from.

    `vectors` holds each scored run's stored nDCG@k per counted query, in qid order (the
    collection's missing-query rule applied); `own` every involved assessor's grades,
    `effective` the effective grades of the queries they judged, `rankings` the run
    rankings of `queries_to_rescore`'s queries (run id -> document ids, best first).
    """

    k: int
    gain: str
    runs: Mapping[int, str]
    vectors: Mapping[int, Mapping[int, float]]
    shared_pairs: int
    own: OwnGrades
    effective: Mapping[int, Mapping[int, int]]
    names: Mapping[int, str]
    rankings: Mapping[int, Mapping[int, Sequence[int]]]


def queries_to_rescore(
    own: OwnGrades, effective: Mapping[int, Mapping[int, int]], counted: set[int]
) -> list[int]:
    """The counted queries where some assessor's grades differ from the effective ones."""
    return sorted(
        {
            query_id
            for queries in own.values()
            for query_id, grades in queries.items()
            if query_id in counted
            and any(effective.get(query_id, {}).get(doc) != g for doc, g in grades.items())
        }
    )


def sensitivity(inputs: SensitivityInputs) -> Sensitivity:
    """The rankings of every assessor, their correlations and each run's swing."""
    runs = inputs.runs
    effective_means = {runs[r]: ordered_mean(list(v.values())) for r, v in inputs.vectors.items()}
    effective = rank_correlation.ranking(effective_means)
    assessors = [
        _assessor_ranking(inputs, assessor_id, effective_means, effective)
        for assessor_id in sorted(inputs.own)
    ]
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
        k=inputs.k,
        shared_pairs=inputs.shared_pairs,
        effective=effective,
        effective_means=effective_means,
        assessors=assessors,
        pairs=pairs,
        swings=swings,
    )


def _assessor_ranking(
    inputs: SensitivityInputs,
    assessor_id: int,
    effective_means: Mapping[str, float],
    effective: list[str],
) -> AssessorRanking:
    vectors = {run_id: dict(vector) for run_id, vector in inputs.vectors.items()}
    judged = differing = rescored = 0
    for query_id, grades in inputs.own[assessor_id].items():
        base = inputs.effective.get(query_id, {})
        judged += len(grades)
        changes = {doc: g for doc, g in grades.items() if base.get(doc) != g}
        if not changes or query_id not in inputs.rankings:
            continue
        differing += len(changes)
        rescored += 1
        _rescore(inputs, query_id, {**base, **changes}, vectors)
    means = {inputs.runs[r]: ordered_mean(list(v.values())) for r, v in vectors.items()}
    ordered = rank_correlation.ranking(means)
    return AssessorRanking(
        assessor=inputs.names.get(assessor_id, str(assessor_id)),
        judged=judged,
        differing=differing,
        queries=rescored,
        ranking=ordered,
        means=means,
        tau=_tau(effective_means, means),
        tau_ap=rank_correlation.tau_ap(effective, ordered),
    )


def _rescore(
    inputs: SensitivityInputs,
    query_id: int,
    grades: Mapping[int, int],
    vectors: dict[int, dict[int, float]],
) -> None:
    """Replace the query's value in every run's vector by its nDCG@k under `grades`."""
    k, gain = inputs.k, inputs.gain
    idcgs = ndcg.idcgs_for(grades.values(), [k], gain)
    rankings = inputs.rankings[query_id]
    for run_id, vector in vectors.items():
        if query_id not in vector:
            continue  # a run that skipped the query (missing-query rule "skip")
        ranking = rankings.get(run_id)
        if ranking is None:
            continue  # missing: 0.0 whatever the grades
        vector[query_id] = ndcg.query_scores(ranking, grades, [k], gain, idcgs)[k].ndcg


def _tau(first: Mapping[str, float], second: Mapping[str, float]) -> float | None:
    names = sorted(first)
    return rank_correlation.kendall_tau_b([first[n] for n in names], [second[n] for n in names])
