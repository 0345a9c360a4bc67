"""Judging pools from runs (depth-k pooling), assignments with overlap, grading through them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Max

from annotations.metrics.impact import budget_pick, per_query_cap
from annotations.models import (
    Assignment,
    AssignmentItem,
    Collection,
    Document,
    Judgement,
    Pool,
    PoolEntry,
    Query,
    Run,
)
from annotations.scores.refresh_queue import leaderboards_refresh_after_commit
from annotations.selectors import query_rankings
from annotations.selectors.judging import pool_candidates, user_is_organiser
from annotations.services.assignment_plan import assignment_plan
from annotations.services.impact import (
    assignment_items_reprioritise,
    impact_by_pair,
    impact_fresh,
    pool_entries_impact_set,
)
from annotations.services.judgements import grade_check, judgement_delete, judgement_record
from annotations.services.members import grading_members_check

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# --- pools ------------------------------------------------------------------------------


def _check_members(
    collection: Collection, objects: Sequence[Run] | Sequence[Query], what: str
) -> None:
    if any(obj.collection_id != collection.id for obj in objects):
        raise ValidationError({what: f"Every one of the {what} must belong to {collection.slug}."})


def pool_entries_add(
    pool: Pool,
    pairs: dict[tuple[int, int], int],
    impacts: dict[tuple[int, int], float] | None = None,
) -> int:
    existing = set(pool.entries.values_list("query_id", "document_id"))
    new = [
        PoolEntry(
            pool=pool,
            query_id=query_id,
            document_id=document_id,
            best_position=best,
            impact=None if impacts is None else impacts.get((query_id, document_id), 0.0),
        )
        for (query_id, document_id), best in sorted(pairs.items())
        if (query_id, document_id) not in existing
    ]
    PoolEntry.objects.bulk_create(new, batch_size=2000)
    return len(new)


def pool_build(
    *,
    collection: Collection,
    name: str,
    depth: int,
    runs: Sequence[Run] | None = None,
    queries: Sequence[Query] | None = None,
    include_judged: bool = False,
    overlap: int = 1,
    order: str = Pool.DEPTH,
    budget: int | None = None,
    per_query: int | None = None,
    created_by: User | None = None,
) -> tuple[Pool, int]:
    """Create a pool of every run's top `depth` per query; returns the pool and its size.

    `runs` defaults to every run of the collection and `queries` to every query. Pairs that
    somebody already judged are left out unless `include_judged`. With ``order="impact"``
    the pool keeps only the `budget` candidates of highest impact at cutoff `depth`
    (`annotations.metrics.impact`, refreshed first if the scores moved; pairs of impact 0, which can
    change no undecided comparison, are left out), ties broken by best rank, query, document,
    taking at most `per_query` pairs of any one query: by default twice the budget's even
    share over the queries with candidates (`per_query_cap`), so the budget cannot drain
    into a few queries unless the organiser sets a larger cap (the budget itself: no cap).
    """
    if order not in (Pool.DEPTH, Pool.IMPACT):
        raise ValidationError({"order": "The order is either depth or impact."})
    if order == Pool.IMPACT and (budget is None or budget < 1):
        raise ValidationError({"budget": "An impact-ordered pool needs a budget of 1 or more."})
    if order == Pool.DEPTH and budget is not None:
        raise ValidationError({"budget": "A budget is for impact-ordered pools only."})
    if per_query is not None and (order != Pool.IMPACT or per_query < 1):
        raise ValidationError(
            {"per_query": "A per-query cap is 1 or more, for impact-ordered pools only."}
        )
    chosen_runs = list(runs) if runs is not None else list(collection.runs.all())
    chosen_queries = list(queries or [])
    if not chosen_runs:
        raise ValidationError({"runs": "A pool needs at least one run."})
    _check_members(collection, chosen_runs, "runs")
    _check_members(collection, chosen_queries, "queries")
    if Pool.objects.filter(collection=collection, name=name).exists():
        raise ValidationError(
            {
                "name": f"A pool called {name!r} exists: extend it with more runs or a deeper "
                "cut on its page, or choose another name."
            }
        )
    pool = Pool(
        collection=collection,
        name=name,
        depth=depth,
        overlap=overlap,
        order=order,
        budget=budget,
        created_by=created_by,
    )
    pool.full_clean()
    candidates = pool_candidates(
        runs=chosen_runs, queries=chosen_queries, depth=depth, include_judged=include_judged
    )
    impacts = None
    if order == Pool.IMPACT:
        impacts = impact_by_pair(snapshot=impact_fresh(collection=collection, k=depth))
        ranked = sorted(
            (key for key in candidates if impacts.get(key, 0.0) > 0.0),
            key=lambda key: (-impacts[key], candidates[key], key),
        )
        assert budget is not None  # checked above
        if per_query is None:
            per_query = per_query_cap(budget, len({query_id for query_id, _ in ranked}))
        chosen = budget_pick(ranked, {key: key[0] for key in ranked}, budget=budget, cap=per_query)
        candidates = {key: candidates[key] for key in chosen}
        pool.per_query = per_query
    with transaction.atomic():
        pool.save()
        pool.runs.set(chosen_runs)
        pool.queries.set(chosen_queries)
        added = pool_entries_add(pool, candidates, impacts)
        if order == Pool.IMPACT:  # the worker keeps its impact and the flip marks from now
            leaderboards_refresh_after_commit(collection_id=collection.id)
    return pool, added


def pool_extend(
    *,
    pool: Pool,
    depth: int | None = None,
    runs: Sequence[Run] | None = None,
    queries: Sequence[Query] | None = None,
    include_judged: bool = False,
) -> int:
    """Add pairs to a pool (new runs, deeper k, more queries); returns how many were added.

    Existing entries, assignments and judgements are untouched: new pairs only join the pool
    and wait for `assignment_create`. `runs` defaults to every run of the collection (so new
    runs join), `depth` to the pool's, `queries` to the pool's limit (all when it has none).
    """
    collection = pool.collection
    chosen_runs = list(runs) if runs is not None else list(collection.runs.all())
    if not chosen_runs:
        raise ValidationError({"runs": "A pool needs at least one run."})
    _check_members(collection, chosen_runs, "runs")
    if depth is not None and depth < 1:
        raise ValidationError({"depth": "The depth must be at least 1."})
    with transaction.atomic():
        locked = Pool.objects.select_for_update().get(id=pool.id)
        limit = list(locked.queries.all())
        chosen_queries = list(queries) if queries else limit
        _check_members(collection, chosen_queries, "queries")
        use_depth = depth if depth is not None else locked.depth
        added = pool_entries_add(
            locked,
            pool_candidates(
                runs=chosen_runs,
                queries=chosen_queries,
                depth=use_depth,
                include_judged=include_judged,
            ),
        )
        locked.runs.add(*chosen_runs)
        if limit and queries:
            locked.queries.add(*queries)
        if locked.order == Pool.DEPTH:
            locked.depth = max(locked.depth, use_depth)
        locked.save(update_fields=["depth", "updated"])
    if locked.order == Pool.IMPACT:
        # Extended pairs join with their impact at the pool's cutoff, then take their turn.
        snapshot = impact_fresh(collection=collection, k=locked.depth)
        pool_entries_impact_set(pool=locked, impacts=impact_by_pair(snapshot=snapshot))
        assignment_items_reprioritise(pool=locked)
    pool.refresh_from_db()
    return added


# A pair no run retrieved sorts after every ranked one; the largest PositiveIntegerField value.
UNRANKED_POSITION = 2_147_483_647


def pool_add_pairs(*, pool: Pool, query: Query, document_ids: Sequence[int], added_by: User) -> int:
    """Add the given (query, document) pairs an organiser picked to a pool; returns how many
    were new.

    Pairs already in the pool are left alone, as are assignments and judgements, so a second
    call adds nothing. `best_position` is the pair's best position in any run's ranking for
    the query (`UNRANKED_POSITION` when no run retrieved the document). When the pool is
    limited to some queries, `query` joins the limit so the pool still covers its entries.
    The new pairs wait in the pool until `assignment_create` hands them to assessors.
    """
    collection = pool.collection
    if not user_is_organiser(user=added_by, collection=collection):
        raise PermissionDenied("Only an organiser of the collection may add pairs to a pool.")
    if query.collection_id != collection.id:
        raise ValidationError({"query": f"The query must belong to {collection.slug}."})
    wanted = set(document_ids)
    known = set(
        Document.objects.filter(collection=collection, id__in=wanted).values_list("id", flat=True)
    )
    if known != wanted:
        raise ValidationError(
            {"document_ids": f"Every one of the documents must belong to {collection.slug}."}
        )
    if not wanted:
        return 0
    best = dict.fromkeys(wanted, UNRANKED_POSITION)
    for documents in query_rankings(query_id=query.id, depth=None).values():
        for position, document_id in enumerate(documents, start=1):
            if document_id in best and position < best[document_id]:
                best[document_id] = position
    with transaction.atomic():
        # The lock serialises concurrent adds, so the unique constraint never trips.
        locked = Pool.objects.select_for_update().get(id=pool.id)
        added = pool_entries_add(
            locked, {(query.id, document_id): position for document_id, position in best.items()}
        )
        limit = locked.queries.all()
        if limit.exists() and not limit.filter(id=query.id).exists():
            locked.queries.add(query)
        if added:
            locked.save(update_fields=["updated"])
    return added


# --- assignments ------------------------------------------------------------------------


def assignment_create(
    *,
    pool: Pool,
    assessors: Sequence[User],
    overlap: int | None = None,
    queries: Sequence[Query] | None = None,
    pairs: int | None = None,
    created_by: User | None = None,
) -> list[tuple[Assignment, int]]:
    """Give the pool's pairs to assessors so each pair has `overlap` of them; returns
    (assignment, pairs added) per assessor.

    Only pairs still short of `overlap` are handed out, so running it again after
    `pool_extend` assigns just the new ones; items are appended after an assessor's existing
    ones, never reordered. A pair goes to the assessors with the fewest pairs, preferring
    those who already have its query (a query stays with the same people). `queries` limits
    it to some queries, `pairs` caps how many new pairs each assessor gets. Every assessor
    must already be an organiser or assessor of the collection (`grading_members_check`):
    assigning work makes nobody a member. An impact-ordered pool hands out its pairs
    highest impact first.
    """
    people = list({user.pk: user for user in assessors}.values())
    target = pool.overlap if overlap is None else overlap
    if target < 1:
        raise ValidationError({"overlap": "The overlap must be at least 1."})
    if not people:
        raise ValidationError({"assessors": "Choose at least one assessor."})
    if target > len(people):
        raise ValidationError(
            {"overlap": f"An overlap of {target} needs at least {target} assessors."}
        )
    if pairs is not None and pairs < 1:
        raise ValidationError({"pairs": "The number of pairs must be at least 1."})
    grading_members_check(collection=pool.collection, users=people, field="assessors")
    chosen_queries = list(queries or [])
    _check_members(pool.collection, chosen_queries, "queries")
    with transaction.atomic():
        pool = Pool.objects.select_for_update().select_related("collection").get(id=pool.id)
        if pool.overlap != target:
            pool.overlap = target
            pool.full_clean()
            pool.save(update_fields=["overlap", "updated"])
        assignments: dict[int, Assignment] = {}
        for user in people:
            assignments[user.pk], _ = Assignment.objects.get_or_create(
                pool=pool, assessor=user, defaults={"created_by": created_by}
            )
        assigned: dict[int, set[int]] = defaultdict(set)  # entry id -> assessor ids
        has_query: dict[int, set[int]] = defaultdict(set)  # assessor id -> query ids
        load: dict[int, int] = defaultdict(int)
        for entry_id, query_id, assessor_id in AssignmentItem.objects.filter(
            assignment__pool=pool
        ).values_list("entry_id", "entry__query_id", "assignment__assessor_id"):
            assigned[entry_id].add(assessor_id)
            has_query[assessor_id].add(query_id)
            load[assessor_id] += 1
        next_position = {
            row["id"]: (row["last"] or 0) + 1
            for row in Assignment.objects.filter(id__in=[a.id for a in assignments.values()])
            .annotate(last=Max("items__position"))
            .values("id", "last")
        }
        entries = pool.entries.order_by("query__qid", "document__docno")
        if pool.order == Pool.IMPACT:
            # Highest impact first: the first items of every assignment matter most.
            entries = pool.entries.order_by(
                F("impact").desc(nulls_last=True), "best_position", "query__qid", "document__docno"
            )
        if chosen_queries:
            entries = entries.filter(query__in=chosen_queries)
        plan = assignment_plan(
            entries=entries.values_list("id", "query_id"),
            people=[(user.pk, user.get_username()) for user in people],
            target=target,
            pairs=pairs,
            assigned=assigned,
            has_query=has_query,
            load=load,
        )
        added: dict[int, int] = defaultdict(int)
        new_items: list[AssignmentItem] = []
        for person, entry_id in plan:
            assignment = assignments[person]
            new_items.append(
                AssignmentItem(
                    assignment=assignment, entry_id=entry_id, position=next_position[assignment.id]
                )
            )
            next_position[assignment.id] += 1
            added[person] += 1
        AssignmentItem.objects.bulk_create(new_items, batch_size=2000)
    return [(assignments[user.pk], added[user.pk]) for user in people]


# --- grading through an assignment ------------------------------------------------------


def _check_own(item: AssignmentItem, assessor: User) -> None:
    if item.assignment.assessor_id != assessor.pk:
        raise PermissionDenied("Only the assignment's assessor may judge its pairs.")


def assignment_item_grade(
    *, item: AssignmentItem, assessor: User, grade: int, note: str = "", dwell_ms: int | None = None
) -> Judgement:
    """Record the assessor's grade for an item's pair (history source "form"), clearing a skip;
    `dwell_ms`, how long the page showed the pair, is kept with the history row.

    `judgement_record` locks the judgement, so a double submit or a second tab changes the
    one row (and writes history only for a real change). The item is written only when its
    skip mark or note (as `item` was read) changes.
    """
    _check_own(item, assessor)
    # Refused before the writes, which then need no savepoint of their own inside the
    # caller's transaction (the grading view's): an error among them fails it as a whole.
    grade_check(item.entry.query.collection, grade)
    with transaction.atomic(savepoint=False):
        judgement = judgement_record(
            query=item.entry.query,
            document=item.entry.document,
            assessor=assessor,
            grade=grade,
            note=note,
            source="form",
            dwell_ms=dwell_ms,
        )
        if item.skipped or item.note != note:
            AssignmentItem.objects.filter(id=item.id).update(skipped=False, note=note)
            item.skipped, item.note = False, note
    return judgement


def assignment_item_skip(*, item: AssignmentItem, assessor: User, note: str = "") -> bool:
    """Mark an item "unsure / skip" with an optional note; True if a grade was withdrawn.

    An assessor unsure of a pair they had graded withdraws that grade: the judgement is
    deleted through `judgement_delete`, which keeps the history row and rescores the query.
    """
    _check_own(item, assessor)
    with transaction.atomic():
        judgement = (
            Judgement.objects.select_for_update()
            .filter(
                query_id=item.entry.query_id,
                document_id=item.entry.document_id,
                assessor_id=assessor.pk,
            )
            .first()
        )
        if judgement is not None:
            judgement_delete(judgement=judgement, source="form", changed_by=assessor)
        AssignmentItem.objects.filter(id=item.id).update(skipped=True, note=note)
    return judgement is not None
