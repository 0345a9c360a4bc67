"""PURE: one query's rankings reduced to where they hold its qrels documents: all measures read."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from annotations.metrics.ndcg_arrays import _CHUNK, _ids, _IdTable

__all__ = ["QrelsRanks", "equivalent_rankings", "joined", "qrels_ranks"]


@dataclass(frozen=True)
class QrelsRanks:
    """Every run's ranking of one query reduced to what every measure reads of it.

    A measure reads a ranking's length and the grade and rank of each of its results; a
    result outside the qrels has no grade, and which document it is never matters. So a
    ranking is its length plus, in rank order, the 0-based positions where it holds a
    document of `documents` (the qrels' document ids) and that document's index there.
    Entries are grouped by run (`rows` ascending), positions ascending within a run.
    """

    documents: NDArray[np.int64]
    lengths: NDArray[np.int64]
    rows: NDArray[np.int64]
    positions: NDArray[np.int64]
    indices: NDArray[np.int64]

    @property
    def runs(self) -> int:
        return int(self.lengths.size)


def qrels_ranks(
    sequences: Sequence[Sequence[int] | NDArray[np.int64]], documents: NDArray[np.int64]
) -> QrelsRanks:
    """Where each ranking (document ids in effective order) holds one of `documents` (unique
    ids; sorted, so that rankings reduced apart share the indices), all of each ranking read."""
    table = _IdTable(documents)
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    rows, positions, indices = [], [], []
    pieces: list[Sequence[int] | NDArray[np.int64]] = []
    first, count = 0, 0

    def look_up(last: int) -> None:
        # The ids of runs first..last as one array: each one found, and where.
        place = table.find(_ids(pieces, count))
        hit = np.flatnonzero(place != table.empty)
        ends = np.cumsum(lengths[first : last + 1])
        row = np.searchsorted(ends, hit, side="right")
        rows.append(row + first)
        positions.append(hit - (ends - lengths[first : last + 1])[row])
        indices.append(place[hit])

    # About _CHUNK ids converted and looked up at a time (see ndcg_arrays._CHUNK).
    for run, sequence in enumerate(sequences):
        pieces.append(sequence)
        count += len(sequence)
        if count >= _CHUNK:
            look_up(run)
            pieces, first, count = [], run + 1, 0
    look_up(len(sequences) - 1)
    return QrelsRanks(
        documents, lengths, np.concatenate(rows), np.concatenate(positions), np.concatenate(indices)
    )


def joined(first: QrelsRanks, second: QrelsRanks) -> QrelsRanks:
    """The runs of `first`, then those of `second` (reduced for the same documents)."""
    if not second.runs:
        return first
    if not first.runs:
        return second
    return QrelsRanks(
        first.documents,
        np.concatenate([first.lengths, second.lengths]),
        np.concatenate([first.rows, second.rows + first.runs]),
        np.concatenate([first.positions, second.positions]),
        np.concatenate([first.indices, second.indices]),
    )


def equivalent_rankings(ranks: QrelsRanks) -> list[NDArray[np.int64]]:
    """Rankings every measure scores as the reduced ones: each as long, the qrels documents
    where they were, and elsewhere ids below all of them, which no grade names (distinct, as
    the ids of a ranking are: a lookup finds each absent one as quickly as a real one)."""
    if not ranks.runs:
        return []
    ends = np.cumsum(ranks.lengths)
    below = min(int(ranks.documents.min()), 0) if ranks.documents.size else 0
    flat = below - 1 - np.arange(int(ends[-1]), dtype=np.int64)
    flat[(ends - ranks.lengths)[ranks.rows] + ranks.positions] = ranks.documents[ranks.indices]
    return np.split(flat, ends[:-1])
