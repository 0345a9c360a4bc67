"""Kept qrels ranks (`RankingQrels` rows): what the measures read of whole rankings, found again
where they are not current, written back."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from annotations.bulk import bulk_insert, bulk_update
from annotations.formats import ranking_bytes
from annotations.metrics.measures import Measure, depth_read
from annotations.metrics.qrels_ranks import QrelsRanks, joined, qrels_ranks
from annotations.models import HEAD_IDS, RankingQrels

# A ranking as the reads give it with its kept ranks: (run, size, its ids or their head,
# ranking id, and the kept ranks' ranking id, digest and packed ranks, None where none).
RankingRow = tuple[int, int, Any, int, int | None, bytes | None, bytes | None]
KEPT_COLUMNS = ("ranking_id", "digest", "ranks")


def keeps_ranks(measures: Sequence[Measure]) -> bool:
    """Whether scoring reads the kept ranks: the measures read the rankings deeper than their
    in-row heads (AP, RR, R-prec, bpref, infAP, nDCG without a cutoff read them whole)."""
    depths = [depth_read(measure) for measure in measures]
    return any(depth is None or depth > HEAD_IDS for depth in depths)


@dataclass
class KeptRanks:
    """One query's rankings reduced to their qrels ranks (`ranks`, a row per run of
    `run_ids`) and the kept rows that must change: (run, ranking id, digest, ranks) to
    insert and to update."""

    run_ids: list[int]
    ranks: QrelsRanks
    inserts: list[tuple[int, int, bytes, bytes]] = field(default_factory=list)
    updates: list[tuple[int, int, bytes, bytes]] = field(default_factory=list)
    # Runs whose kept row was current (its ranking, these documents) yet held other ranks.
    mismatched: list[int] = field(default_factory=list)


def qrels_documents(grades: Mapping[int, int]) -> npt.NDArray[np.int64]:
    """The query's qrels documents, ascending (the order kept ranks index)."""
    return np.sort(np.fromiter(grades.keys(), dtype=np.int64, count=len(grades)))


def stale_runs(rows: Iterable[RankingRow], documents: npt.NDArray[np.int64]) -> list[int]:
    """The runs whose kept ranks are not those of their current ranking for `documents`."""
    digest = ranking_bytes.qrels_digest(documents)
    return [row[0] for row in rows if not _current(row, digest)]


def _current(row: RankingRow, digest: bytes) -> bool:
    _, _, _, ranking_id, kept_ranking, kept_digest, _ = row
    return kept_ranking == ranking_id and kept_digest is not None and bytes(kept_digest) == digest


def kept_ranks(
    rows: Sequence[RankingRow],
    documents: npt.NDArray[np.int64],
    whole: Mapping[int, Sequence[int] | npt.NDArray[np.int64]],
) -> KeptRanks:
    """The reduced rankings of `rows`: those of `whole` (run -> document ids) found afresh
    and rewritten where their kept rows differ, the others unpacked from their kept rows,
    which must be current (`stale_runs`)."""
    digest = ranking_bytes.qrels_digest(documents)
    kept = [row for row in rows if row[0] not in whole]
    found = [row for row in rows if row[0] in whole]
    result = KeptRanks(
        [row[0] for row in kept + found],
        ranking_bytes.unpack_qrels_ranks(
            documents,
            np.fromiter((row[1] for row in kept), dtype=np.int64, count=len(kept)),
            [row[6] for row in kept],  # type: ignore[misc]
        ),
    )
    if not found:
        return result
    fresh = qrels_ranks([whole[row[0]] for row in found], documents)
    result.ranks = joined(result.ranks, fresh)
    for row, packed in zip(found, ranking_bytes.pack_qrels_ranks(fresh), strict=True):
        run_id, _, _, ranking_id, kept_ranking, kept_digest, kept_packed = row
        values = (run_id, ranking_id, digest, packed)
        if kept_digest is None:
            result.inserts.append(values)
        elif (kept_ranking, bytes(kept_digest), bytes(kept_packed or b"")) != values[1:]:
            result.updates.append(values)
            if _current(row, digest):
                result.mismatched.append(run_id)
    return result


def kept_ranks_write(
    batch: Sequence[tuple[int, KeptRanks]], *, inserts: bool = True, updates: bool = True
) -> None:
    """Write the kept rows that changed, of (query id, its kept ranks) pairs (inserts and
    updates apart if asked: COPY cannot run inside a pipeline, the updates may)."""
    if inserts:
        bulk_insert(
            RankingQrels,
            ("run_id", "query_id", *KEPT_COLUMNS),
            [
                (run_id, query_id, *values)
                for query_id, kept in batch
                for run_id, *values in kept.inserts
            ],
            binary=True,
        )
    if updates:
        bulk_update(
            RankingQrels,
            key=("query_id", "run_id"),
            columns=KEPT_COLUMNS,
            rows=[
                (query_id, run_id, *values)
                for query_id, kept in batch
                for run_id, *values in kept.updates
            ],
        )
