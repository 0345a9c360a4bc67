"""The balancing rule of assignments, without a database."""

from __future__ import annotations

from collections import Counter

from annotations.services.assignment_plan import assignment_plan

PEOPLE = [(1, "alice"), (2, "bob"), (3, "carol")]


def test_each_pair_gets_overlap_assessors_and_the_load_stays_even() -> None:
    entries = [(entry, entry // 4) for entry in range(12)]  # 3 queries of 4 pairs
    plan = assignment_plan(entries=entries, people=PEOPLE, target=2)
    per_entry = Counter(entry for _, entry in plan)
    assert set(per_entry.values()) == {2} and len(per_entry) == 12
    loads = Counter(person for person, _ in plan)
    assert max(loads.values()) - min(loads.values()) <= 1


def test_a_query_stays_with_the_people_who_have_it() -> None:
    entries = [(10, 7), (11, 7), (12, 7)]
    plan = assignment_plan(entries=entries, people=PEOPLE, target=1, has_query={2: {7}})
    assert plan == [(2, 10), (2, 11), (2, 12)]


def test_pairs_already_held_are_not_handed_out_again_and_pairs_caps_each_assessor() -> None:
    entries = [(1, 1), (2, 1), (3, 2), (4, 2)]
    plan = assignment_plan(
        entries=entries, people=PEOPLE, target=1, pairs=1, assigned={1: {3}, 2: {3}}
    )
    assert [entry for _, entry in plan] == [3, 4]  # entries 1 and 2 have their assessor
    assert len({person for person, _ in plan}) == 2  # one new pair each at most


def test_ties_go_to_the_fewest_pairs_then_by_username() -> None:
    plan = assignment_plan(entries=[(1, 1)], people=PEOPLE, target=1, load={1: 5, 2: 5, 3: 4})
    assert plan == [(3, 1)]
    plan = assignment_plan(entries=[(1, 1)], people=PEOPLE, target=1, load={1: 5, 2: 5, 3: 5})
    assert plan == [(1, 1)]  # alice before bob and carol
