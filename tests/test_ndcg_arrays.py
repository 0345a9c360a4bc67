"""Tests for annotations.metrics.ndcg_arrays: bit-identical to ndcg.query_scores, run by run,
from whole rankings and from the ranks of their qrels documents alone."""

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import overload

import numpy as np
import pytest

from annotations.metrics.ndcg import idcgs_for, query_scores
from annotations.metrics.ndcg_arrays import MEASURES, ranks_score_matrix, score_matrix
from annotations.metrics.qrels_ranks import qrels_ranks


def expected_matrix(
    rankings: Mapping[int, Sequence[int]],
    grades: Mapping[int, int],
    ks: Sequence[int],
    scheme: str,
    idcgs: Mapping[int, float],
) -> np.ndarray:
    rows = []
    for ranking in rankings.values():
        scores = query_scores(ranking, grades, ks, scheme, idcgs)
        rows.append([[getattr(scores[k], measure) for k in sorted(ks)] for measure in MEASURES])
    return np.array(rows, dtype=np.float64).reshape(len(rankings), len(MEASURES), len(ks))


def assert_bit_identical(
    rankings: Mapping[int, Sequence[int]],
    grades: Mapping[int, int],
    ks: Sequence[int],
    scheme: str,
    idcgs: Mapping[int, float] | None = None,
) -> np.ndarray:
    if idcgs is None:
        idcgs = idcgs_for(grades.values(), ks, scheme)
    runs, scores = score_matrix(rankings, grades, ks, scheme, idcgs)
    expected = expected_matrix(rankings, grades, ks, scheme, idcgs)
    assert runs == list(rankings)
    assert scores.dtype == np.float64
    assert scores.shape == expected.shape
    assert (scores == expected).all()
    # == treats -0.0 and 0.0 alike; the bit patterns do not.
    np.testing.assert_array_equal(scores.view(np.int64), expected.view(np.int64))
    documents = np.array(sorted(grades), dtype=np.int64)
    reduced = qrels_ranks(list(rankings.values()), documents)
    from_ranks = ranks_score_matrix(reduced, grades, ks, scheme, idcgs)
    np.testing.assert_array_equal(from_ranks.view(np.int64), expected.view(np.int64))
    return scores


def random_collection(
    rng: np.random.Generator, scheme: str, *, runs: int = 50, docs: int = 500, longest: int = 300
) -> tuple[dict[int, list[int]], dict[int, int]]:
    doc_ids = rng.choice(10**12, size=docs, replace=False)  # sparse ids, as primary keys
    judged = rng.choice(doc_ids, size=int(0.4 * docs), replace=False)
    low, high = (-2, 3) if scheme == "linear" else (0, 4)
    grades = {int(doc): int(rng.integers(low, high + 1)) for doc in judged}
    rankings = {
        int(run): [int(doc) for doc in rng.permutation(doc_ids)[: rng.integers(0, longest + 1)]]
        for run in rng.choice(10**6, size=runs, replace=False)
    }
    return rankings, grades


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ks", [[5, 10, 20], list(range(1, 101)), [1, 7, 1000]])
@pytest.mark.parametrize("scheme", ["linear", "exponential"])
def test_random_collections_match_query_scores_bit_for_bit(
    seed: int, ks: list[int], scheme: str
) -> None:
    rankings, grades = random_collection(np.random.default_rng([seed, len(ks)]), scheme)
    assert_bit_identical(rankings, grades, ks, scheme)


@pytest.mark.parametrize("seed", range(3))
def test_sparse_judgements_and_long_rankings_match_query_scores(seed: int) -> None:
    # Few judged documents: the condensed list reads far beyond max(ks), over several rounds.
    rng = np.random.default_rng(100 + seed)
    doc_ids = np.arange(5000)
    grades = {int(doc): int(rng.integers(-1, 4)) for doc in rng.choice(doc_ids, 60)}
    rankings = {run: [int(d) for d in rng.permutation(doc_ids)[:2000]] for run in range(20)}
    for ks in ([1, 2, 3], [10, 50], list(range(1, 31))):
        assert_bit_identical(rankings, grades, ks, "exponential")


