"""The effective grades read from a query's rows: the fast path for people's grades gives
what the general path gives, grade for grade and in the same order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics.ndcg import RULES
from annotations.selectors import grades as grade_rows

ROW = st.tuples(
    st.integers(1, 12),  # document id: few, so that documents are graded more than once
    st.integers(-1, 4),  # grade
    st.sampled_from([0, 0, 0, 1]),  # adjudication
    st.booleans(),  # stale
    st.sampled_from([False, False, False, True]),  # machine
)


def _general(rows: list[tuple[Any, ...]], rule: str, include_stale: bool, machine: str) -> dict:
    """The general path alone (the fast path switched off)."""
    saved = grade_rows._plain_grades
    grade_rows._plain_grades = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        return grade_rows.effective_grades_from_rows(
            rows, rule, include_stale=include_stale, machine_rule=machine
        )
    finally:
        grade_rows._plain_grades = saved  # type: ignore[assignment]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(ROW, max_size=40),
    rule=st.sampled_from(RULES),
    include_stale=st.booleans(),
    machine=st.sampled_from(["assessor", "fill", "people"]),
    people_only=st.booleans(),
)
def test_the_fast_path_equals_the_general_one(
    rows: list[tuple[Any, ...]], rule: str, include_stale: bool, machine: str, people_only: bool
) -> None:
    if people_only:  # the fast path's case: no adjudication, no machine grade
        rows = [(doc, grade, 0, stale, False) for doc, grade, _, stale, _ in rows]
    fast = grade_rows.effective_grades_from_rows(
        rows, rule, include_stale=include_stale, machine_rule=machine
    )
    general = _general(rows, rule, include_stale, machine)
    assert list(fast.items()) == list(general.items())


@pytest.mark.parametrize(
    ("rows", "taken"),
    [
        ([(1, 2, 0, False, False), (2, 0, 0, False, False)], True),
        ([(1, 2, 0, False, False), (1, 3, 0, False, False), (2, 1, 0, True, False)], True),
        ([(1, 2, 1, False, False)], False),  # an adjudication
        ([(1, 2, 0, False, True)], False),  # a machine grade
    ],
)
def test_the_fast_path_takes_people_only_rows(rows: list[tuple[Any, ...]], taken: bool) -> None:
    plain = grade_rows._plain_grades(rows, "median", include_stale=True)
    assert (plain is not None) == taken
    if taken:
        assert plain == _general(rows, "median", True, "assessor")
    stale = grade_rows._plain_grades(rows, "median", include_stale=False)
    assert stale is None or not any(row[3] for row in rows)
