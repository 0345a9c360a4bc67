"""PURE: one query's scores for every run and cutoff at once (numpy), bit-identical to scoring."""

from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from annotations.metrics.ndcg import check_cutoffs, discounts, gain_function, idcgs_for

__all__ = ["MEASURES", "ordered_means", "ranks_score_matrix", "score_matrix"]

MEASURES: tuple[str, ...] = ("ndcg", "dcg", "judged", "ndcg_condensed")

# The grade of an id absent from grades: query_scores treats an absent id and a negative
# grade alike (unjudged, no gain).
_UNGRADED = -1
# Ids converted and looked up at a time: the temporaries of a whole query's ids come from
# fresh memory (malloc's mmap, heap trimming) whose page faults cost more than the lookup
# (measured by bench_cutoffs.py at 110 runs x 100 cutoffs).
_CHUNK = 8192
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: scatters nearby ids

# scoring's own math.log2 doubles (np.log2 may differ in the last bit), as an array.
_discount_array: NDArray[np.float64] = np.array(discounts(1024), dtype=np.float64)


def _discount_table(length: int) -> NDArray[np.float64]:
    """discount[i] == math.log2(i + 2) for i < length at least."""
    global _discount_array
    table = _discount_array
    if table.size < length:
        table = np.array(discounts(length), dtype=np.float64)
        _discount_array = table  # rebound whole, like ndcg.discounts
    return table


class _IdTable:
    """Document ids -> their place among some keys, for whole arrays of ids: an open-addressing
    hash table (linear probing) in numpy arrays, 8 to 16 slots per key, so most lookups take
    one probe. On 33,000 ids it takes ~0.25 ms, np.searchsorted in the sorted ids ~1.7 ms
    (unsorted needles), ``map(grades.get, ...)`` ~2 ms."""

    def __init__(self, keys: NDArray[np.int64]) -> None:
        count = keys.size
        # Slot value ``count`` (`empty`) marks an empty slot and an absent id's place; its
        # key 0 may match an id 0 there, which then finds `empty` too.
        self.empty = count
        self.keys = np.append(keys, 0)
        bits = max(3, (8 * count).bit_length())
        self.shift = np.uint64(64 - bits)
        self.mask = (1 << bits) - 1
        self.slots = np.full(1 << bits, count, dtype=np.int64)
        pending, slot = np.arange(count), self._hash(keys)
        while pending.size:  # one write wins a contended free slot; the others probe on
            free = self.slots[slot] == count
            self.slots[slot[free]] = pending[free]
            placed = self.slots[slot] == pending
            pending, slot = pending[~placed], (slot[~placed] + 1) & self.mask

    def _hash(self, ids: NDArray[np.int64]) -> NDArray[np.int64]:
        return ((ids.view(np.uint64) * _FIBONACCI) >> self.shift).view(np.int64)

    def find(self, ids: NDArray[np.int64]) -> NDArray[np.int64]:
        """Each id's place among the keys; `empty` for an id that is not one of them."""
        slot = self._hash(ids)
        entry = self.slots[slot]
        found = self.keys[entry] == ids
        result = np.where(found, entry, self.empty)
        todo = np.flatnonzero(~found & (entry != self.empty))  # probe on until an empty slot
        slot = slot[todo]
        while todo.size:
            slot = (slot + 1) & self.mask
            entry = self.slots[slot]
            found = self.keys[entry] == ids[todo]
            result[todo[found]] = entry[found]
            going = ~found & (entry != self.empty)
            todo, slot = todo[going], slot[going]
        return result


