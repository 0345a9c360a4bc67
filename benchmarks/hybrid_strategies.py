"""The judging strategies of bench_hybrid.py and the curve of tau each one follows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hybrid_world import (
    GAINS,
    SCALE,
    SCHEME,
    BoolArray,
    Collection,
    FloatArray,
    IntArray,
    Judge,
    engine_means,
    fast_means,
)

from annotations.metrics import rank_correlation
from annotations.metrics.impact import UNJUDGED, estimated_idcg, impact_compute, pair_weights

LEVEL = 0.9
STRATEGIES = ("depth", "impact", "hybrid", "hybrid-depth")


@dataclass
class Curve:
    """tau and tau_ap against the truth after each batch of people-judgements."""

    counts: list[int] = field(default_factory=list)
    tau: list[float] = field(default_factory=list)
    tau_ap: list[float] = field(default_factory=list)
    checked: int = 0  # states whose leaderboard was checked against the engine

    def needed(self, measure: str) -> int | None:
        """The first count from which ``measure`` stays >= LEVEL (None: never)."""
        values = np.array(getattr(self, measure))
        below = np.flatnonzero(values < LEVEL)
        if below.size == 0:
            return 0
        return self.counts[below[-1] + 1] if below[-1] + 1 < len(values) else None


def effective(collection: Collection, judged: BoolArray, judge: Judge | None) -> IntArray:
    """Grades the leaderboard uses: a person's where judged, else the machine's (hybrid) or
    unjudged (people only)."""
    fallback = judge.grades if judge is not None else np.full_like(collection.truth, UNJUDGED)
    grades: IntArray = np.where(judged & collection.valid(), collection.truth, fallback)
    return grades


def people_impact(collection: Collection, judged: BoolArray) -> list[FloatArray]:
    """``impact_compute`` of the people-only state (top-k pool; judged documents deeper in
    the pool enter the IDCG estimate as outside grades)."""
    grades, outside = [], []
    for q, top in enumerate(collection.tops):
        n = top.weights.shape[1]
        row = np.where(judged[q, :n], collection.truth[q, :n], UNJUDGED)
        grades.append(row.astype(np.int64))
        deep = slice(n, int(collection.sizes[q]))
        outside.append(collection.truth[q, deep][judged[q, deep]].tolist())
    result = impact_compute(
        collection.tops, grades, scale=SCALE, scheme=SCHEME, outside_grades=outside
    )
    return result.impacts


def hybrid_priority(collection: Collection, judged: BoolArray, judge: Judge) -> list[FloatArray]:
    """The impact model of ``annotations.metrics.impact.model`` on the hybrid state: a pair
    no person judged has the judge's distribution as its prior (expected gain, variance) and
    moves, when a person judges it, by ``E|gain(x) - gain(machine grade)|``. Pairs of runs
    are weighted by ``pair_weights`` of the same mean, spread and bounds as the engine's."""
    n_q, n_r = len(collection.tops), collection.runs
    top_gain = float(GAINS.max())
    mean, variance = np.zeros((n_r, n_r)), np.zeros((n_r, n_r))
    lower, upper = np.zeros((n_r, n_r)), np.zeros((n_r, n_r))
    per_query = []
    machine_gains = GAINS[np.clip(judge.grades, 0, None)]
    for q, top in enumerate(collection.tops):
        n, size = top.weights.shape[1], int(collection.sizes[q])
        person = judged[q, :n]
        dist = judge.distribution[q, :n]
        true_gains = GAINS[collection.truth[q, :n]]
        expected = np.where(person, true_gains, dist @ GAINS)
        spread2 = np.where(person, 0.0, dist @ GAINS**2 - (dist @ GAINS) ** 2)
        deep = np.where(
            judged[q, n:size], GAINS[collection.truth[q, n:size]], machine_gains[q, n:size]
        )
        idcg = estimated_idcg(np.concatenate([expected, deep]), collection.k)
        scale_q = 1.0 / (n_q * idcg) if idcg > 0 else 0.0
        weights = top.weights
        values = weights @ expected
        mean += scale_q * (values[:, None] - values[None, :])
        squares = (weights**2) @ spread2
        cross = (weights * spread2) @ weights.T
        variance += scale_q**2 * (squares[:, None] + squares[None, :] - 2.0 * cross)
        columns = weights[:, ~person]
        moves = columns[:, None, :] - columns[None, :, :]
        room, net = top_gain * np.abs(moves).sum(axis=2), top_gain * moves.sum(axis=2)
        fixed = weights[:, person] @ true_gains[person]
        difference = fixed[:, None] - fixed[None, :]
        upper += scale_q * (difference + (room + net) / 2.0)
        lower += scale_q * (difference - (room - net) / 2.0)
        move = np.abs(GAINS[None, :] - machine_gains[q, :n, None])
        expected_move = (dist * move).sum(axis=1)[~person]
        per_query.append((columns, expected_move, np.flatnonzero(~person), scale_q))
    spread = np.sqrt(np.maximum(variance, 0.0))
    weight = pair_weights(mean, spread, lower, upper)
    np.fill_diagonal(weight, 0.0)
    flat = weight.reshape(-1)
    priorities = []
    for top, (columns, expected_move, positions, scale_q) in zip(
        collection.tops, per_query, strict=True
    ):
        priority = np.zeros(top.weights.shape[1])
        if positions.size:
            moves = np.abs(columns[:, None, :] - columns[None, :, :]).reshape(-1, positions.size)
            priority[positions] = expected_move * scale_q * (flat @ moves) / 2.0
        priorities.append(priority)
    return priorities


