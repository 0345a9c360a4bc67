"""The leaderboard's all-pairs significance: a randomised Tukey HSD pass over a snapshot.

The leaderboard's rows cost milliseconds; testing every pair of runs costs seconds (110 runs
x 249 queries x 10,000 permutations: about 2.5 s). So the snapshot is computed in two
passes: the first (``snapshots.leaderboard_refresh``) stores the rows and the per-query
matrix they were computed from; this second pass, later, reads that matrix, runs the HSD
and stores the letters, below-best marks and the p-value matrix beside the rows under the
rows' stamp. A worker runs it as a task of its own after the rows (``refresh_work``);
without one, the next read of a current snapshot does. Until then pages show the letters of
the last pass, marked as being recomputed. The first read after a judgement is not slowed.

Fixed: seed ``HSD_SEED``, ``alpha`` ``ALPHA``, ``HSD_PERMUTATIONS`` permutations, reduced
(in steps of 1,000, at least ``MIN_PERMUTATIONS``) when runs x queries x permutations would
pass ``HSD_BUDGET`` so one pass stays within a few seconds on a large leaderboard.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotations.metrics.hsd import randomised_tukey_hsd
from annotations.models import Collection, LeaderboardSnapshot, Query
from annotations.selectors.leaderboards import (
    ALPHA,
    HSD_PERMUTATIONS,
    HSD_SEED,
    Significance,
)

# runs x queries x permutations of one pass: what keeps a pass on a large leaderboard within
# a few seconds of the derived worker (benchmarks/bench_statistics.py measures it).
HSD_BUDGET = 500_000_000
MIN_PERMUTATIONS = 1_000
FloatArray = npt.NDArray[np.float64]


def hsd_permutations(runs: int, queries: int) -> int:
    """The permutations one pass uses: ``HSD_PERMUTATIONS`` unless the matrix is so large
    that they would pass the budget; then the most whole thousands that fit, at least
    ``MIN_PERMUTATIONS``."""
    cells = runs * queries
    if cells == 0 or cells * HSD_PERMUTATIONS <= HSD_BUDGET:
        return HSD_PERMUTATIONS
    return max(MIN_PERMUTATIONS, HSD_BUDGET // cells // 1000 * 1000)


def significance_compute(
    *, stamp: str, run_ids: list[int], matrix: FloatArray
) -> tuple[dict[str, Any], bytes]:
    """The stored form of the HSD over ``matrix`` (runs in ``run_ids`` order x queries): the
    JSON document (settings, letters, below-best and p against the best per run) and the
    runs x runs adjusted p-values as float64 bytes."""
    started = time.perf_counter()
    runs, queries = matrix.shape
    if runs == 0 or queries == 0:  # nothing to compare on: one group
        letters = ["a"] * runs
        below = [False] * runs
        p = np.ones((runs, runs), dtype=np.float64)
        critical: float | None = None
        permutations = HSD_PERMUTATIONS
    else:
        permutations = hsd_permutations(runs, queries)
        result = randomised_tukey_hsd(matrix, permutations=permutations, seed=HSD_SEED, alpha=ALPHA)
        letters, below, p = result.letters(), result.below_best(), result.p_adjusted
        critical = result.critical if np.isfinite(result.critical) else None
    best = int(np.argmax(matrix.mean(axis=1))) if runs and queries else 0
    document = {
        "stamp": stamp,
        "alpha": ALPHA,
        "permutations": permutations,
        "reduced": permutations < HSD_PERMUTATIONS,
        "seed": HSD_SEED,
        "queries": queries,
        "critical": critical,
        "seconds": time.perf_counter() - started,
        "computed_at": timezone.now().isoformat(),
        "runs": [
            [run_id, letters[i], bool(below[i]), float(p[best, i]) if runs else 1.0]
            for i, run_id in enumerate(run_ids)
        ],
    }
    return document, np.ascontiguousarray(p, dtype=np.float64).tobytes()


def significance_of(document: dict[str, Any]) -> Significance | None:
    """The stored document as a ``Significance`` (None before the first pass)."""
    if not document or not isinstance(document.get("runs"), list):
        return None
    runs = [entry for entry in document["runs"] if isinstance(entry, list) and len(entry) == 4]
    computed = document.get("computed_at")
    return Significance(
        stamp=str(document.get("stamp", "")),
        alpha=float(document.get("alpha", ALPHA)),
        permutations=int(document.get("permutations", HSD_PERMUTATIONS)),
        seed=int(document.get("seed", HSD_SEED)),
        queries=int(document.get("queries", 0)),
        critical=document.get("critical"),
        seconds=float(document.get("seconds", 0.0)),
        computed_at=parse_datetime(computed) if isinstance(computed, str) else None,
        run_ids=tuple(int(entry[0]) for entry in runs),
        letters={int(entry[0]): str(entry[1]) for entry in runs},
        below_best={int(entry[0]): bool(entry[2]) for entry in runs},
        p_best={int(entry[0]): float(entry[3]) for entry in runs},
        reduced=bool(document.get("reduced", False)),
    )


def significance_refresh(*, collection: Collection, k: int) -> bool | None:
    """Run the HSD pass for the stored snapshot at k if it is behind the snapshot's rows.

    True when it computed, False when there was nothing to do, None when the snapshot holds
    no usable per-query matrix (stored by older code): its rows must be computed again first.
    The result is stored only if the rows are still those it was computed from.
    """
    snapshot = (
        LeaderboardSnapshot.objects.filter(collection=collection, k=k)
        .only("id", "stamp", "rows", "query_ids", "per_query", "significance")
        .first()
    )
    if snapshot is None or (snapshot.significance or {}).get("stamp") == snapshot.stamp:
        return False
    run_ids = [int(row["run"]) for row in snapshot.rows]
    raw = bytes(snapshot.per_query)
    queries = len(snapshot.query_ids)
    if len(raw) != 8 * len(run_ids) * queries or (run_ids and not raw and queries):
        return None
    matrix = np.frombuffer(raw, dtype=np.float64).reshape(len(run_ids), queries)
    document, pairs = significance_compute(stamp=snapshot.stamp, run_ids=run_ids, matrix=matrix)
    LeaderboardSnapshot.objects.filter(pk=snapshot.pk, stamp=snapshot.stamp).update(
        significance=document, pairs=pairs
    )
    return True


@dataclass(frozen=True)
class SignificanceDetail:
    """What the significance page draws: the pass's runs with their p-value matrix, and the
    per-query matrix of the rows (runs in rank order x queries)."""

    significance: Significance | None
    names: dict[int, str]  # run id -> name, of the rows shown
    means: dict[int, float]
    pair_ids: list[int]  # the p-value matrix's order (runs of the pass still on the board)
    p_adjusted: FloatArray  # len(pair_ids) x len(pair_ids)
    row_ids: list[int]  # the per-query matrix's rows, rank order
    queries: list[tuple[str, str]]  # (qid, title) of its columns
    per_query: FloatArray
    stamp: str
    computed_at: datetime | None


def significance_detail(*, collection: Collection, k: int) -> SignificanceDetail | None:
    """The stored matrices of the snapshot at k (None before any snapshot). A read of one
    row and the queries' titles: nothing is computed."""
    snapshot = LeaderboardSnapshot.objects.filter(collection=collection, k=k).first()
    if snapshot is None:
        return None
    names = {int(row["run"]): str(row["name"]) for row in snapshot.rows}
    means = {int(row["run"]): float(row["ndcg"]) for row in snapshot.rows}
    significance = significance_of(snapshot.significance or {})
    pass_ids = list(significance.run_ids) if significance else []
    raw_pairs = bytes(snapshot.pairs)
    if len(raw_pairs) == 8 * len(pass_ids) ** 2 and pass_ids:
        full = np.frombuffer(raw_pairs, dtype=np.float64).reshape(len(pass_ids), len(pass_ids))
    else:
        full, pass_ids = np.ones((0, 0)), []
    keep = [i for i, run_id in enumerate(pass_ids) if run_id in names]
    row_ids = [int(row["run"]) for row in snapshot.rows]
    query_ids = [int(q) for q in snapshot.query_ids]
    raw = bytes(snapshot.per_query)
    if len(raw) == 8 * len(row_ids) * len(query_ids):
        per_query = np.frombuffer(raw, dtype=np.float64).reshape(len(row_ids), len(query_ids))
    else:
        per_query, query_ids = np.zeros((len(row_ids), 0)), []
    labels = {
        query_id: (qid, title)
        for query_id, qid, title in Query.objects.filter(id__in=query_ids)
        .values_list("id", "qid", "title")
        .order_by()
    }
    return SignificanceDetail(
        significance=significance,
        names=names,
        means=means,
        pair_ids=[pass_ids[i] for i in keep],
        p_adjusted=full[np.ix_(keep, keep)] if keep else np.ones((0, 0)),
        row_ids=row_ids,
        queries=[labels[q] for q in query_ids],
        per_query=per_query,
        stamp=snapshot.stamp,
        computed_at=snapshot.computed_at,
    )
