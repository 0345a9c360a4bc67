"""One query's scores from its grades and rankings; the lock all score writers take."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.db import connection

from annotations import scoring, selectors
from annotations.bulk import (
    execute,
)
from annotations.exact import ExactSum
from annotations.models import Collection

# (ndcg, ndcg_condensed, judged) of one run, query and k: the values that feed the run means.
Triple = tuple[float, float, float]
QUERY_SCORE_COLUMNS = ("run_id", "query_id", "k", "ndcg", "dcg", "judged", "ndcg_condensed")
RUN_SCORE_COLUMNS = (
    "run_id", "k", "queries", "ndcg", "ndcg_condensed", "judged",
    "ndcg_sum", "ndcg_condensed_sum", "judged_sum", "updated",
)  # fmt: skip


@dataclass
class RunAccumulator:
    """Exact sums of one run's per-query values at one k, plus how many queries count."""

    queries: int = 0
    ndcg: ExactSum = field(default_factory=ExactSum)
    condensed: ExactSum = field(default_factory=ExactSum)
    judged: ExactSum = field(default_factory=ExactSum)

    def add(self, values: Triple) -> None:
        self.ndcg.add(values[0])
        self.condensed.add(values[1])
        self.judged.add(values[2])

    def row(self, run_id: int, k: int) -> tuple[object, ...]:
        """The stored values in RUN_SCORE_COLUMNS order, all but the time of the update."""
        n = self.queries
        return (
            run_id, k, n, self.ndcg.mean(n), self.condensed.mean(n), self.judged.mean(n),
            self.ndcg.to_text(), self.condensed.to_text(), self.judged.to_text(),
        )  # fmt: skip


def triple(scores: scoring.CutoffScores) -> Triple:
    return (scores.ndcg, scores.ndcg_condensed, scores.judged)


def score_query(
    collection: Collection,
    query_id: int,
    grades: Mapping[int, int],
    run_ids: Iterable[int] | None = None,
) -> tuple[dict[int, float], dict[tuple[int, int], scoring.CutoffScores]]:
    """The IDCG per k and every (run, k) score of one query, from its current grades."""
    if not grades:
        return {}, {}
    rankings = selectors.scoring_rankings(
        query_id=query_id, depth=max(collection.sorted_cutoffs), grades=grades, run_ids=run_ids
    )
    return score_rankings(collection, grades, rankings)


def score_rankings(
    collection: Collection, grades: Mapping[int, int], rankings: Mapping[int, Sequence[int]]
) -> tuple[dict[int, float], dict[tuple[int, int], scoring.CutoffScores]]:
    if not grades:
        return {}, {}
    ks = collection.sorted_cutoffs
    idcgs = scoring.idcgs_for(grades.values(), ks, collection.gain)
    scores: dict[tuple[int, int], scoring.CutoffScores] = {}
    for run_id, ranking in rankings.items():
        for k, value in scoring.query_scores(ranking, grades, ks, collection.gain, idcgs).items():
            scores[(run_id, k)] = value
    return idcgs, scores


def synchronous_commit_off() -> None:
    """Scores are derived data and their transaction also clears the pending mark: if a
    crash loses its commit, the query stays pending and the sweep recomputes it, so the
    commit need not wait for the disk. Works inside `pipeline()` too."""
    if connection.vendor == "postgresql":
        execute("SET LOCAL synchronous_commit = off", [])


def lock_collection(collection_id: int) -> Collection:
    # All score writers of a collection take this lock, so the run means (shared by every
    # query) are always updated from the latest committed per-query values.
    synchronous_commit_off()
    return Collection.objects.select_for_update().get(id=collection_id)