def simulate(
    collection: Collection,
    truth_means: FloatArray,
    strategy: str,
    judge: Judge | None,
    *,
    batch: int = 10,
    growth: float = 0.03,
    checks: int = 3,
) -> Curve:
    """Add people-judgements by ``strategy`` until every pool pair is judged: ``depth``,
    ``impact`` (people only), ``hybrid`` (``hybrid_priority``) or ``hybrid-depth`` (the
    machine everywhere, people in depth order: the priority's ablation)."""
    if strategy not in STRATEGIES or strategy.startswith("hybrid") != (judge is not None):
        raise ValueError(f"unknown strategy {strategy!r} or a judge where none fits")
    names = [f"run{r:03d}" for r in range(collection.runs)]
    truth_ranking = rank_correlation.ranking(dict(zip(names, truth_means.tolist(), strict=True)))
    judged = np.zeros(collection.truth.shape, dtype=bool)
    total = collection.pairs
    curve = Curve()
    check_at = {0, total} | {total * (i + 1) // (checks + 1) for i in range(checks)}
    cursor = 0
    count = 0

    def record() -> None:
        grades = effective(collection, judged, judge)
        means = fast_means(collection, grades)
        if check_at and count >= min(check_at):
            check_at.difference_update({c for c in check_at if c <= count})
            if np.abs(engine_means(collection, grades) - means).max() > 1e-12:
                raise SystemExit(f"{strategy}: leaderboard differs from the engine at {count}")
            curve.checked += 1
        tau = rank_correlation.kendall_tau_b(means.tolist(), truth_means.tolist())
        ordered = rank_correlation.ranking(dict(zip(names, means.tolist(), strict=True)))
        tau_ap = rank_correlation.tau_ap(truth_ranking, ordered)
        curve.counts.append(count)
        curve.tau.append(0.0 if tau is None else tau)
        curve.tau_ap.append(0.0 if tau_ap is None else tau_ap)

    priority: Callable[[], list[FloatArray]] | None = None
    if strategy == "impact":
        priority = lambda: people_impact(collection, judged)  # noqa: E731
    elif strategy == "hybrid" and judge is not None:
        priority = lambda: hybrid_priority(collection, judged, judge)  # noqa: E731
    record()
    while count < total:
        size = min(max(batch, int(growth * count)), total - count)
        chosen: list[tuple[int, int]] = []
        if priority is not None:
            scores = priority()
            flat = np.concatenate(scores)
            owner = np.concatenate([np.full(len(s), q) for q, s in enumerate(scores)])
            index = np.concatenate([np.arange(len(s)) for s in scores])
            positive = np.flatnonzero(flat > 0)
            if positive.size == 0:
                priority = None  # nothing can move the leaderboard any more: depth order
            best = positive[np.argsort(-flat[positive], kind="stable")[:size]]
            chosen = list(zip(owner[best].tolist(), index[best].tolist(), strict=True))
            judged[owner[best], index[best]] = True
        while len(chosen) < size:  # the rest of the batch in depth order
            q, d = collection.depth_order[cursor].tolist()
            cursor += 1
            if not judged[q, d]:
                judged[q, d] = True
                chosen.append((q, d))
        count += len(chosen)
        if count != int(judged.sum()):
            raise SystemExit(f"{strategy}: {count} judgements counted, {judged.sum()} made")
        record()
    return curve
