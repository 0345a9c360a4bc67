"""One query's top-grade bounds without copying its grades per run: the same bits as scoring
every run against all of the query's grades with its unjudged documents promoted."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics import ndcg
from annotations.selectors.top_grade_bounds import query_top_grade_bounds


def _reference(
    rankings: dict[int, list[int]], grades: dict[int, int], top: int, k: int, scheme: str
) -> dict[int, float]:
    """The bounds as first written: the run's unjudged documents promoted in a copy of all
    of the query's grades, and the run scored against that copy."""
    found = {}
    for run_id, ranking in rankings.items():
        unjudged = [doc for doc in ranking if not ndcg.is_judged(grades.get(doc))]
        if not unjudged:
            continue
        promoted = dict(grades)
        promoted.update(dict.fromkeys(unjudged, top))
        found[run_id] = ndcg.query_scores(ranking, promoted, [k], scheme)[k].ndcg
    return found


@st.composite
def queries(draw: st.DrawFn) -> tuple[dict[int, list[int]], dict[int, int], int, int, str]:
    documents = draw(st.integers(1, 40))
    top = draw(st.integers(0, 4))
    grades = draw(
        st.dictionaries(st.integers(0, documents - 1), st.integers(-1, top), max_size=documents)
    )
    runs = draw(st.integers(0, 6))
    rankings = {
        run_id: draw(st.permutations(range(documents)))[: draw(st.integers(0, documents))]
        for run_id in range(runs)
    }
    k = draw(st.sampled_from([1, 3, 5, 10, 20]))
    return rankings, grades, top, k, draw(st.sampled_from(ndcg.SCHEMES))


@settings(max_examples=400, deadline=None)
@given(queries())
def test_the_bounds_are_the_bits_of_scoring_against_every_grade_promoted(
    query: tuple[dict[int, list[int]], dict[int, int], int, int, str],
) -> None:
    rankings, grades, top, k, scheme = query
    cut = {run_id: ranking[:k] for run_id, ranking in rankings.items()}  # what is read
    fast = query_top_grade_bounds(cut, grades, top_grade=top, k=k, scheme=scheme)
    slow = _reference(cut, grades, top, k, scheme)
    assert {run: value.hex() for run, value in fast.items()} == {
        run: value.hex() for run, value in slow.items()
    }


def test_a_worked_example() -> None:
    # d1 judged 3, d2 judged 0, d3 unjudged, d4 judged -1 (counts as unjudged), d9 judged 2
    # off the ranking: promoting d3 and d4 to 3 gives the ideal list 3, 3, 3, 2.
    grades = {1: 3, 2: 0, 4: -1, 9: 2}
    found = query_top_grade_bounds(
        {7: [3, 1, 2, 4], 8: [1, 2]}, grades, top_grade=3, k=4, scheme="linear"
    )
    dcg = 3 / 1 + 3 / math.log2(3) + 0 + 3 / math.log2(5)
    ideal = 3 + 3 / math.log2(3) + 3 / 2 + 2 / math.log2(5)
    assert found == {7: dcg / ideal}  # run 8 has no unjudged document: no bound
