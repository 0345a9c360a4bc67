"""Impact refresh: store the model's result, re-prioritise impact-ordered work, flip marks."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotations.models import (
    AssignmentItem,
    Collection,
    DocumentImpact,
    ImpactSnapshot,
    Judgement,
    Pool,
    PoolEntry,
)
from annotations.selectors.impact import impact_of
from annotations.selectors.impact_held import impact_inputs_held
from annotations.selectors.leaderboards import Leaderboard
from annotations.selectors.scores_state import scores_state

TIE = 1e-12  # a bound this close to the other run's is a reachable tie, not a flip


def impact_refresh(*, collection: Collection, k: int) -> ImpactSnapshot:
    """Compute the impact of every unjudged top-k pair at k and store it with the stamp.

    Replaces the collection's stored impacts at k, the pair states of every two runs, and
    refreshes the impact of the entries of its impact-ordered pools of depth k, whose
    assignments are then re-prioritised (`assignment_items_reprioritise`). The model's
    inputs are those kept from the last refresh, with the grades of the queries whose
    judgements moved since read again (`impact_inputs_held`).
    """
    started = time.perf_counter()
    stamp = scores_state(collection=collection).stamp
    inputs = impact_inputs_held(collection=collection, k=k)
    result = impact_of(inputs)
    impacts: dict[tuple[int, int], float] = {}
    pairs: list[list[float]] = []
    if result is not None:
        for q, query_id in enumerate(inputs.query_ids):
            for d, document_id in enumerate(inputs.pools[q]):
                if inputs.grades[q][d] < 0:
                    impacts[(query_id, document_id)] = float(result.impacts[q][d])
        states = result.pairs
        for a, run_a in enumerate(inputs.run_ids):
            for b in range(a + 1, len(inputs.run_ids)):
                pairs.append(
                    [
                        run_a,
                        inputs.run_ids[b],
                        float(states.lower[a, b]),
                        float(states.upper[a, b]),
                        float(states.weight[a, b]),
                    ]
                )
    with transaction.atomic():
        snapshot, _ = ImpactSnapshot.objects.update_or_create(
            collection=collection,
            k=k,
            defaults={
                "stamp": stamp,
                "pairs": pairs,
                "computed_at": timezone.now(),
                "seconds": time.perf_counter() - started,
            },
        )
        DocumentImpact.objects.filter(snapshot=snapshot).delete()
        DocumentImpact.objects.bulk_create(
            [
                DocumentImpact(snapshot=snapshot, query_id=q, document_id=d, impact=value)
                for (q, d), value in impacts.items()
            ],
            batch_size=2000,
        )
    for pool in Pool.objects.filter(collection=collection, order=Pool.IMPACT, depth=k):
        pool_entries_impact_set(pool=pool, impacts=impacts)
        assignment_items_reprioritise(pool=pool)
    return snapshot


def impact_fresh(*, collection: Collection, k: int) -> ImpactSnapshot:
    """The stored impact at k, refreshed first when the scores stamp has moved."""
    snapshot = ImpactSnapshot.objects.filter(collection=collection, k=k).first()
    if snapshot is None or snapshot.stamp != scores_state(collection=collection).stamp:
        snapshot = impact_refresh(collection=collection, k=k)
    return snapshot


def impact_by_pair(*, snapshot: ImpactSnapshot) -> dict[tuple[int, int], float]:
    """(query id, document id) -> stored impact of the snapshot's unjudged pairs."""
    return {
        (q, d): value
        for q, d, value in DocumentImpact.objects.filter(snapshot=snapshot).values_list(
            "query_id", "document_id", "impact"
        )
    }


def pool_entries_impact_set(*, pool: Pool, impacts: dict[tuple[int, int], float]) -> int:
    """Give every entry of the pool its impact (0 for a pair no longer unjudged)."""
    # pool_id too: the related manager reads it on every entry (deferred, one query each).
    entries = list(pool.entries.only("id", "pool_id", "query_id", "document_id", "impact"))
    changed = []
    for entry in entries:
        value = impacts.get((entry.query_id, entry.document_id), 0.0)
        if entry.impact != value:
            entry.impact = value
            changed.append(entry)
    PoolEntry.objects.bulk_update(changed, ["impact"], batch_size=2000)
    return len(changed)


