"""annotations.metrics.ndcg: hand-computed conventions and trec_eval (pytrec_eval) parity."""

import math
from collections.abc import Iterator, Sequence

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics.ndcg import (
    CutoffScores,
    condensed,
    dcg,
    effective_grade,
    gain,
    idcg,
    idcgs_for,
    judged_at,
    ndcg,
    order_ranking,
    query_scores,
    run_mean,
)

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def trec_ndcg(
    qrels: Qrels, run: Run, ks: Sequence[int], *, condensed_list: bool = False
) -> dict[str, dict[str, float]]:
    """pytrec_eval's ndcg_cut at ``ks`` (trec_eval -J when ``condensed_list``)."""
    measure = "ndcg_cut." + ",".join(str(k) for k in ks)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {measure}, judged_docs_only_flag=condensed_list
    )
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


def scores_by_rank(count: int) -> dict[str, float]:
    """Placeholder scores that keep docnos r0, r1, ... in that order."""
    return {f"r{i}": float(count - i) for i in range(count)}


# --- the worked example of docs/ndcg.md ---------------------------------------------------

WORKED_RANKING = [3, 2, 3, 0, 1, 2]
WORKED_ALL_GRADES = [*WORKED_RANKING, 3, 2]  # two relevant documents were not retrieved


def worked_qrels(scheme: str) -> Qrels:
    grades = {f"r{i}": grade for i, grade in enumerate(WORKED_RANKING)}
    grades |= {"missed-a": 3, "missed-b": 2}
    if scheme == "exponential":  # trec_eval's gain is the qrels value: rewrite it
        grades = {docno: 2**grade - 1 for docno, grade in grades.items()}
    return {"q": grades}


@pytest.mark.parametrize(
    ("scheme", "dcg_3dp", "idcg_3dp", "ndcg_exact"),
    [
        ("linear", 6.861, 8.740, 0.7850023719699),
        ("exponential", 13.848, 18.438, 0.7510833867922),
    ],
)
def test_worked_example_matches_the_document_and_trec_eval(
    scheme: str, dcg_3dp: float, idcg_3dp: float, ndcg_exact: float
) -> None:
    dcg6 = dcg(WORKED_RANKING, 6, scheme)
    idcg6 = idcg(WORKED_ALL_GRADES, 6, scheme)
    assert round(dcg6, 3) == dcg_3dp
    assert round(idcg6, 3) == idcg_3dp
    assert ndcg(dcg6, idcg6) == pytest.approx(ndcg_exact, rel=1e-12)

    docnos = [f"r{i}" for i in range(6)]
    grades = worked_qrels("linear")["q"]
    scores = query_scores(docnos, grades, [6], scheme)[6]
    assert scores.dcg == dcg6
    assert scores.ndcg == ndcg(dcg6, idcg6)
    trec = trec_ndcg(worked_qrels(scheme), {"q": scores_by_rank(6)}, [6])
    assert scores.ndcg == trec["q"]["ndcg_cut_6"]  # bit for bit, not approximately


def test_worked_example_dcg_rewards_the_order_cumulative_gain_ignores() -> None:
    assert sum(WORKED_RANKING) == 11
    assert dcg(sorted(WORKED_RANKING, reverse=True), 6, "linear") > dcg(WORKED_RANKING, 6, "linear")


# --- ordering -----------------------------------------------------------------------------


def test_ties_on_score_break_by_docno_descending_bytewise() -> None:
    results = [("d10", 1.0), ("a", 0.5), ("d9", 1.0), ("D9", 1.0), ("x", 2.0), ("d9a", 1.0)]
    # Byte order: "D" (0x44) < "d"; "d10" < "d9" because "1" < "9"; the prefix "d9" < "d9a".
    assert order_ranking(results) == ["x", "d9a", "d9", "d10", "D9", "a"]


def test_tie_order_is_the_one_trec_eval_uses() -> None:
    results = [("d10", 1.0), ("d9", 1.0), ("D9", 1.0), ("d9a", 1.0)]
    # Distinct grades make every permutation score differently.
    grades = {"d9a": 4, "d9": 3, "d10": 2, "D9": 1}
    ours = query_scores(order_ranking(results), grades, [4], "linear")[4].ndcg
    assert ours == 1.0
    trec = trec_ndcg({"q": grades}, {"q": dict(results)}, [4])
    assert trec["q"]["ndcg_cut_4"] == ours


def test_non_ascii_docnos_sort_by_code_point_like_utf8_bytes() -> None:
    assert order_ranking([("z", 1.0), ("é", 1.0), ("Z", 1.0)]) == ["é", "z", "Z"]


def test_negative_zero_ties_with_zero() -> None:
    assert order_ranking([("a", -0.0), ("b", 0.0)]) == ["b", "a"]


