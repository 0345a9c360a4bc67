"""Pools by depth-k pooling, extension, assignments with overlap, and the organiser commands."""

from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, transaction

from annotations import services
from annotations.models import (
    Assignment,
    AssignmentItem,
    Collection,
    Membership,
    Pool,
    PoolEntry,
    Run,
)
from tests.factories import UserFactory


def user(name: str):  # type: ignore[no-untyped-def]
    return get_user_model().objects.get(username=name)


def pairs_of(pool: Pool) -> dict[tuple[str, str], int]:
    return {
        (qid, docno): best
        for qid, docno, best in pool.entries.values_list(
            "query__qid", "document__docno", "best_position"
        )
    }


def test_pool_is_the_union_of_every_runs_top_k_per_query(trial: Collection) -> None:
    pool, added = services.pool_build(collection=trial, name="main", depth=2)
    assert added == 7
    assert pairs_of(pool) == {
        ("q1", "d1"): 1,
        ("q1", "d2"): 2,
        ("q1", "d3"): 2,
        ("q1", "d6"): 1,
        ("q2", "d1"): 2,
        ("q2", "d3"): 1,
        ("q2", "d5"): 1,
    }
    assert set(pool.runs.values_list("name", flat=True)) == {"bm25", "dense"}


def test_pool_can_be_limited_to_some_runs_and_queries(trial: Collection) -> None:
    bm25 = Run.objects.get(collection=trial, name="bm25")
    q1 = trial.queries.get(qid="q1")
    pool, _ = services.pool_build(collection=trial, name="some", depth=3, runs=[bm25], queries=[q1])
    assert set(pairs_of(pool)) == {("q1", "d1"), ("q1", "d2"), ("q1", "d6")}


def test_judged_pairs_are_not_requeued_unless_asked(trial: Collection) -> None:
    services.judgement_record(
        query=trial.queries.get(qid="q1"),
        document=trial.documents.get(docno="d1"),
        assessor=user("alice"),
        grade=2,
        source="form",
    )
    pool, _ = services.pool_build(collection=trial, name="fresh", depth=2)
    assert ("q1", "d1") not in pairs_of(pool)
    again, _ = services.pool_build(collection=trial, name="all", depth=2, include_judged=True)
    assert ("q1", "d1") in pairs_of(again)


def test_extending_a_pool_adds_only_new_pairs_and_keeps_work_in_progress(
    trial: Collection,
) -> None:
    pool, _ = services.pool_build(collection=trial, name="main", depth=1)
    [(assignment, first)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    item = assignment.items.get(position=1)
    services.assignment_item_grade(item=item, assessor=user("alice"), grade=3)
    before = list(assignment.items.values_list("id", "entry_id", "position"))

    added = services.pool_extend(pool=pool, depth=2)

    pool.refresh_from_db()
    assert added == 7 - first
    assert pool.depth == 2
    assert list(assignment.items.values_list("id", "entry_id", "position")) == before
    [(_, more)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    assert more == added
    positions = list(assignment.items.values_list("position", flat=True))
    assert positions == list(range(1, first + added + 1))
    assert services.pool_extend(pool=pool, depth=2) == 0


def test_extending_with_a_new_run_pools_its_documents(trial: Collection) -> None:
    pool, _ = services.pool_build(collection=trial, name="main", depth=1)
    services.run_store(collection=trial, run_name="late", results={"q2": [("d6", 1.0, 1)]})
    assert services.pool_extend(pool=pool) == 1
    assert ("q2", "d6") in pairs_of(pool)
    assert pool.runs.filter(name="late").exists()


def test_overlap_two_gives_every_pair_to_two_different_assessors(trial: Collection) -> None:
    pool, size = services.pool_build(collection=trial, name="main", depth=2)
    result = services.assignment_create(
        pool=pool, assessors=[user("alice"), user("bob")], overlap=2
    )
    assert [added for _, added in result] == [size, size]
    per_entry = Counter(AssignmentItem.objects.values_list("entry_id", flat=True))
    assert set(per_entry.values()) == {2}
    pool.refresh_from_db()
    assert pool.overlap == 2
    # Assigning again hands out nothing: every pair already has its two assessors.
    again = services.assignment_create(pool=pool, assessors=[user("alice"), user("bob")])
    assert [added for _, added in again] == [0, 0]


def test_overlap_one_balances_assessors_and_keeps_a_query_together(trial: Collection) -> None:
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    services.assignment_create(pool=pool, assessors=[user("alice"), user("bob")])
    loads = Counter(AssignmentItem.objects.values_list("assignment__assessor__username", flat=True))
    assert sum(loads.values()) == 7
    assert max(loads.values()) - min(loads.values()) <= 1
    assert set(Counter(AssignmentItem.objects.values_list("entry_id", flat=True)).values()) == {1}


def test_pairs_caps_how_many_new_pairs_each_assessor_gets(trial: Collection) -> None:
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    result = services.assignment_create(pool=pool, assessors=[user("alice")], pairs=3)
    assert [added for _, added in result] == [3]


def test_overlap_larger_than_the_assessors_is_refused(trial: Collection) -> None:
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    with pytest.raises(ValidationError):
        services.assignment_create(pool=pool, assessors=[user("alice")], overlap=2)
    assert not Assignment.objects.exists()


def test_a_pool_needs_runs_and_a_positive_depth(trial: Collection) -> None:
    with pytest.raises(ValidationError):
        services.pool_build(collection=trial, name="empty", depth=2, runs=[])
    with pytest.raises(ValidationError):
        services.pool_build(collection=trial, name="flat", depth=0)
    assert not Pool.objects.exists()


def test_assigning_a_non_member_is_refused_and_makes_nobody_a_member(trial: Collection) -> None:
    pool, _ = services.pool_build(collection=trial, name="main", depth=1)
    newcomer = UserFactory(username="nina")
    with pytest.raises(ValidationError, match="'nina' is not an assessor or organiser"):
        services.assignment_create(pool=pool, assessors=[user("alice"), newcomer])
    assert not Membership.objects.filter(user=newcomer).exists()
    assert not Assignment.objects.exists()


def test_the_database_refuses_duplicate_pairs_and_items(trial: Collection) -> None:
    pool, _ = services.pool_build(collection=trial, name="main", depth=1)
    entry = pool.entries.first()
    assert entry is not None
    with pytest.raises(IntegrityError), transaction.atomic():
        PoolEntry.objects.create(
            pool=pool, query=entry.query, document=entry.document, best_position=3
        )
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    with pytest.raises(IntegrityError), transaction.atomic():
        AssignmentItem.objects.create(assignment=assignment, entry=entry, position=99)
    with pytest.raises(IntegrityError), transaction.atomic():
        Pool.objects.filter(id=pool.id).update(overlap=0)


def test_commands_build_extend_and_assign_a_pool(trial: Collection, capsys) -> None:  # type: ignore[no-untyped-def]
    call_command("build_pool", "trial", "--depth", "1", "--runs", "bm25")
    call_command("build_pool", "trial", "--depth", "2")
    call_command("assign", "trial", "main", "--assessors", "alice,bob", "--overlap", "2")
    out = capsys.readouterr().out
    assert "pool main: built, 2 pairs" in out
    assert "pool main: extended, 5 new pairs" in out
    assert "alice: +7 pairs (7 in all)" in out
    assert AssignmentItem.objects.count() == 14
