"""PURE: one query's scores for every run and cutoff at once (numpy), bit-identical to scoring."""

from collections.abc import Callable, Mapping, Sequence
from itertools import chain, repeat

import numpy as np
from numpy.typing import NDArray

from annotations.scoring import _check_ks, _discounts, _gain_function, idcgs_for

__all__ = ["MEASURES", "score_matrix"]

MEASURES: tuple[str, ...] = ("ndcg", "dcg", "judged", "ndcg_condensed")

# grades.get's default, and the padding of short rankings: query_scores treats an absent id
# and a negative grade alike (unjudged, no gain).
_UNGRADED = -1

# scoring's own math.log2 doubles (np.log2 may differ in the last bit), as an array.
_discount_array: NDArray[np.float64] = np.array(_discounts(1024), dtype=np.float64)


def _discount_table(length: int) -> NDArray[np.float64]:
    """discount[i] == math.log2(i + 2) for i < length at least."""
    global _discount_array
    table = _discount_array
    if table.size < length:
        table = np.array(_discounts(length), dtype=np.float64)
        _discount_array = table  # rebound whole, like scoring._discounts
    return table


def _gain_table(
    grades: Mapping[int, int], gain_of: Callable[[int], float]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The distinct grades (with _UNGRADED) ascending, and scoring's gain of each: the very
    doubles query_scores adds, computed once per grade rather than per document."""
    distinct = sorted({*grades.values(), _UNGRADED})
    return np.array(distinct, dtype=np.int64), np.array(list(map(gain_of, distinct)))


def _cumulative_at(
    rows: NDArray[np.intp],
    columns: NDArray[np.int64],
    terms: NDArray[np.float64],
    shape: tuple[int, int],
    picks: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Running sums along each row of a zero matrix holding ``terms``, read at ``picks``.

    np.cumsum adds strictly sequentially, and the +0.0 of the empty cells leaves a running
    total of positive terms (which starts at +0.0) unchanged: query_scores' ``total +=``.
    """
    matrix = np.zeros((shape[0], max(shape[1], 1)), dtype=np.float64)
    matrix[rows, columns] = terms
    return np.cumsum(matrix, axis=1)[:, np.minimum(picks, matrix.shape[1]) - 1]


def score_matrix(
    rankings: Mapping[int, Sequence[int]],
    grades: Mapping[int, int],
    ks: Sequence[int],
    scheme: str,
    idcgs: Mapping[int, float] | None = None,
) -> tuple[list[int], NDArray[np.float64]]:
    """(run ids in the order of the rows, scores of shape (runs, 4, len(ks))) with the four
    measures in the order MEASURES = ("ndcg", "dcg", "judged", "ndcg_condensed").

    Every value equals the same field of ``scoring.query_scores(rankings[run], grades, ks,
    scheme, idcgs)[k]`` bit for bit. The columns follow the cutoffs ascending (a repeated k
    counts once, as there). Bad ks, an unknown scheme or idcgs lacking a cutoff: ValueError.
    """
    cutoffs = _check_ks(ks)
    gain_of = _gain_function(scheme)
    if idcgs is None:
        idcgs = idcgs_for(grades.values(), cutoffs, scheme)
    missing = [k for k in cutoffs if k not in idcgs]
    if missing:
        raise ValueError(f"idcgs lacks cutoffs {missing}")
    runs = list(rankings)
    scores = np.zeros((len(runs), len(MEASURES), len(cutoffs)), dtype=np.float64)
    sequences = [rankings[run] for run in runs]
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(runs))
    deepest = cutoffs[-1]
    depth = min(deepest, int(lengths.max(initial=0)))
    if depth == 0:  # no runs, or only empty rankings
        return runs, scores
    ks_array = np.array(cutoffs, dtype=np.int64)
    distinct, gain_of_distinct = _gain_table(grades, gain_of)
    discount = _discount_table(deepest)
    get = grades.get  # dict lookups in C: cheaper than any numpy search over document ids

    # Top max(ks) of every run as one (runs, depth) matrix of grades, short rankings padded
    # with _UNGRADED, which neither gains nor counts as judged.
    rows_of_grades = (
        map(get, ranking[:depth], repeat(_UNGRADED))
        if len(ranking) >= depth
        else chain(map(get, ranking, repeat(_UNGRADED)), repeat(_UNGRADED, depth - len(ranking)))
        for ranking in sequences
    )
    top = np.fromiter(chain.from_iterable(rows_of_grades), np.int64, len(runs) * depth)
    top = top.reshape(len(runs), depth)
    gains = gain_of_distinct[np.searchsorted(distinct, top)]
    dcg = np.cumsum(gains / discount[:depth], axis=1)[:, np.minimum(ks_array, depth) - 1]
    counts = np.cumsum(top >= 0, axis=1, dtype=np.int64)
    judged_at = counts[:, np.minimum(ks_array, depth) - 1] / ks_array

    # The condensed list: each gaining judged document at its rank among the judged ones.
    rows, columns = np.nonzero(gains > 0.0)
    condensed_rows, condensed_positions = [rows], [counts[rows, columns] - 1]
    condensed_gains = [gains[rows, columns]]
    seen = counts[:, -1].copy()
    read = np.minimum(lengths, depth)
    todo = np.flatnonzero((seen < deepest) & (read < lengths))
    while todo.size:  # runs with fewer than max(ks) judged documents read further
        begins, have = read[todo], seen[todo]
        # Enough for the missing judged documents at the rate seen so far, plus a margin;
        # no judged document yet: double the depth. Never the whole ranking at once.
        more = np.where(
            have > 0, (deepest - have) * begins * 5 // (4 * np.maximum(have, 1)) + 8, begins
        )
        ends = np.minimum(lengths[todo], begins + more)
        pieces = (
            sequences[run][begin:end]
            for run, begin, end in zip(todo.tolist(), begins.tolist(), ends.tolist(), strict=True)
        )
        sizes = ends - begins
        flat = np.fromiter(
            map(get, chain.from_iterable(pieces), repeat(_UNGRADED)), np.int64, int(sizes.sum())
        )
        judged_so_far = np.cumsum(flat >= 0, dtype=np.int64)
        last = np.cumsum(sizes) - 1  # each run's last entry in flat
        before = np.concatenate(([0], judged_so_far[last[:-1]]))  # flat's judged before a run
        hits = np.flatnonzero(flat > 0)
        owner = np.searchsorted(last, hits)  # index into todo of each hit's run
        positions = have[owner] + judged_so_far[hits] - before[owner] - 1
        keep = positions < deepest
        condensed_rows.append(todo[owner[keep]])
        condensed_positions.append(positions[keep])
        condensed_gains.append(gain_of_distinct[np.searchsorted(distinct, flat[hits[keep]])])
        seen[todo] = have + judged_so_far[last] - before
        read[todo] = ends
        todo = todo[(seen[todo] < deepest) & (ends < lengths[todo])]

    positions = np.concatenate(condensed_positions)
    condensed = _cumulative_at(
        np.concatenate(condensed_rows),
        positions,
        np.concatenate(condensed_gains) / discount[positions],
        (len(runs), min(int(seen.max()), deepest)),
        ks_array,
    )

    idcg = np.array([idcgs[k] for k in cutoffs], dtype=np.float64)
    relevant = idcg > 0.0
    divisor = np.where(relevant, idcg, 1.0)  # no 0/0 warnings; those cells become 0.0
    scores[:, 0] = np.where(relevant, dcg / divisor, 0.0)
    scores[:, 1] = dcg
    scores[:, 2] = judged_at
    scores[:, 3] = np.where(relevant, condensed / divisor, 0.0)
    return runs, scores
