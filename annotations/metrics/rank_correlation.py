"""How alike two system rankings are: Kendall's tau-b, AP correlation (tau_ap), rank swings.

Pure (numpy only). Used to say how much a leaderboard depends on who judged (Voorhees 2000,
"Variations in relevance judgments and the measurement of retrieval effectiveness") and how
close a partly judged leaderboard is to the finished one.

Conventions, fixed here:
- A ranking orders systems by score, best first; equal scores are ordered by name, so a
  ranking is a total order and every function below is deterministic.
- Kendall's tau is tau-b (ties in either score list reduce the denominator), the variant
  ``scipy.stats.kendalltau`` computes by default; it is undefined (None) when either list
  is constant or has fewer than two systems.
- tau_ap (Yilmaz, Aslam and Robertson, SIGIR 2008) weighs swaps near the top more:
  ``tau_ap(truth, other) = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1`` where C(i) counts
  the systems above position i of ``other`` that ``truth`` also puts above that system.
  It is not symmetric; ``tau_ap_symmetric`` is the mean of both directions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "kendall_tau_b",
    "rank_swings",
    "ranking",
    "tau_ap",
    "tau_ap_symmetric",
]


def ranking(scores: Mapping[str, float]) -> list[str]:
    """Systems best first: score descending, then name ascending."""
    for name, value in scores.items():
        if not math.isfinite(value):
            raise ValueError(f"score of {name!r} must be finite, got {value!r}")
    return sorted(scores, key=lambda name: (-scores[name], name))


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b between two score lists over the same systems (same order)."""
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("scores must be finite")
    n = len(a)
    if n < 2:
        return None
    upper = np.triu_indices(n, k=1)
    sa = np.sign(a[:, None] - a[None, :])[upper]
    sb = np.sign(b[:, None] - b[None, :])[upper]
    numerator = float(np.sum(sa * sb))  # concordant minus discordant pairs
    untied_a = float(np.count_nonzero(sa))  # pairs not tied in x
    untied_b = float(np.count_nonzero(sb))
    if untied_a == 0 or untied_b == 0:
        return None
    return numerator / math.sqrt(untied_a * untied_b)


def _check_same_systems(truth: Sequence[str], other: Sequence[str]) -> None:
    if len(set(truth)) != len(truth) or len(set(other)) != len(other):
        raise ValueError("a ranking must not list a system twice")
    if set(truth) != set(other):
        raise ValueError("both rankings must hold the same systems")


def tau_ap(truth: Sequence[str], other: Sequence[str]) -> float | None:
    """AP correlation of ``other`` against ``truth`` (both best first); None below 2."""
    _check_same_systems(truth, other)
    n = len(truth)
    if n < 2:
        return None
    position = {name: index for index, name in enumerate(truth)}
    total = 0.0
    for i in range(1, n):  # 0-based: the system at position i has i systems above it
        above = other[:i]
        correct = sum(1 for name in above if position[name] < position[other[i]])
        total += correct / i
    return 2.0 * total / (n - 1) - 1.0


def tau_ap_symmetric(first: Sequence[str], second: Sequence[str]) -> float | None:
    """The mean of tau_ap in both directions, for two rankings neither of which is truth."""
    forward = tau_ap(first, second)
    backward = tau_ap(second, first)
    return None if forward is None or backward is None else (forward + backward) / 2.0


def rank_swings(rankings: Mapping[str, Sequence[str]]) -> dict[str, tuple[int, int]]:
    """Per system, its best and worst 1-based rank over several rankings of the same systems.

    The swing of a system is ``worst - best``: how far who judged can move it.
    """
    lists = list(rankings.values())
    if not lists:
        return {}
    for other in lists[1:]:
        _check_same_systems(lists[0], other)
    swings: dict[str, tuple[int, int]] = {}
    for ordered in lists:
        for index, name in enumerate(ordered, start=1):
            best, worst = swings.get(name, (index, index))
            swings[name] = (min(best, index), max(worst, index))
    return swings
