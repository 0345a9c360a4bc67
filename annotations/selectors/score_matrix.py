"""Every scored run's stored values at one k as arrays: the input of a leaderboard's rows.

A leaderboard needs, per run, nDCG@k, nDCG'@k and judged@k of every evaluated query and
their means in trec_eval's order. Read as Python dicts that is hundreds of thousands of
objects at 500 runs; here they are one (runs x measures x queries) array, read whole
(``score_matrix_read``) or, after a judgement, patched where the stored values moved
(``score_matrix_patch``: the few queries recomputed since; ``score_matrix_held`` keeps
the last one read per process and knows which), and every mean is one sequential sum per
row (``matrix_means``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from annotations.formats import score_bytes
from annotations.metrics.ndcg_arrays import ordered_means
from annotations.models import Collection, IdealScore
from annotations.selectors.process_held import ProcessHeld
from annotations.selectors.stored_scores import stored_columns, stored_rows_at

# The measures a leaderboard row shows, in the order of the matrix's second axis.
MEASURES = ("ndcg", "ndcg_condensed", "judged")
# Their positions in ``stored_rows_at``'s tuples (ndcg, dcg, judged, ndcg_condensed).
_ROW_POSITIONS = (0, 3, 2)

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ScoreMatrix:
    """The stored values at k of `run_ids` over `query_ids` (evaluated, trec_eval's qid order).

    ``values[r, m, q]`` is measure ``MEASURES[m]`` of run r on query q, 0.0 where the run
    has no stored value (``answered[r, q]`` False): what zero mode counts for it.
    """

    run_ids: tuple[int, ...]
    query_ids: tuple[int, ...]
    values: FloatArray
    answered: BoolArray

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + self.answered.nbytes)


def score_matrix_read(
    collection: Collection, k: int, run_ids: Sequence[int], query_ids: Sequence[int]
) -> ScoreMatrix:
    """The matrix of `run_ids` over `query_ids`, read whole (one row per run on PostgreSQL)."""
    runs = tuple(run_ids)
    queries = tuple(query_ids)
    column = {query_id: q for q, query_id in enumerate(queries)}
    values = np.zeros((len(runs), len(MEASURES), len(queries)))
    answered = np.zeros((len(runs), len(queries)), dtype=bool)
    position = {run_id: r for r, run_id in enumerate(runs)}
    for run_id, (ids, measures) in stored_columns(collection, runs, k, MEASURES).items():
        r = position[run_id]
        places = np.fromiter((column.get(q, -1) for q in ids), dtype=np.int64, count=len(ids))
        kept = places >= 0
        if kept.any():
            targets = places[kept]
            values[r][:, targets] = np.asarray(measures, dtype=np.float64)[:, kept]
            answered[r, targets] = True
    return ScoreMatrix(runs, queries, values, answered)


def score_matrix_patch(
    kept: ScoreMatrix, collection: Collection, k: int, moved: Sequence[int]
) -> ScoreMatrix:
    """`kept` with the columns of the queries `moved` read again (every run's stored values
    of those queries); the other columns are taken as they are. The caller vouches that
    nothing else moved: the same runs, layout and settings, the same evaluated queries."""
    values = kept.values.copy()
    answered = kept.answered.copy()
    column = {query_id: q for q, query_id in enumerate(kept.query_ids)}
    position = {run_id: r for r, run_id in enumerate(kept.run_ids)}
    targets = [column[query_id] for query_id in moved]
    values[:, :, targets] = 0.0
    answered[:, targets] = False
    for run_id, query_id, found in stored_rows_at(collection, k, query_ids=list(moved)):
        r = position.get(run_id)
        if r is None:
            continue  # a run the leaderboard does not score in this layout
        q = column[query_id]
        values[r, :, q] = [found[i] for i in _ROW_POSITIONS]
        answered[r, q] = True
    return ScoreMatrix(kept.run_ids, kept.query_ids, values, answered)


def matrix_means(matrix: ScoreMatrix, *, zero: bool) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """(runs, measures) means in trec_eval's order (``ndcg_arrays.ordered_means``) and
    (runs,) how many queries each counts: every evaluated query in zero mode (trec_eval -c,
    0.0 where the run gave none), only those the run answered in skip mode."""
    mask = np.ones(matrix.answered.shape, dtype=bool) if zero else matrix.answered
    means = ordered_means(matrix.values, mask[:, None, :])
    return means, mask.sum(axis=-1).astype(np.int64)


# --- held between computations ------------------------------------------------------------

HELD_ENTRIES = 16  # (collection, k) pairs held per process
HELD_BYTES = 128_000_000  # of matrices held per process, all entries together
# Above this share of the queries moved, a whole read costs no more than the patch.
PATCH_SHARE = 0.25


@dataclass
class _Held:
    basis: tuple[object, ...]
    versions: dict[int, int]  # query id -> the scored version its column was read at
    matrix: ScoreMatrix


_held: ProcessHeld[_Held] = ProcessHeld(
    entries=lambda: HELD_ENTRIES, nbytes=lambda: HELD_BYTES, size=lambda h: h.matrix.nbytes
)


def score_matrix_is_held(*, collection_id: int, k: int) -> bool:
    """Whether this process holds a matrix of (collection, k) to patch."""
    return _held.peek((collection_id, k)) is not None


def score_matrix_forget(*, collection_id: int | None = None) -> None:
    """Drop the matrices held (of one collection, or all): the next read is whole."""
    _held.forget(collection_id=collection_id)


def score_matrix_held(
    collection: Collection, k: int, runs: Sequence[tuple[int, object, object]]
) -> ScoreMatrix:
    """The matrix of the scored `runs` ((id, updated, scored_at), by id) over the evaluated
    queries at k, equal to ``score_matrix_read``'s, reading again only the queries whose
    stored scores moved since this process last read them.

    Every write of a query's stored values marks its ``scored_version`` in the same
    transaction (``scores_recompute_query``); every other write of stored values (a run
    scored again, the collection rescored, a run or query deleted, new cutoffs) moves a
    run's ``scored_at`` or ``updated``, the set of runs or queries, or the layout: the
    basis read first. The versions are read before the values they stand for, so a column
    is never older than its version: a recomputation committed in between is read again
    next time. A missing or evicted entry only costs a whole read.
    """
    layout = score_bytes.layout(collection.sorted_cutoffs)
    basis: tuple[object, ...] = (layout, tuple(runs))
    evaluated = _evaluated_versions(collection, k)
    query_ids = tuple(query_id for query_id, _ in evaluated)
    versions = dict(evaluated)
    run_ids = [run_id for run_id, _, _ in runs]
    held = _held.peek((collection.id, k))  # shared: a held matrix is never written
    if held is not None and held.basis == basis and held.matrix.query_ids == query_ids:
        moved = [q for q in query_ids if held.versions.get(q) != versions[q]]
        if len(moved) > PATCH_SHARE * len(query_ids):
            matrix = score_matrix_read(collection, k, run_ids, query_ids)
        elif moved:
            matrix = score_matrix_patch(held.matrix, collection, k, moved)
        else:
            matrix = held.matrix
    else:
        matrix = score_matrix_read(collection, k, run_ids, query_ids)
    matrix.values.setflags(write=False)
    matrix.answered.setflags(write=False)
    _held.keep((collection.id, k), _Held(basis, versions, matrix))
    return matrix


def _evaluated_versions(collection: Collection, k: int) -> list[tuple[int, int]]:
    """(query id, scored version) of the evaluated queries at k, in trec_eval's qid order
    (``evaluated_queries``'), in one statement."""
    rows = IdealScore.objects.filter(query__collection=collection, k=k).values_list(
        "query_id", "query__qid", "query__scored_version"
    )
    return [(query_id, version) for query_id, _, version in sorted(rows, key=lambda r: r[1])]