def test_results_without_scores_keep_the_given_order() -> None:
    assert order_ranking([("b", None), ("c", None), ("a", None)]) == ["b", "c", "a"]
    assert order_ranking([]) == []


@pytest.mark.parametrize(
    "results",
    [
        [("a", 1.0), ("b", None)],  # mixed scored and unscored
        [("a", 1.0), ("a", 0.5)],  # duplicate docno
        [("a", math.nan)],
    ],
)
def test_order_ranking_rejects_ambiguous_results(results: list[tuple[str, float | None]]) -> None:
    with pytest.raises(ValueError):
        order_ranking(results)


# --- gain, DCG, IDCG ----------------------------------------------------------------------


def test_gain_schemes() -> None:
    assert gain(3, "linear") == 3.0
    assert gain(3, "exponential") == 7.0
    assert gain(1, "exponential") == 1.0
    for scheme in ("linear", "exponential"):
        assert gain(0, scheme) == 0.0
        assert gain(-2, scheme) == 0.0
    with pytest.raises(ValueError):
        gain(1, "quadratic")


def test_dcg_discounts_by_log2_of_rank_plus_one() -> None:
    assert dcg([1, 1, 1], 3, "linear") == 1 + 1 / math.log2(3) + 1 / 2
    assert dcg([None, 2], 2, "linear") == 2 / math.log2(3)  # unjudged adds nothing
    assert dcg([-1, 2], 2, "linear") == 2 / math.log2(3)  # negative adds nothing
    assert dcg([3, 3], 1, "linear") == 3.0  # cut at k
    assert dcg([], 5, "linear") == 0.0


def test_idcg_uses_all_judged_documents_sorted_by_grade() -> None:
    grades = [0, 1, 3, -1, 2]
    assert idcg(grades, 2, "linear") == 3 + 2 / math.log2(3)
    assert idcg(grades, 10, "linear") == 3 + 2 / math.log2(3) + 1 / 2  # fewer than k relevant
    assert idcg(grades, 1, "exponential") == 7.0
    assert idcg([0, 0, -2], 5, "linear") == 0.0
    assert idcg([], 5, "linear") == 0.0


def test_idcgs_for_equals_idcg_per_cutoff() -> None:
    grades = [3, 2, 3, 0, 1, 2, 3, 2]
    result = idcgs_for(grades, [10, 1, 6, 6], "exponential")
    assert list(result) == [1, 6, 10]
    assert all(result[k] == idcg(grades, k, "exponential") for k in result)


def test_ndcg_is_zero_when_no_relevant_document_is_known() -> None:
    assert ndcg(0.0, 0.0) == 0.0
    scores = query_scores(["a", "b"], {"a": 0, "b": 0}, [1, 5], "linear")
    assert scores[5] == CutoffScores(k=5, dcg=0.0, ndcg=0.0, judged=2 / 5, ndcg_condensed=0.0)


# --- judged@k, condensed lists and query_scores --------------------------------------------


def test_fewer_results_than_k() -> None:
    scores = query_scores(["a"], {"a": 1, "b": 1}, [1, 5], "linear")
    assert scores[1].ndcg == 1.0
    assert scores[5].dcg == 1.0
    assert scores[5].ndcg == 1 / (1 + 1 / math.log2(3))  # b was never retrieved
    assert scores[5].judged == 1 / 5  # divisor k, not the 1 document retrieved
    assert judged_at([1], 5) == 1 / 5


def test_unjudged_documents_in_the_top_k() -> None:
    ranking = ["a", "u1", "c", "u2", "d"]
    grades = {"a": 1, "c": 2, "d": 0}
    scores = query_scores(ranking, grades, [1, 3, 5], "linear")
    ideal_3 = 2 + 1 / math.log2(3)
    assert scores[3].dcg == 1 + 2 / 2
    assert scores[3].ndcg == (1 + 2 / 2) / ideal_3
    assert scores[3].judged == 2 / 3
    # Condensed list [a, c, d]: c moves from rank 3 up to rank 2.
    assert scores[3].ndcg_condensed == (1 + 2 / math.log2(3)) / ideal_3
    assert scores[1].ndcg == scores[1].ndcg_condensed == 1 / 2
    assert scores[5].judged == 3 / 5
    assert condensed([1, None, 2, None, 0]) == [1, 2, 0]

    qrels = {"q": grades}
    run = {"q": dict(zip(ranking, [5.0, 4.0, 3.0, 2.0, 1.0], strict=True))}
    trec = trec_ndcg(qrels, run, [1, 3, 5])
    trec_condensed = trec_ndcg(qrels, run, [1, 3, 5], condensed_list=True)
    for k in (1, 3, 5):
        assert scores[k].ndcg == trec["q"][f"ndcg_cut_{k}"]
        assert scores[k].ndcg_condensed == trec_condensed["q"][f"ndcg_cut_{k}"]