def assignment_items_reprioritise(*, pool: Pool) -> int:
    """Re-sort the not-yet-seen items of the pool's assignments by their entries' impact.

    The rule, per assessor: every item up to the last one judged or skipped keeps its
    position, and so does the first pending item after it (the one *Continue* opens, which
    may be on the assessor's screen); the items after that, none of them judged, skipped or
    opened in order yet, are re-sorted: first the pairs another assessor holding them in
    this pool has already graded (overlap: their agreement waits on this one), in the order
    they were first graded; then by impact, highest first (ties keep their order). The key
    is the pair's, not the assessor's, so the assessors sharing pairs meet them early and in
    the same order. They take the same positions among themselves, so nothing seen moves.
    Returns how many items moved.
    """
    moved = 0
    with transaction.atomic():
        # The pool lock serialises this with assignment_create, which appends to the same lists.
        Pool.objects.select_for_update().filter(id=pool.id).first()
        items = list(
            AssignmentItem.objects.filter(assignment__pool=pool)
            .select_related("entry")
            .order_by("assignment_id", "position")
        )
        by_assignment: dict[int, list[AssignmentItem]] = defaultdict(list)
        for item in items:
            by_assignment[item.assignment_id].append(item)
        graded = {
            (query_id, document_id, assessor_id): judgement_id
            for query_id, document_id, assessor_id, judgement_id in Judgement.objects.filter(
                query__in=pool.entries.values("query_id"),
                assessor__assignments__pool=pool,
            ).values_list("query_id", "document_id", "assessor_id", "id")
        }
        judged = set(graded)
        assessors = dict(pool.assignments.values_list("id", "assessor_id"))
        first_graded = _first_graded(items, assessors, graded)
        for assignment_id, rows in by_assignment.items():
            assessor = assessors[assignment_id]
            seen = [
                i
                for i, item in enumerate(rows)
                if item.skipped or (item.entry.query_id, item.entry.document_id, assessor) in judged
            ]
            start = (seen[-1] + 1 if seen else 0) + 1
            tail = rows[start:]
            ordered = sorted(tail, key=lambda item: _turn(item, assessor, first_graded))
            if [item.id for item in ordered] == [item.id for item in tail]:
                continue
            positions = [item.position for item in tail]
            offset = rows[-1].position
            changes = [
                item
                for item, position in zip(ordered, positions, strict=True)
                if item.position != position
            ]
            targets = {item.id: position for item, position in zip(ordered, positions, strict=True)}
            for item in changes:
                item.position = targets[item.id] + offset
            AssignmentItem.objects.bulk_update(changes, ["position"])
            for item in changes:
                item.position = targets[item.id]
            AssignmentItem.objects.bulk_update(changes, ["position"])
            moved += len(changes)
    return moved


def _first_graded(
    items: list[AssignmentItem],
    assessors: dict[int, int],
    graded: dict[tuple[int, int, int], int],
) -> dict[int, list[tuple[int, int]]]:
    """Entry id -> (judgement id, assessor id) of each grade its pool holders gave, oldest
    first."""
    found: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for item in items:
        assessor = assessors[item.assignment_id]
        judgement = graded.get((item.entry.query_id, item.entry.document_id, assessor))
        if judgement is not None:
            found[item.entry_id].append((judgement, assessor))
    for grades in found.values():
        grades.sort()
    return found


def _turn(
    item: AssignmentItem, assessor: int, first_graded: dict[int, list[tuple[int, int]]]
) -> tuple[int, float, int]:
    """An item's place in its assessor's re-sorted tail: pairs another holder has graded
    first (oldest grade first), then by impact, highest first; ties keep their position."""
    others = [
        judgement for judgement, who in first_graded.get(item.entry_id, ()) if who != assessor
    ]
    if others:
        return (0, float(others[0]), item.position)
    return (1, -(item.entry.impact or 0.0), item.position)


# --- the leaderboard's flip marks ------------------------------------------------------


