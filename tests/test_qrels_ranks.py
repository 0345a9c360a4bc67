"""annotations.metrics.qrels_ranks: a query's rankings reduced to where they hold its qrels
documents, and rankings that every measure scores as the originals."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics import ndcg_arrays
from annotations.metrics.qrels_ranks import equivalent_rankings, qrels_ranks


def test_hand_computed_ranks() -> None:
    documents = np.array([3, 7, 9], dtype=np.int64)
    reduced = qrels_ranks([[5, 9, 1, 3], [], [7], [8, 6]], documents)
    assert reduced.lengths.tolist() == [4, 0, 1, 2]
    assert reduced.rows.tolist() == [0, 0, 2]
    assert reduced.positions.tolist() == [1, 3, 0]
    assert reduced.indices.tolist() == [2, 0, 1]  # 9, 3 and 7 in `documents`


def test_equivalent_rankings_keep_lengths_and_qrels_documents_in_place() -> None:
    documents = np.array([0, 4], dtype=np.int64)
    rankings = equivalent_rankings(qrels_ranks([[2, 4, 1, 0], [3]], documents))
    assert [len(ranking) for ranking in rankings] == [4, 1]
    assert rankings[0][1] == 4 and rankings[0][3] == 0
    others = np.concatenate([rankings[0][[0, 2]], rankings[1]])
    assert len(set(others.tolist())) == 3 and (others < 0).all()  # distinct, no document's id


def test_many_runs_are_read_in_chunks_without_losing_a_rank() -> None:
    rng = np.random.default_rng(4)
    documents = np.sort(rng.choice(10**9, size=500, replace=False)).astype(np.int64)
    pool = np.concatenate([documents, rng.choice(10**9, size=3000) + 10**9])
    rankings = [rng.permutation(pool)[: rng.integers(0, 2000)] for _ in range(30)]
    reduced = qrels_ranks(rankings, documents)
    for run, ranking in enumerate(rankings):
        mine = reduced.rows == run
        where = np.flatnonzero(np.isin(ranking, documents))
        assert reduced.positions[mine].tolist() == where.tolist()
        assert documents[reduced.indices[mine]].tolist() == ranking[where].tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.integers(-3, 40), st.integers(-2, 4), max_size=30),
    st.lists(st.lists(st.integers(-3, 50), unique=True, max_size=40), max_size=6),
    st.sampled_from(["linear", "exponential"]),
    st.lists(st.integers(1, 45), min_size=1, max_size=4),
)
def test_reduced_rankings_score_as_the_originals_bit_for_bit(
    grades: dict[int, int], lists: list[list[int]], scheme: str, ks: list[int]
) -> None:
    documents = np.array(sorted(grades), dtype=np.int64)
    rankings = dict(enumerate(lists))
    reduced = qrels_ranks(lists, documents)
    _, expected = ndcg_arrays.score_matrix(rankings, grades, ks, scheme)
    equivalent = dict(enumerate(equivalent_rankings(reduced)))
    _, got = ndcg_arrays.score_matrix(equivalent, grades, ks, scheme)
    np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))
    got = ndcg_arrays.ranks_score_matrix(reduced, grades, ks, scheme)
    np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))
