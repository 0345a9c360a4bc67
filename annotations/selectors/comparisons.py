"""Two runs compared query by query: differences, paired p-value, wins, ties and losses."""

from __future__ import annotations

from dataclasses import dataclass

from annotations.metrics import measures as measure_reference
from annotations.metrics import significance, significance_arrays
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.metrics.ndcg import ordered_mean
from annotations.models import Run
from annotations.selectors.measure_values import stored_measure
from annotations.selectors.scores_state import scores_state
from annotations.selectors.stored_scores import (
    evaluated_queries,
    paired_values,
    query_vector,
    stored_columns,
)

PERMUTATIONS = 10_000
PERMUTATION_SEED = 0


def paired_p_value(first: dict[int, float], second: dict[int, float]) -> float:
    """The paired randomization test's p-value between two runs' vectors (1.0: nothing shared)."""
    a, b = paired_values(first, second)
    if not a:
        return 1.0  # nothing in common: no evidence of a difference
    return significance_arrays.paired_randomization_tests(
        [(a, b)], permutations=PERMUTATIONS, seed=PERMUTATION_SEED
    )[0]


@dataclass(frozen=True)
class ComparisonRow:
    qid: str
    a: float
    b: float
    difference: float
    title: str = ""
    # judged@k of each run on the query (0.0 where the run gave no result)
    judged_a: float = 0.0
    judged_b: float = 0.0


@dataclass(frozen=True)
class Comparison:
    a: Run
    b: Run
    k: int
    rows: list[ComparisonRow]
    mean_a: float | None
    mean_b: float | None
    p_value: float | None
    wins: int
    ties: int
    losses: int
    pending: bool
    permutations: int = PERMUTATIONS
    seed: int = PERMUTATION_SEED
    measure: str = ""  # a kept measure's name; empty: nDCG@k

    @property
    def measure_label(self) -> str:
        return self.measure or f"nDCG@{self.k}"

    @property
    def mean_difference(self) -> float | None:
        if self.mean_a is None or self.mean_b is None:
            return None
        return self.mean_a - self.mean_b


def runs_compare(*, a: Run, b: Run, k: int, measure: Measure | None = None) -> Comparison:
    """Per-query differences a - b at k, the paired randomization p-value, wins/ties/losses.

    Over the queries both runs count (every evaluated query in zero mode, those both
    answered in skip mode), from stored per-query scores: nDCG@k's, or with ``measure`` (a
    kept one) that measure's, whose means are trec_eval's ``all`` over the same queries
    (``measures.summary``: counts summed). judged@k stays nDCG@k's.
    """
    collection = a.collection
    evaluated = evaluated_queries(collection, k)
    qids = {query_id: qid for query_id, qid, _ in evaluated}
    titles = {query_id: title for query_id, _, title in evaluated}
    columns = stored_columns(collection, [a.id, b.id], k, ["ndcg", "judged"])
    stored: dict[int, dict[int, float]] = {}
    judged: dict[int, dict[int, float]] = {}
    for run_id in (a.id, b.id):
        query_ids, (ndcg, coverage) = columns.get(run_id, ([], ([], [])))
        stored[run_id] = dict(zip(query_ids, ndcg, strict=True))
        judged[run_id] = dict(zip(query_ids, coverage, strict=True))
    measure_pending = False
    if measure is not None:
        kept = stored_measure(collection, measure, [a.id, b.id])
        measure_pending = a.id not in kept or b.id not in kept
        stored = {run_id: dict(kept.get(run_id, {})) for run_id in (a.id, b.id)}
    ids = [query_id for query_id, _, _ in evaluated]
    first = query_vector(collection, ids, stored[a.id])
    second = query_vector(collection, ids, stored[b.id])
    shared = [query_id for query_id in first if query_id in second]
    rows = [
        ComparisonRow(
            qids[q], first[q], second[q], first[q] - second[q], titles[q] or "",
            judged[a.id].get(q, 0.0), judged[b.id].get(q, 0.0),
        )
        for q in shared
    ]  # fmt: skip
    va, vb = [r.a for r in rows], [r.b for r in rows]
    wins, ties, losses = significance.win_tie_loss(va, vb)
    state = scores_state(collection=collection)
    if measure is None or not rows:
        mean_a = ordered_mean(va) if rows else None
        mean_b = ordered_mean(vb) if rows else None
    else:
        counted = [row.qid for row in rows]
        mean_a = measure_reference.summary(measure, {r.qid: r.a for r in rows}, counted)
        mean_b = measure_reference.summary(measure, {r.qid: r.b for r in rows}, counted)
    return Comparison(
        a=a,
        b=b,
        k=k,
        rows=rows,
        mean_a=mean_a,
        mean_b=mean_b,
        p_value=paired_p_value(first, second) if rows else None,
        wins=wins,
        ties=ties,
        losses=losses,
        pending=state.pending or a.scored_at is None or b.scored_at is None or measure_pending,
        measure=format_measure(measure) if measure is not None else "",
    )