def test_hand_computed_small_case() -> None:
    # Doc 2 is unjudged (negative), doc 3 non-relevant, doc 5 absent from the grades.
    grades = {1: 3, 2: -1, 3: 0, 4: 2, 6: 2}
    ks = [1, 2, 3, 5]
    idcgs = idcgs_for(grades.values(), ks, "linear")
    runs, scores = score_matrix({7: [1, 2, 3, 4, 5]}, grades, ks, "linear", idcgs)
    assert runs == [7]
    dcg = [3.0, 3.0, 3.0, 3.0 + 2 / math.log2(5)]
    assert scores[0, MEASURES.index("dcg")].tolist() == dcg
    assert scores[0, MEASURES.index("judged")].tolist() == [1.0, 0.5, 2 / 3, 3 / 5]
    # Condensed list: grades [3, 0, 2] at positions 0, 1, 2.
    condensed = [3.0, 3.0, 3.0 + 2 / math.log2(4), 4.0]
    ideal = [3.0, 3.0 + 2 / math.log2(3), 3.0 + 2 / math.log2(3) + 2 / math.log2(4)]
    ideal.append(ideal[-1])
    assert [idcgs[k] for k in ks] == ideal
    assert scores[0, MEASURES.index("ndcg")].tolist() == [
        d / i for d, i in zip(dcg, ideal, strict=True)
    ]
    assert scores[0, MEASURES.index("ndcg_condensed")].tolist() == [
        c / i for c, i in zip(condensed, ideal, strict=True)
    ]
    assert_bit_identical({7: [1, 2, 3, 4, 5]}, grades, ks, "linear")


def test_no_runs_give_an_empty_matrix() -> None:
    runs, scores = score_matrix({}, {1: 2}, [1, 5, 10], "linear", {1: 2.0, 5: 2.0, 10: 2.0})
    assert runs == []
    assert scores.shape == (0, 4, 3)


def test_empty_rankings_score_zero() -> None:
    grades = {1: 2, 2: 0}
    scores = assert_bit_identical({3: [], 4: [1, 2], 5: []}, grades, [1, 2, 10], "linear")
    assert (scores[[0, 2]] == 0.0).all()
    scores = assert_bit_identical({3: []}, grades, [1, 2, 10], "linear")
    assert (scores == 0.0).all()
    assert not np.signbit(scores).any()


def test_rankings_shorter_than_k_keep_their_final_sums() -> None:
    grades = {1: 1, 2: 3, 3: -2, 4: 0}
    rankings = {1: [2], 2: [3, 1], 3: [9, 8, 4, 2, 1], 4: [1, 2, 3, 4, 5, 6, 7]}
    scores = assert_bit_identical(rankings, grades, [1, 3, 10, 1000], "exponential")
    assert scores[0, 1, 1] == scores[0, 1, 3] == 7.0  # dcg of [2] at k = 3 and 1000
    assert scores[0, 2].tolist() == [1.0, 1 / 3, 1 / 10, 1 / 1000]


def test_grades_and_rankings_without_any_judged_or_relevant_document() -> None:
    rankings = {1: [1, 2, 3], 2: [4, 5]}
    assert (assert_bit_identical(rankings, {}, [1, 2, 5], "linear") == 0.0).all()
    # Judged but nothing relevant: idcg is 0 at every k, nDCG 0.0, judged@k still counts.
    scores = assert_bit_identical(rankings, {1: 0, 2: -1, 4: 0}, [1, 2, 5], "linear")
    assert scores[0, 2].tolist() == [1.0, 0.5, 0.2]
    assert (scores[:, [0, 1, 3]] == 0.0).all()


def test_idcg_zero_at_some_cutoffs_gives_zero_ndcg_there() -> None:
    grades = {1: 2, 2: 1}
    idcgs = {1: 0.0, 2: 2.5, 3: 0.0, 4: 4.0}
    scores = assert_bit_identical({1: [1, 2], 2: [2, 1, 3]}, grades, [1, 2, 3, 4], "linear", idcgs)
    assert scores[:, 0, [0, 2]].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert scores[0, 0, 1] == (2.0 + 1 / math.log2(3)) / 2.5


def test_condensed_list_reads_beyond_max_k() -> None:
    # Top two are unjudged: nDCG@2 is 0, nDCG'@2 scores docs 12 and 13 moved up.
    grades = {10: -1, 12: 1, 13: 2, 14: 3}
    scores = assert_bit_identical({1: [10, 11, 12, 13, 14]}, grades, [2], "linear")
    assert scores[0, 1, 0] == 0.0
    assert scores[0, 3, 0] == (1.0 + 2 / math.log2(3)) / (3.0 + 2 / math.log2(3))
    # Judged documents only at the very end of a long ranking.
    ranking = [*range(100, 1100), 1, 2, 3]
    assert_bit_identical({5: ranking, 6: ranking[::-1]}, {1: 1, 2: 0, 3: 2}, [1, 2], "linear")


class RecordingRanking(Sequence[int]):
    """A ranking that remembers how deep it was read."""

    def __init__(self, docs: Sequence[int]) -> None:
        self.docs = docs
        self.deepest = 0

    def __len__(self) -> int:
        return len(self.docs)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...
    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        stop = index.indices(len(self))[1] if isinstance(index, slice) else index + 1
        self.deepest = max(self.deepest, stop)
        return self.docs[index]

    def __iter__(self) -> Iterator[int]:
        raise AssertionError("the whole ranking was iterated")


