"""One query's scores for every run at once, and the score lock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection

from annotations import selectors
from annotations.bulk import execute
from annotations.formats import ranking_bytes, score_bytes
from annotations.formats.score_bytes import FloatArray, IntArray
from annotations.metrics import measures_arrays, ndcg, ndcg_arrays
from annotations.metrics.measures import Measure, depth_read
from annotations.metrics.qrels_ranks import QrelsRanks
from annotations.models import Collection
from annotations.scores.kept_ranks import KeptRanks, keeps_ranks, kept_ranks, qrels_documents

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


def score_query(
    collection: Collection,
    query_id: int,
    grades: Mapping[int, int],
    run_ids: Iterable[int] | None = None,
) -> tuple[QueryScores, KeptRanks | None]:
    """The IDCG per k and every run's scores of one query, from its current grades and its
    rankings read whole where the measures read them deeper than their heads (then also
    their qrels ranks, found afresh, with the kept rows that differ)."""
    if not grades:
        return score_rankings(collection, grades, {}), None
    if keeps_ranks(collection.kept_measures):
        rows = selectors.whole_rankings(query_id=query_id, run_ids=run_ids)
        whole = {row[0]: ranking_bytes.unpack_id_array(row[2]) for row in rows}
        kept = kept_ranks(rows, qrels_documents(grades), whole)
        return score_ranks(collection, grades, kept.run_ids, kept.ranks), kept
    rankings = selectors.scoring_rankings(
        query_id=query_id,
        depth=max(collection.sorted_cutoffs),
        grades=grades,
        run_ids=run_ids,
        needed=measures_depth(collection.kept_measures),
    )
    return score_rankings(collection, grades, rankings), None


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


def score_ranks(
    collection: Collection, grades: Mapping[int, int], run_ids: list[int], ranks: QrelsRanks
) -> QueryScores:
    """`score_rankings` of the rankings of `run_ids` from their qrels ranks (a row each, in
    that order), for grades whose documents are all `ranks.documents`."""
    ks = collection.sorted_cutoffs
    kept = collection.kept_measures
    if not grades or ranks.runs != len(run_ids):
        raise ValueError("qrels ranks need grades and a row per run")
    idcgs = ndcg.idcgs_for(grades.values(), ks, collection.gain)
    matrix = ndcg_arrays.ranks_score_matrix(ranks, grades, ks, collection.gain, idcgs)
    values = measures_arrays.ranks_measure_matrix(ranks, grades, kept, collection.gain)
    return QueryScores(idcgs, run_ids, matrix, collection.measures_layout, values)


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
