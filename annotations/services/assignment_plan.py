"""Which assessor gets which pair of a pool: the balancing rule, pure (no database)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence


def assignment_plan(
    *,
    entries: Iterable[tuple[int, int]],
    people: Sequence[tuple[int, str]],
    target: int,
    pairs: int | None = None,
    assigned: Mapping[int, set[int]] | None = None,
    has_query: Mapping[int, set[int]] | None = None,
    load: Mapping[int, int] | None = None,
) -> list[tuple[int, int]]:
    """(assessor id, entry id) to add, in the order they are added.

    `entries` are (entry id, query id) in the order the pool hands them out; `people` are
    (assessor id, username). Each entry gets assessors until `target` of them hold it
    (`assigned`: entry -> assessors who already do), each assessor at most `pairs` new ones.
    Among the candidates for an entry: first those who already have its query (a query stays
    with the same people), then those with the fewest pairs (`load`), then by username.
    """
    holders: dict[int, set[int]] = defaultdict(set)
    queries: dict[int, set[int]] = defaultdict(set)
    counts: dict[int, int] = defaultdict(int)
    for entry, who in (assigned or {}).items():
        holders[entry] = set(who)
    for person, held in (has_query or {}).items():
        queries[person] = set(held)
    counts.update(load or {})
    added: dict[int, int] = defaultdict(int)
    plan: list[tuple[int, int]] = []
    for entry_id, query_id in entries:
        needed = target - len(holders[entry_id])
        if needed <= 0:
            continue
        candidates = [
            (person, name)
            for person, name in people
            if person not in holders[entry_id] and (pairs is None or added[person] < pairs)
        ]
        candidates.sort(key=lambda c: (query_id not in queries[c[0]], counts[c[0]], c[1]))
        for person, _ in candidates[:needed]:
            plan.append((person, entry_id))
            holders[entry_id].add(person)
            queries[person].add(query_id)
            counts[person] += 1
            added[person] += 1
    return plan
