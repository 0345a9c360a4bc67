"""How a budget of pairs is handed out by impact: highest first, at most a cap per query."""

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["SPREAD", "budget_pick", "per_query_cap"]

SPREAD = 2  # the default cap: this many times the budget's even share per query

Key = TypeVar("Key", bound=Hashable)


def per_query_cap(budget: int, queries: int) -> int:
    """The default most pairs of one query a budget takes: ``SPREAD`` times its even share
    over the ``queries`` that have candidates, rounded up (at least 1), so a budget always
    fits and no query takes more than twice its share unless the organiser says so."""
    if budget < 1:
        raise ValueError(f"a budget is at least 1 pair, got {budget!r}")
    return max(1, math.ceil(SPREAD * budget / max(queries, 1)))


def budget_pick(
    ranked: Sequence[Key], query_of: Mapping[Key, Hashable], *, budget: int, cap: int | None
) -> list[Key]:
    """The first ``budget`` of ``ranked`` (best first) taking at most ``cap`` of any one
    query (``query_of``); ``cap`` None: no cap. Fewer than ``budget`` when the queries run
    out of candidates under the cap."""
    if cap is not None and cap < 1:
        raise ValueError(f"a per-query cap is at least 1 pair, got {cap!r}")
    taken: dict[Hashable, int] = {}
    chosen: list[Key] = []
    for key in ranked:
        if len(chosen) >= budget:
            break
        query = query_of[key]
        if cap is not None and taken.get(query, 0) >= cap:
            continue
        taken[query] = taken.get(query, 0) + 1
        chosen.append(key)
    return chosen