def _queued(collection: Collection, k: int) -> dict[tuple[int, int], int]:
    """(run a id, run b id) -> unjudged entries of impact-ordered pools that the two runs
    rank differently in their top k (so judging them moves the pair's difference).

    Without impact-ordered pools nothing is read; with them, the inputs kept for the impact
    refresh at k (`impact_inputs_held`), of those pools' queries.
    """
    queued_pairs = set(
        PoolEntry.objects.filter(pool__collection=collection, pool__order=Pool.IMPACT)
        .values_list("query_id", "document_id")
        .distinct()
    )
    counts: dict[tuple[int, int], int] = defaultdict(int)
    if not queued_pairs:
        return counts
    inputs = impact_inputs_held(
        collection=collection, k=k, query_ids={query_id for query_id, _ in queued_pairs}
    )
    for q, query_id in enumerate(inputs.query_ids):
        weights = inputs.tops[q].weights
        for d, document_id in enumerate(inputs.pools[q]):
            if inputs.grades[q][d] >= 0 or (query_id, document_id) not in queued_pairs:
                continue
            column = weights[:, d]
            differs = column[:, None] != column[None, :]
            for a, b in zip(*np.nonzero(np.triu(differs, 1)), strict=True):
                counts[(inputs.run_ids[a], inputs.run_ids[b])] += 1
    return counts


def flips_refresh(*, collection: Collection, board: Leaderboard) -> list[dict[str, object]]:
    """Store the leaderboard's flip marks for this board (its stamp) and return them.

    Adjacent runs A (above) and B can still flip when their bounds straddle: B's highest
    value (reported or with every unjudged document of its top k at the top grade) is above
    A's lowest, beyond ``TIE``. ``queued`` counts the unjudged entries of impact-ordered
    pools whose judging moves the pair's difference.
    """
    rows = board.rows
    counts = _queued(collection, board.k) if len(rows) > 1 else {}
    adjacent: list[dict[str, object]] = []
    for upper, lower in itertools.pairwise(rows):
        low_of_upper = min(upper.ndcg, upper.ndcg_top_grade)
        high_of_lower = max(lower.ndcg, lower.ndcg_top_grade)
        key = tuple(sorted((upper.run.id, lower.run.id)))
        adjacent.append(
            {
                "upper": upper.run.name,
                "lower": lower.run.name,
                "can_flip": high_of_lower > low_of_upper + TIE,
                "queued": counts.get((key[0], key[1]), 0),
            }
        )
    updated = ImpactSnapshot.objects.filter(collection=collection, k=board.k).update(
        adjacent=adjacent, leaderboard_stamp=board.computed_stamp
    )
    if not updated:
        ImpactSnapshot.objects.get_or_create(
            collection=collection,
            k=board.k,
            defaults={
                "stamp": "",
                "adjacent": adjacent,
                "leaderboard_stamp": board.computed_stamp,
                "computed_at": timezone.now(),
            },
        )
    return adjacent


def impacts_refresh_task(*, collection_id: int) -> int:
    """What the worker runs after the leaderboards' refresh: impact at every cutoff and at
    the depth of every impact-ordered pool, then the flip marks; returns how many cutoffs.
    A collection without impact-ordered pools has nothing to refresh."""
    from annotations.scores.snapshots import leaderboard_current

    collection = Collection.objects.filter(id=collection_id).first()
    if collection is None:
        return 0
    depths = set(
        Pool.objects.filter(collection=collection, order=Pool.IMPACT).values_list(
            "depth", flat=True
        )
    )
    if not depths:
        # Nothing orders its judging by impact: no impact to keep, and no flip marks (they
        # are read only for the queries of impact-ordered pools).
        return 0
    ks = sorted(set(collection.sorted_cutoffs) | depths)
    stamp = scores_state(collection=collection).stamp
    current = dict(ImpactSnapshot.objects.filter(collection=collection).values_list("k", "stamp"))
    done = 0
    for k in ks:
        if current.get(k) != stamp:
            impact_refresh(collection=collection, k=k)
            done += 1
        if k in collection.sorted_cutoffs:
            board = leaderboard_current(collection=collection, k=k)
            flips_refresh(collection=collection, board=board)
    return done