class _GradeTable(_IdTable):
    """Document ids -> grade codes (`_IdTable` over the graded ids).

    A code indexes ``gains`` (scoring's gain function applied once per distinct grade: the
    very doubles query_scores adds), ``gaining`` and ``judged``; codes are one byte wide for
    up to 255 distinct grades, which keeps the arrays of a whole query small.
    """

    def __init__(self, grades: Mapping[int, int], gain_of: Callable[[int], float]) -> None:
        count = len(grades)
        super().__init__(np.fromiter(grades.keys(), dtype=np.int64, count=count))
        values = np.fromiter(grades.values(), dtype=np.int64, count=count)
        distinct, inverse = np.unique(np.append(values, _UNGRADED), return_inverse=True)
        self.grades = distinct  # the grade of each code, _UNGRADED's included
        self.gains = np.array([gain_of(int(grade)) for grade in distinct], dtype=np.float64)
        self.gaining = self.gains > 0.0
        self.judged = distinct >= 0
        # The code at `empty` is _UNGRADED's, as an absent id's should be.
        self.codes = inverse.reshape(-1).astype(np.min_scalar_type(distinct.size))
        self.ungraded = self.codes[count]

    def __call__(self, ids: NDArray[np.int64]) -> NDArray[np.unsignedinteger[Any]]:
        return self.codes[self.find(ids)]  # type: ignore[no-any-return]

    def read(
        self,
        sequences: list[Sequence[int] | NDArray[np.int64]],
        todo: NDArray[np.int64],
        begins: NDArray[np.int64],
        ends: NDArray[np.int64],
    ) -> NDArray[np.unsignedinteger[Any]]:
        """The codes of sequences[run][begin:end] for the runs in todo, one after the other,
        converted and looked up about _CHUNK ids at a time."""
        parts, pieces, count = [], [], 0
        for run, begin, end in zip(todo.tolist(), begins.tolist(), ends.tolist(), strict=True):
            pieces.append(sequences[run][begin:end])
            count += end - begin
            if count >= _CHUNK:
                parts.append(self(_ids(pieces, count)))
                pieces, count = [], 0
        parts.append(self(_ids(pieces, count)))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _ids(pieces: list[Sequence[int] | NDArray[np.int64]], count: int) -> NDArray[np.int64]:
    """The ids of consecutive ranking slices as one array (arrays joined without Python ints)."""
    if pieces and all(isinstance(piece, np.ndarray) for piece in pieces):
        return np.concatenate(pieces).astype(np.int64, copy=False)  # type: ignore[arg-type]
    return np.fromiter(chain.from_iterable(pieces), np.int64, count)


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
    rankings: Mapping[int, Sequence[int] | NDArray[np.int64]],
    grades: Mapping[int, int],
    ks: Sequence[int],
    scheme: str,
    idcgs: Mapping[int, float] | None = None,
) -> tuple[list[int], NDArray[np.float64]]:
    """(run ids in the order of the rows, scores of shape (runs, 4, len(ks))) with the four
    measures in the order MEASURES = ("ndcg", "dcg", "judged", "ndcg_condensed").

    Every value equals the same field of ``ndcg.query_scores(rankings[run], grades, ks,
    scheme, idcgs)[k]`` bit for bit. The columns follow the cutoffs ascending (a repeated k
    counts once, as there). Bad ks, an unknown scheme or idcgs lacking a cutoff: ValueError.
    Document ids and grades must be ints within int64 (numpy converts them unchecked, for
    speed: a str "12" would read as 12).
    """
    cutoffs = check_cutoffs(ks)
    gain_of = gain_function(scheme)
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
    # Condensed positions are below both max(ks) and the longest ranking, as positions are.
    discount = _discount_table(depth)
    table = _GradeTable(grades, gain_of)

    # Top max(ks) of every run as one (runs, depth) matrix of grade codes, short rankings
    # padded with _UNGRADED's, which neither gains nor counts as judged.
    read = np.minimum(lengths, depth)
    codes = table.read(sequences, np.arange(len(runs)), np.zeros_like(read), read)
    if read.min() < depth:
        top = np.full((len(runs), depth), table.ungraded)
        top[np.arange(depth) < read[:, None]] = codes  # row by row, like the concatenation
    else:
        top = codes.reshape(len(runs), depth)
    gains = table.gains[top]
    dcg = np.cumsum(gains / discount[:depth], axis=1)[:, np.minimum(ks_array, depth) - 1]
    counts = np.cumsum(table.judged[top], axis=1, dtype=np.int32)
    judged_at = counts[:, np.minimum(ks_array, depth) - 1] / ks_array

    # The condensed list: each gaining judged document at its rank among the judged ones.
    rows, columns = np.nonzero(table.gaining[top])
    condensed_rows, condensed_positions = [rows], [counts[rows, columns] - 1]
    condensed_gains = [gains[rows, columns]]
    seen = counts[:, -1].astype(np.int64)
    todo = np.flatnonzero((seen < deepest) & (read < lengths))
    while todo.size:  # runs with fewer than max(ks) judged documents read further
        begins, have = read[todo], seen[todo]
        # Enough for the missing judged documents at the rate seen so far, plus a margin;
        # no judged document yet: double the depth. Never the whole ranking at once.
        more = np.where(
            have > 0, (deepest - have) * begins * 9 // (8 * np.maximum(have, 1)) + 8, begins
        )
        ends = np.minimum(lengths[todo], begins + more)
        flat = table.read(sequences, todo, begins, ends)
        judged_so_far = np.cumsum(table.judged[flat], dtype=np.int32)
        last = np.cumsum(ends - begins) - 1  # each run's last entry in flat
        before = np.concatenate(([0], judged_so_far[last[:-1]]))  # flat's judged before a run
        hits = np.flatnonzero(table.gaining[flat])
        owner = np.searchsorted(last, hits)  # index into todo of each hit's run
        positions = have[owner] + judged_so_far[hits] - before[owner] - 1
        keep = positions < deepest
        condensed_rows.append(todo[owner[keep]])
        condensed_positions.append(positions[keep])
        condensed_gains.append(table.gains[flat[hits[keep]]])
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


class Ranks(Protocol):
    """What ``ranks_score_matrix`` reads of ``qrels_ranks.QrelsRanks``: named here, not
    imported, since that module builds on this one."""

    @property
    def documents(self) -> NDArray[np.int64]: ...
    @property
    def lengths(self) -> NDArray[np.int64]: ...
    @property
    def rows(self) -> NDArray[np.int64]: ...
    @property
    def positions(self) -> NDArray[np.int64]: ...
    @property
    def indices(self) -> NDArray[np.int64]: ...
    @property
    def runs(self) -> int: ...