def test_negative_grade_is_in_pool_but_unjudged_like_trec_eval() -> None:
    ranking = ["a", "b", "c"]
    grades = {"a": -1, "b": 2, "c": 0}
    scores = query_scores(ranking, grades, [3], "linear")[3]
    assert scores.dcg == 2 / math.log2(3)  # no gain for -1
    assert scores.ndcg == (2 / math.log2(3)) / 2  # and no place in the ideal list
    assert scores.judged == 2 / 3  # counted as unjudged
    assert scores.ndcg_condensed == 1.0  # and dropped from the condensed list
    only_negative = query_scores(["a"], {"a": -2}, [3], "linear")[3]
    assert only_negative == CutoffScores(k=3, dcg=0.0, ndcg=0.0, judged=0.0, ndcg_condensed=0.0)
    assert judged_at([-1, 2, 0], 3) == 2 / 3
    assert condensed([-1, 2, 0]) == [2, 0]

    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    assert trec_ndcg({"q": grades}, run, [3])["q"]["ndcg_cut_3"] == scores.ndcg
    trec_condensed = trec_ndcg({"q": grades}, run, [3], condensed_list=True)
    assert trec_condensed["q"]["ndcg_cut_3"] == scores.ndcg_condensed


def test_query_scores_accepts_integer_ids_and_precomputed_idcgs() -> None:
    grades = {10: 2, 11: 1, 12: 0}
    idcgs = idcgs_for(grades.values(), [2], "linear")
    assert query_scores([11, 10], grades, [2], "linear", idcgs) == query_scores(
        [11, 10], grades, [2], "linear"
    )
    assert query_scores([11, 10], grades, [2], "linear")[2].ndcg == (
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


class CountingRanking(Sequence[str]):
    """A ranking that records how deep it was read."""

    def __init__(self, docnos: list[str]) -> None:
        self.docnos = docnos
        self.deepest = -1

    def __len__(self) -> int:
        return len(self.docnos)

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        self.deepest = max(self.deepest, index)
        return self.docnos[index]

    def __iter__(self) -> Iterator[str]:
        for index in range(len(self.docnos)):
            yield self[index]


def test_query_scores_reads_only_as_deep_as_needed() -> None:
    docnos = [f"d{i}" for i in range(1000)]
    all_judged = CountingRanking(docnos)
    query_scores(all_judged, {docno: 1 for docno in docnos}, [3, 10], "linear")
    assert all_judged.deepest == 9

    # Only every 5th document judged: the condensed list needs 10 of them, i.e. 46 documents.
    sparse = CountingRanking(docnos)
    scores = query_scores(sparse, {docno: 1 for docno in docnos[::5]}, [3, 10], "linear")
    assert sparse.deepest == 45
    assert scores[10].ndcg_condensed == 1.0
    assert scores[10].judged == 2 / 10


@pytest.mark.parametrize("ks", [[], [0], [3, -1], [True]])
def test_bad_cutoffs_are_rejected(ks: list[int]) -> None:
    with pytest.raises(ValueError):
        query_scores(["a"], {"a": 1}, ks, "linear")
    with pytest.raises(ValueError):
        idcgs_for([1], ks, "linear")


def test_other_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError):
        dcg([1], 0, "linear")
    with pytest.raises(ValueError):
        idcg([1], 0, "linear")
    with pytest.raises(ValueError):
        judged_at([1], 0)
    with pytest.raises(ValueError):
        query_scores(["a"], {"a": 1}, [5], "log")
    with pytest.raises(ValueError):
        query_scores(["a"], {"a": 1}, [5, 10], "linear", idcgs={5: 1.0})


# --- aggregation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grades", "rule", "expected"),
    [
        ([2], "median", 2),
        ([1, 2], "median", 1),  # lower median on an even count
        ([0, 1, 3], "median", 1),
        ([3, 0, 2, 1], "median", 1),
        ([2, 2, 0], "majority", 2),
        ([1, 3], "majority", 1),  # tie: lower median of {1, 3}
        ([0, 0, 2, 2, 3, 3], "majority", 2),  # tie: lower median of {0, 2, 3}
        ([0, 3, 3, 1, 1], "majority", 1),
        ([1, 2], "mean", 1),  # 1.5: half rounds down
        ([2, 3], "mean", 2),  # 2.5: also down (half-to-even would differ from 1.5)
        ([1, 2, 2], "mean", 2),  # 1.67
        ([0, 0, 1], "mean", 0),  # 0.33
        ([0, 3], "mean", 1),
        ([-1, 0], "mean", -1),
        ([3, 3, 3], "mean", 3),
    ],
)
def test_effective_grade(grades: list[int], rule: str, expected: int) -> None:
    result = effective_grade(grades, rule)
    assert result == expected
    assert isinstance(result, int)


