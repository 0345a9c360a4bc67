"""PURE: the leaderboard under each rule for machine grades, side by side (people only,
machine-filled, machine as one assessor), with Kendall's tau and tau_ap of each against the
people-only ranking and the runs whose rank moves.

Only the queries a machine judged can differ between the rules; they are scored again from
the stored rankings with each rule's grades (the same scoring code as the stored scores),
every other query keeps its stored value. Under "people" a query only machines judged is not
evaluated, so it leaves every run's mean. Means are trec_eval's (`ndcg.ordered_mean` over
the values in qid order). `annotations.selectors.machine_rankings` reads the inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotations.metrics import ndcg, rank_correlation
from annotations.metrics.ndcg import ordered_mean

# The order the rules are shown in: the reference first.
SHOWN = ("people", "fill", "assessor")


@dataclass(frozen=True)
class RuleInputs:
    """What the comparison at k is computed from.

    `stored` holds each scored run's stored nDCG@k per query it answered (the collection's
    current rule); `evaluated` the queries evaluated now; `grades` each rule's effective
    grades of the queries a machine judged (a query absent: nothing counts under that
    rule); `rankings` the rankings of every query a machine judged (query id -> run id ->
    document ids, top k; a run absent did not answer it).
    """

    k: int
    gain: str
    missing_queries: str
    runs: Mapping[int, str]
    qids: Mapping[int, str]
    stored: Mapping[int, Mapping[int, float]]
    evaluated: Sequence[int]
    grades: Mapping[str, Mapping[int, Mapping[int, int]]]
    rankings: Mapping[int, Mapping[int, Sequence[int]]]
    machine_pairs: int
    filled_pairs: int


@dataclass(frozen=True)
class RuleRanking:
    rule: str
    queries: int  # evaluated under the rule
    means: dict[str, float]  # run name -> mean nDCG@k
    ranking: list[str]  # run names, best first
    tau: float | None  # Kendall's tau-b against the people-only ranking
    tau_ap: float | None  # AP correlation, the people-only ranking as truth


@dataclass(frozen=True)
class RunMove:
    run: str
    ranks: dict[str, int]  # rule -> rank (1 = best)
    means: dict[str, float]  # rule -> mean nDCG@k

    @property
    def spread(self) -> int:
        return max(self.ranks.values()) - min(self.ranks.values())

    @property
    def cells(self) -> list[tuple[str, int, float]]:
        """(rule, rank, mean) in `SHOWN` order."""
        return [(rule, self.ranks[rule], self.means[rule]) for rule in SHOWN]


@dataclass(frozen=True)
class MachineComparison:
    k: int
    machine_pairs: int  # pairs a machine judged
    filled_pairs: int  # of which no person judged
    queries: int  # queries a machine judged (scored again)
    rules: list[RuleRanking]  # in `SHOWN` order
    moves: list[RunMove]  # runs whose rank differs between rules, largest spread first

    def rule(self, name: str) -> RuleRanking:
        return next(ranking for ranking in self.rules if ranking.rule == name)


def machine_comparison(inputs: RuleInputs) -> MachineComparison:
    """The leaderboard under every rule, compared with the people-only one."""
    means = {rule: _means(inputs, rule) for rule in SHOWN}
    rankings = {rule: rank_correlation.ranking(values) for rule, values in means.items()}
    people = rankings["people"]
    rules = [
        RuleRanking(
            rule=rule,
            queries=len(_evaluated(inputs, rule)),
            means=means[rule],
            ranking=rankings[rule],
            tau=_tau(means["people"], means[rule]),
            tau_ap=rank_correlation.tau_ap(people, rankings[rule]),
        )
        for rule in SHOWN
    ]
    positions = {
        rule: {name: index for index, name in enumerate(ranking, start=1)}
        for rule, ranking in rankings.items()
    }
    moves = [
        RunMove(
            run=name,
            ranks={rule: positions[rule][name] for rule in SHOWN},
            means={rule: means[rule][name] for rule in SHOWN},
        )
        for name in people
    ]
    moved = sorted(
        (move for move in moves if move.spread), key=lambda m: (-m.spread, m.ranks["people"])
    )
    return MachineComparison(
        k=inputs.k,
        machine_pairs=inputs.machine_pairs,
        filled_pairs=inputs.filled_pairs,
        queries=len(inputs.rankings),
        rules=rules,
        moves=moved,
    )


def _evaluated(inputs: RuleInputs, rule: str) -> list[int]:
    """The queries evaluated under `rule`, in trec_eval's qid order."""
    affected = set(inputs.rankings)
    kept = [query for query in inputs.evaluated if query not in affected]
    kept += [query for query in affected if inputs.grades[rule].get(query)]
    return sorted(kept, key=lambda query: inputs.qids[query])


def _means(inputs: RuleInputs, rule: str) -> dict[str, float]:
    k, gain = inputs.k, inputs.gain
    scored: dict[int, dict[int, float]] = {}
    for query in inputs.rankings:
        grades = inputs.grades[rule].get(query)
        if not grades:
            continue
        idcgs = ndcg.idcgs_for(grades.values(), [k], gain)
        scored[query] = {
            run_id: ndcg.query_scores(ranking, grades, [k], gain, idcgs)[k].ndcg
            for run_id, ranking in inputs.rankings[query].items()
        }
    evaluated = _evaluated(inputs, rule)
    means: dict[str, float] = {}
    for run_id, name in inputs.runs.items():
        stored = inputs.stored.get(run_id, {})
        values: list[float] = []
        for query in evaluated:
            value = scored[query].get(run_id) if query in scored else stored.get(query)
            if value is not None:
                values.append(value)
            elif inputs.missing_queries == "zero":
                values.append(0.0)  # trec_eval -c: a judged query the run did not answer
        means[name] = ordered_mean(values)
    return means


def _tau(first: Mapping[str, float], second: Mapping[str, float]) -> float | None:
    names = sorted(first)
    return rank_correlation.kendall_tau_b([first[n] for n in names], [second[n] for n in names])