def ranks_score_matrix(
    ranks: Ranks,
    grades: Mapping[int, int],
    ks: Sequence[int],
    scheme: str,
    idcgs: Mapping[int, float] | None = None,
) -> NDArray[np.float64]:
    """`score_matrix` of the rankings `ranks` reduces (a row per run, in its order), bit for
    bit, from the ranks of their qrels documents alone; `ranks.documents` must hold every
    document of `grades`.

    The same sums in the same order: each run's terms placed at their ranks in a matrix of
    zeros (every other rank adds nothing: no gain, not judged) and added along the rows."""
    cutoffs = check_cutoffs(ks)
    if idcgs is None:
        idcgs = idcgs_for(grades.values(), cutoffs, scheme)
    missing = [k for k in cutoffs if k not in idcgs]
    if missing:
        raise ValueError(f"idcgs lacks cutoffs {missing}")
    runs = ranks.runs
    scores = np.zeros((runs, len(MEASURES), len(cutoffs)), dtype=np.float64)
    deepest = cutoffs[-1]
    depth = min(deepest, int(ranks.lengths.max(initial=0)))
    if depth == 0:  # no runs, or only empty rankings
        return scores
    ks_array = np.array(cutoffs, dtype=np.int64)
    table = _GradeTable(grades, gain_function(scheme))
    # Codes as indices of the machine's width: numpy looks them up several times faster.
    graded = table(ranks.documents).astype(np.intp)
    # A run's first max(ks) judged results are among its first max(ks) + u results in the
    # qrels, u the qrels documents not judged (each in a ranking once at most): only those,
    # whose ranks also hold the top max(ks), are read.
    unjudged = int(np.count_nonzero(~table.judged[graded]))
    first = np.searchsorted(ranks.rows, np.arange(runs))
    read = np.flatnonzero(np.arange(ranks.rows.size) - first[ranks.rows] < deepest + unjudged)
    rows, positions = ranks.rows[read], ranks.positions[read]
    codes = graded[ranks.indices[read]]

    # DCG and judged@k: the gaining and the judged results of the top max(ks).
    judged = table.judged[codes]
    top = judged & (positions < depth)  # gaining results are judged ones
    top_rows, top_positions, top_codes = rows[top], positions[top], codes[top]
    gaining = table.gaining[top_codes]
    discount = _discount_table(depth)
    dcg = _cumulative_at(
        top_rows[gaining],
        top_positions[gaining],
        table.gains[top_codes[gaining]] / discount[top_positions[gaining]],
        (runs, depth),
        ks_array,
    )
    counted = np.zeros((runs, depth), dtype=np.int32)
    counted[top_rows, top_positions] = 1
    judged_at = np.cumsum(counted, axis=1)[:, np.minimum(ks_array, depth) - 1] / ks_array

    # The condensed list: each gaining judged result at its rank among the judged ones.
    listed = np.flatnonzero(judged)
    listed_rows = rows[listed]
    per_run = np.bincount(listed_rows, minlength=runs)
    places = np.arange(listed.size) - (np.cumsum(per_run) - per_run)[listed_rows]
    keep = table.gaining[codes[listed]] & (places < deepest)
    width = min(int(per_run.max(initial=0)), deepest)
    condensed = _cumulative_at(
        listed_rows[keep],
        places[keep],
        table.gains[codes[listed[keep]]] / _discount_table(max(width, 1))[places[keep]],
        (runs, width),
        ks_array,
    )

    idcg = np.array([idcgs[k] for k in cutoffs], dtype=np.float64)
    relevant = idcg > 0.0
    divisor = np.where(relevant, idcg, 1.0)  # no 0/0 warnings; those cells become 0.0
    scores[:, 0] = np.where(relevant, dcg / divisor, 0.0)
    scores[:, 1] = dcg
    scores[:, 2] = judged_at
    scores[:, 3] = np.where(relevant, condensed / divisor, 0.0)
    return scores


def ordered_means(values: NDArray[np.float64], counts: NDArray[np.bool_]) -> NDArray[np.float64]:
    """``ndcg.ordered_mean`` along the last axis of the values `counts` marks (broadcast to
    `values`), bit for bit: a double starting at +0.0, the counted values added left to
    right, divided by how many there are; 0.0 where none is counted.

    The values not counted become -0.0, the one double that leaves every sum as it is
    (x + -0.0 == x, the sign of zero included), and np.add.accumulate adds strictly left to
    right, so its last partial sum is the loop's total."""
    mask = np.broadcast_to(counts, values.shape)
    filled = np.where(mask, values, -0.0)
    start = np.zeros((*values.shape[:-1], 1), dtype=np.float64)
    totals = np.add.accumulate(np.concatenate([start, filled], axis=-1), axis=-1)[..., -1]
    how_many = mask.sum(axis=-1)
    return np.where(how_many > 0, totals / np.maximum(how_many, 1), 0.0)