def test_effective_grade_defaults_to_median_and_rejects_bad_input() -> None:
    assert effective_grade([0, 3, 3]) == 3
    with pytest.raises(ValueError):
        effective_grade([], "median")
    with pytest.raises(ValueError):
        effective_grade([1], "mode")


def test_run_mean_counts_missing_queries_as_zero_and_ignores_unevaluated() -> None:
    values = {"q1": 0.5, "q2": 1.0, "extra": 1.0}
    assert run_mean(values, ["q1", "q2", "q3"]) == (0.5 + 1.0 + 0.0) / 3
    assert run_mean({1: 0.25, 2: 0.75}, [2, 1]) == 0.5


def test_run_mean_sums_in_sorted_query_order() -> None:
    # In sorted order 1e16 + 1.0 rounds back to 1e16 before -1e16 cancels it; in the
    # mapping's own order the 1.0 would survive.
    values = {"q1": 1e16, "q3": -1e16, "q2": 1.0}
    assert run_mean(values, values) == 0.0
    assert (1e16 + -1e16 + 1.0) / 3 != 0.0


def test_run_mean_without_evaluated_queries_is_an_error() -> None:
    with pytest.raises(ValueError):
        run_mean({"q1": 0.5}, [])


# --- property: identical to trec_eval on random collections --------------------------------

CUTOFFS = (1, 3, 5, 10, 20)
DOCNOS = st.text(alphabet="aAdD019é", min_size=1, max_size=4)
TINY_SCORES = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.5])  # a tiny set: many ties
MAYBE_GRADE = st.one_of(st.none(), st.integers(min_value=-2, max_value=4))  # None: unjudged


@st.composite
def collections(draw: st.DrawFn) -> tuple[Qrels, Run]:
    qrels: Qrels = {}
    run: Run = {}
    for number in range(draw(st.integers(min_value=1, max_value=4))):
        qid = f"q{number}"
        documents = draw(st.dictionaries(DOCNOS, MAYBE_GRADE, min_size=1, max_size=30))
        judged = {docno: grade for docno, grade in documents.items() if grade is not None}
        if judged:  # trec_eval has no notion of a query with an empty qrels list
            qrels[qid] = judged
        retrieved = draw(st.lists(st.sampled_from(sorted(documents)), unique=True))
        mention_when_empty = draw(st.booleans())  # else the run omits the query entirely
        if retrieved or mention_when_empty:
            run[qid] = {docno: draw(TINY_SCORES) for docno in retrieved}
    return qrels, run


@settings(max_examples=200, deadline=None)
@given(collections(), st.sampled_from(["linear", "exponential"]))
def test_matches_trec_eval_bit_for_bit(collection: tuple[Qrels, Run], scheme: str) -> None:
    qrels, run = collection
    # trec_eval's gain is the qrels value, so exponential gain = qrels rewritten to 2**g - 1.
    # trec_eval segfaults on a query whose grades are all <= -2: form_res_rels memsets
    # (max_rel + 1) * sizeof(long) bytes, a negative size. Such a query scores 0.0 here.
    trec_qrels = {
        qid: {
            docno: 2**grade - 1 if scheme == "exponential" and grade > 0 else grade
            for docno, grade in grades.items()
        }
        for qid, grades in qrels.items()
        if max(grades.values()) >= -1
    }
    trec = trec_ndcg(trec_qrels, run, CUTOFFS)
    trec_condensed = trec_ndcg(trec_qrels, run, CUTOFFS, condensed_list=True)
    assert set(trec) <= set(qrels)

    for qid, grades in qrels.items():
        ranking = order_ranking(run.get(qid, {}).items())
        scores = query_scores(ranking, grades, CUTOFFS, scheme)
        ranking_grades = [grades.get(docno) for docno in ranking]
        for k in CUTOFFS:
            # pytrec_eval leaves out queries the run does not mention: they score 0 (-c).
            expected = trec.get(qid, {}).get(f"ndcg_cut_{k}", 0.0)
            expected_condensed = trec_condensed.get(qid, {}).get(f"ndcg_cut_{k}", 0.0)
            assert scores[k].ndcg == expected
            assert scores[k].ndcg_condensed == expected_condensed
            # The single-pass entry point agrees exactly with the composable functions.
            ideal = idcg(grades.values(), k, scheme)
            condensed_dcg = dcg(condensed(ranking_grades), k, scheme)
            assert scores[k].dcg == dcg(ranking_grades, k, scheme)
            assert scores[k].ndcg == ndcg(scores[k].dcg, ideal)
            assert scores[k].ndcg_condensed == ndcg(condensed_dcg, ideal)
            judged_count = sum(1 for docno in ranking[:k] if grades.get(docno, -1) >= 0)
            assert scores[k].judged == judged_at(ranking_grades, k) == judged_count / k