def test_long_rankings_are_read_only_as_deep_as_needed() -> None:
    all_judged = RecordingRanking(range(10**6))
    grades = {doc: doc % 3 for doc in range(100)}
    score_matrix(
        {1: all_judged}, grades, [5, 10], "linear", idcgs_for(grades.values(), [5, 10], "linear")
    )
    assert all_judged.deepest == 10
    # One judged document in three: the 30th judged one is the 88th; estimates overshoot little.
    sparse = RecordingRanking(range(10**6))
    grades = {doc: 1 for doc in range(0, 10**6, 3)}
    ks = [10, 30]
    idcgs = idcgs_for(grades.values(), ks, "linear")
    _, scores = score_matrix({1: sparse}, grades, ks, "linear", idcgs)
    assert 88 <= sparse.deepest <= 120
    expected = expected_matrix({1: range(1000)}, grades, ks, "linear", idcgs)
    np.testing.assert_array_equal(scores.view(np.int64), expected.view(np.int64))


def test_rankings_may_be_tuples_or_arrays() -> None:
    grades = {1: 1, 2: 2, 3: 0}
    rankings: dict[int, Sequence[int]] = {1: (3, 2, 1), 2: np.array([2, 5, 1]), 3: [1]}  # type: ignore[dict-item]
    assert_bit_identical(rankings, grades, [1, 2, 3], "exponential")


@pytest.mark.parametrize("ks", [[], [0], [1, -3], [True], [2.0]])
def test_bad_cutoffs_are_refused(ks: list[int]) -> None:
    with pytest.raises(ValueError, match="cutoff"):
        score_matrix({1: [1]}, {1: 1}, ks, "linear", {1: 1.0})


def test_unknown_scheme_and_missing_idcgs_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown gain scheme"):
        score_matrix({1: [1]}, {1: 1}, [1], "log", {1: 1.0})
    with pytest.raises(ValueError, match="idcgs lacks cutoffs"):
        score_matrix({1: [1]}, {1: 1}, [1, 2], "linear", {1: 1.0})


def test_idcgs_default_to_those_of_the_grades() -> None:
    grades = {1: 1, 2: 3}
    _, computed = score_matrix({1: [2, 1]}, grades, [1, 2], "linear")
    _, given = score_matrix(
        {1: [2, 1]}, grades, [1, 2], "linear", idcgs_for([1, 3], [1, 2], "linear")
    )
    np.testing.assert_array_equal(computed.view(np.int64), given.view(np.int64))


def test_repeated_and_unsorted_cutoffs_give_ascending_distinct_columns() -> None:
    grades = {1: 1, 2: 3}
    idcgs = idcgs_for(grades.values(), [1, 2], "linear")
    _, scores = score_matrix({1: [2, 1]}, grades, [2, 1, 2], "linear", idcgs)
    _, ascending = score_matrix({1: [2, 1]}, grades, [1, 2], "linear", idcgs)
    np.testing.assert_array_equal(scores, ascending)


def test_deep_positions_use_the_math_log2_discounts() -> None:
    # np.log2(1621.0) and np.log2(3242.0) differ from math.log2 in the last bit on glibc:
    # relevant documents at positions 1619 and 3240 (0-based) catch a numpy discount. Run 2
    # puts them there in its condensed list, behind 500 unjudged documents.
    grades = {doc: 0 for doc in range(4000)} | {1619: 1, 3240: 3}
    rankings = {1: list(range(4000)), 2: [*range(-500, 0), *range(4000)]}
    assert_bit_identical(rankings, grades, [10, 1620, 3241, 4000], "linear")


def test_extreme_zero_and_colliding_document_ids() -> None:
    # Id 0 is the key of the hash table's empty slots; consecutive ids and multiples of a
    # large power of two probe long chains.
    extremes = [0, -1, 1, 2**63 - 1, -(2**63), 2**40, -(2**40)]
    ids = [*extremes, *range(2, 3000), *(j << 44 for j in range(1, 1000))]
    rng = np.random.default_rng(7)
    graded = rng.choice(len(ids), size=len(ids) // 2, replace=False)
    grades = {ids[i]: int(rng.integers(-1, 4)) for i in graded} | {2**63 - 1: 3, -(2**63): 2}
    rankings = {run: [ids[i] for i in rng.permutation(len(ids))[:400]] for run in range(30)}
    rankings[30] = extremes
    assert_bit_identical(rankings, grades, [1, 5, 50], "linear")
    assert_bit_identical({1: [0, 5]}, {5: 1}, [1, 2], "linear")  # 0 absent, in an empty slot
    assert_bit_identical({1: [0, 5]}, {0: 2, 5: 1}, [1, 2], "exponential")


def test_more_than_255_distinct_grades() -> None:
    grades = {doc: doc - 300 for doc in range(700)}
    rankings = {run: list(range(run, 700, 7)) for run in range(7)}
    assert_bit_identical(rankings, grades, [1, 10, 100], "linear")
