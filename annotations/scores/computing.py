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
from annotations.metrics import measures_arrays, ndcg, ndcg_arrays
from annotations.metrics.measures import Measure, depth_read
from annotations.models import Collection

# The packed columns of the collection's other measures, after nDCG's.
MEASURE_COLUMNS = ("measures", "measure_values")
QUERY_SCORE_COLUMNS = (
    "run_id",
    "query_id",
    "cutoffs",
    *score_bytes.QUERY_MEASURES,
    *MEASURE_COLUMNS,
)
RUN_SCORE_COLUMNS = ("run_id", "cutoffs", "measures", "updated")


@dataclass
class QueryScores:
    """One query's IDCG per k and its scores: `matrix[i]` is run `run_ids[i]`'s (4, K), and
    `measures[i]` its values of the collection's other measures (`measures_layout`)."""

    idcgs: dict[int, float]
    run_ids: list[int]
    matrix: FloatArray
    measures_layout: str = ""
    measures: FloatArray | None = None

    def measure_row(self, i: int) -> FloatArray:
        """Run `run_ids[i]`'s values of the other measures (empty without any)."""
        if self.measures is None:
            return np.zeros(0)
        return self.measures[i]


def measures_depth(measures: Sequence[Measure]) -> int | None:
    """How many results of each ranking the measures read (None: whole rankings)."""
    depths = [depth_read(measure) for measure in measures]
    if any(depth is None for depth in depths):
        return None
    return max((depth for depth in depths if depth is not None), default=0)

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
        query_id=query_id,
        depth=max(collection.sorted_cutoffs),
        grades=grades,
        run_ids=run_ids,
        needed=measures_depth(collection.kept_measures),
    )
    return score_rankings(collection, grades, rankings)


def score_rankings(
    collection: Collection,
    grades: Mapping[int, int],
    rankings: Mapping[int, Sequence[int] | IntArray],
) -> QueryScores:
    ks = collection.sorted_cutoffs
    kept = collection.kept_measures
    layout = collection.measures_layout
    if not grades:
        return QueryScores({}, [], np.zeros((0, 4, len(ks))), layout, np.zeros((0, len(kept))))
    idcgs = ndcg.idcgs_for(grades.values(), ks, collection.gain)
    run_ids, matrix = ndcg_arrays.score_matrix(rankings, grades, ks, collection.gain, idcgs)
    values = None
    if kept:
        # The same rows as score_matrix's: both follow the order of `rankings`.
        measure_runs, values = measures_arrays.measure_matrix(
            rankings, grades, kept, collection.gain
        )
        if measure_runs != run_ids:
            raise AssertionError("measure rows out of step with the nDCG rows")
    return QueryScores(idcgs, run_ids, matrix, layout, values)


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
