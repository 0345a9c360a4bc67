"""One query's scores for every run at once, and the score lock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection

from annotations import selectors
from annotations.bulk import execute
from annotations.formats import score_bytes
from annotations.formats.score_bytes import FloatArray, IntArray
from annotations.metrics import ndcg, ndcg_arrays
from annotations.models import Collection

QUERY_SCORE_COLUMNS = ("run_id", "query_id", "cutoffs", *score_bytes.QUERY_MEASURES)
RUN_SCORE_COLUMNS = ("run_id", "cutoffs", "updated")


@dataclass
class QueryScores:
    """One query's IDCG per k and its scores: `matrix[i]` is run `run_ids[i]`'s (4, K)."""

    idcgs: dict[int, float]
    run_ids: list[int]
    matrix: FloatArray

    def row_of(self) -> dict[int, int]:
        return {run_id: i for i, run_id in enumerate(self.run_ids)}


def score_query(
    collection: Collection,
    query_id: int,
    grades: Mapping[int, int],
    run_ids: Iterable[int] | None = None,
) -> QueryScores:
    """The IDCG per k and every run's scores of one query, from its current grades."""
    if not grades:
        return score_rankings(collection, grades, {})
    rankings = selectors.scoring_rankings(
        query_id=query_id, depth=max(collection.sorted_cutoffs), grades=grades, run_ids=run_ids
    )
    return score_rankings(collection, grades, rankings)


def score_rankings(
    collection: Collection,
    grades: Mapping[int, int],
    rankings: Mapping[int, Sequence[int] | IntArray],
) -> QueryScores:
    ks = collection.sorted_cutoffs
    if not grades:
        return QueryScores({}, [], np.zeros((0, 4, len(ks))))
    idcgs = ndcg.idcgs_for(grades.values(), ks, collection.gain)
    run_ids, matrix = ndcg_arrays.score_matrix(rankings, grades, ks, collection.gain, idcgs)
    return QueryScores(idcgs, run_ids, matrix)


def synchronous_commit_off() -> None:
    """Scores are derived data and their transaction also clears the pending mark: if a
    crash loses its commit, the query stays pending and the sweep recomputes it, so the
    commit need not wait for the disk. Works inside `pipeline()` too."""
    if connection.vendor == "postgresql":
        execute("SET LOCAL synchronous_commit = off", [])


def lock_collection(collection_id: int) -> Collection:
    # All score writers of a collection take this lock: a query's recomputation and a
    # rescore never interleave their reads and writes of the same rows.
    synchronous_commit_off()
    return Collection.objects.select_for_update().get(id=collection_id)
