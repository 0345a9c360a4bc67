"""One query's scores for every run at once, the exact run-mean sums, and the score lock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import connection

from annotations import selectors
from annotations.bulk import execute
from annotations.formats import score_bytes
from annotations.formats.score_bytes import FloatArray, IntArray
from annotations.metrics import exact, exact_arrays, ndcg, ndcg_arrays
from annotations.models import Collection

# Rows of a score matrix (runs, 4, K) that feed the run means, in MEAN_MEASURES order:
# nDCG, nDCG', judged@k.
MEAN_ROWS = [ndcg_arrays.MEASURES.index(name) for name in score_bytes.MEAN_MEASURES]
QUERY_SCORE_COLUMNS = ("run_id", "query_id", "cutoffs", *score_bytes.QUERY_MEASURES)
RUN_SCORE_COLUMNS = (
    "run_id", "cutoffs", "queries", *score_bytes.SUM_COLUMNS, "overflow", "updated",
)  # fmt: skip


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


@dataclass
class ExactMeans:
    """Exact sums of the run means of some runs at every cutoff, and how many queries count.

    `sums[r]` holds run r's (3, K) sums as exact_arrays limbs; values off their grid (tiny
    or huge doubles, never seen in practice but possible), and sums their stored form cannot
    hold (`spill`), are summed as exact integers in `big` instead, keyed (run index,
    measure, position); `overflow(rows)` gives them as the overflow texts of the packed
    RunScore rows (a mean is decoded when read, see `score_bytes.means_of`).
    """

    runs: int
    cutoffs: int
    measures: int = 3  # fewer for some of a row's measures (see `folding`)
    sums: IntArray = field(init=False)
    counts: IntArray = field(init=False)
    big: dict[tuple[int, int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sums = exact_arrays.zeros((self.runs, self.measures, self.cutoffs))
        self.counts = np.zeros(self.runs, dtype=np.int64)

    @classmethod
    def stored(
        cls,
        rows: Sequence[tuple[int, Sequence[bytes], Mapping[str, str]]],
        cutoffs: int,
        measures: int = 3,
    ) -> ExactMeans:
        """From stored RunScore rows (queries, the sum columns, overflow)."""
        means = cls(len(rows), cutoffs, measures)
        if not rows:
            return means
        means.counts[:] = [queries for queries, _, _ in rows]
        # One buffer per measure for all runs: a single conversion instead of one per run.
        for m in range(measures):
            packed = b"".join(sums[m] for _, sums, _ in rows)
            means.sums[:, m] = score_bytes.unpack_sums(packed, cutoffs * len(rows)).reshape(
                len(rows), cutoffs, exact_arrays.LIMBS
            )
        for r, (_, _, overflow) in enumerate(rows):
            for key, text in overflow.items():
                measure, index = score_bytes.overflow_place(key)
                means.big[(r, measure, index)] = exact.total_from_text(text)
                means.sums[r, measure, index] = 0
        return means

    def move(self, rows: IntArray, old: FloatArray, new: FloatArray) -> None:
        """Replace values `old` by `new` ((n, measures, K) each, 0.0 where absent) in runs
        `rows`."""
        if not len(rows):
            return
        fits = exact_arrays.on_grid(old) & exact_arrays.on_grid(new)
        for r, measure, index in self.big:
            at = np.flatnonzero(rows == r)
            fits[at, measure, index] = False  # a sum kept exactly stays so
        if not fits.all():
            for i, measure, index in zip(*np.nonzero(~fits), strict=True):
                key = (int(rows[i]), int(measure), int(index))
                total = self.big.get(key)
                if total is None:
                    total = exact_arrays.to_total(self.sums[key])
                    self.sums[key] = 0
                self.big[key] = (
                    total - exact.scaled(float(old[i, measure, index]))
                    + exact.scaled(float(new[i, measure, index]))
                )  # fmt: skip
            old = np.where(fits, old, 0.0)
            new = np.where(fits, new, 0.0)
        self.sums[rows] = exact_arrays.fold(self.sums[rows], old, new)

    def spill(self, rows: IntArray) -> None:
        """Move the sums of runs `rows` that their stored form cannot hold (see
        `score_bytes.packable`) to `big`, exactly; call before packing them."""
        fits = score_bytes.packable(self.sums[rows])
        if fits.all():
            return
        for i, measure, index in zip(*np.nonzero(~fits), strict=True):
            key = (int(rows[i]), int(measure), int(index))
            self.big[key] = exact_arrays.to_total(self.sums[key])
            self.sums[key] = 0

    def overflow(self, rows: IntArray) -> list[dict[str, str]]:
        """Each of runs `rows`' sums kept off the limbs, as exact texts ("measure:position")."""
        overflow: list[dict[str, str]] = [{} for _ in rows]
        if self.big:
            position = {int(r): i for i, r in enumerate(rows)}
            for (r, measure, index), total in self.big.items():
                i = position.get(r)
                if i is not None:
                    key = score_bytes.overflow_key(measure, index)
                    overflow[i][key] = exact.total_to_text(total)
        return overflow


def mean_values(matrix: FloatArray) -> FloatArray:
    """The (runs, 3, K) values that feed the run means, from a (runs, 4, K) score matrix."""
    return matrix[:, MEAN_ROWS, :]


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
