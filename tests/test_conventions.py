"""annotations.metrics.conventions: hand-computed differences, and scikit-learn's ndcg_score,
ranx and ir_measures as oracles on the worked example, ties, unretrieved ideal documents
and random collections."""

import math
import warnings
from typing import Any

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics.conventions import (
    CONVENTIONS,
    ConventionError,
    check_measures,
    convention_values,
    ir_measures_order,
    numba_argsort,
    numpy_mean,
    query_ndcg,
    ranx_order,
)
from annotations.metrics.measures import Measure
from tests.conftest import optional_module


@pytest.fixture(scope="module")
def sklearn_ndcg() -> Any:
    return optional_module("sklearn.metrics").ndcg_score


@pytest.fixture(scope="module")
def ranx() -> Any:
    module = optional_module("ranx")
    warnings.filterwarnings("ignore", module="numba")  # ranx's own id hashing casts
    return module


# docs/ndcg.md's worked example: six results, eight judged documents (two unretrieved).
WORKED_GRADES = {"d1": 3, "d2": 2, "d3": 3, "d4": 0, "d5": 1, "d6": 2, "d7": 3, "d8": 2}
WORKED_RESULTS = [("d1", 6.0), ("d2", 5.0), ("d3", 4.0), ("d4", 3.0), ("d5", 2.0), ("d6", 1.0)]

# Ties: d1 and d2 share the top score, d3..d5 the next. trec_eval orders ties by docno
# descending (d2 before d1), scikit-learn averages the gains of each tied group.
TIED_GRADES = {"d1": 1, "d2": 2, "d3": 0, "d4": 2, "d5": 1}
TIED_RESULTS = [("d2", 2.0), ("d1", 2.0), ("d5", 1.0), ("d4", 1.0), ("d3", 1.0)]

# One relevant document retrieved, nine more judged relevant and missed.
MISSED_GRADES = {"d1": 1, **{f"m{i}": 1 for i in range(9)}}
MISSED_RESULTS = [("d1", 3.0), ("x1", 2.0), ("x2", 1.0)]


def _sklearn(
    oracle: Any, results: list[tuple[str, float]], grades: dict[str, int], k: int
) -> float:
    labels = [max(grades.get(docno, 0), 0) for docno, _ in results]
    return float(oracle([labels], [[score for _, score in results]], k=k))


def _ranx(
    module: Any,
    qrels: dict[str, dict[str, int]],
    results: dict[str, list[tuple[str, float]]],
    metric: str,
) -> Any:
    run = module.Run({qid: dict(rows) for qid, rows in results.items()})
    return module.evaluate(
        module.Qrels(qrels), run, metric, make_comparable=True, return_mean=False
    )


# --- hand-computed ------------------------------------------------------------------------


def test_the_worked_example_under_each_convention() -> None:
    values = {c: query_ndcg(c, WORKED_RESULTS, WORKED_GRADES, 6, "linear") for c in CONVENTIONS}
    # docs/ndcg.md: DCG@6 6.861 over IDCG@6 8.740 (all eight judged documents).
    assert values["trec_eval"] == values["ranx"] == values["ir_measures"]
    assert values["trec_eval"] == pytest.approx(0.7850023719699, abs=1e-12)
    # scikit-learn's ideal list is the six retrieved grades sorted: 3, 3, 2, 2, 1, 0.
    ideal = 3 + 3 / math.log2(3) + 2 / 2 + 2 / math.log2(5) + 1 / math.log2(6)
    gained = 3 + 2 / math.log2(3) + 3 / 2 + 1 / math.log2(6) + 2 / math.log2(7)
    assert values["sklearn"] == pytest.approx(gained / ideal, abs=1e-12)
    assert round(values["sklearn"], 4) == 0.9608


def test_ties_sklearn_averages_the_tied_gains_where_trec_eval_orders_by_docno() -> None:
    # trec_eval: d2 (2) then d1 (1), then d5 (1), d4 (2), d3 (0). Ideal: 2, 2, 1, 1, 0.
    assert query_ndcg("trec_eval", TIED_RESULTS, TIED_GRADES, 1, "linear") == 1.0
    # scikit-learn: rank 1 holds the mean of {2, 1}: 1.5 / 2.
    assert query_ndcg("sklearn", TIED_RESULTS, TIED_GRADES, 1, "linear") == 0.75
    # At 3 the second group {1, 2, 0} (mean 1) covers rank 3 only.
    ideal3 = 2 + 2 / math.log2(3) + 1 / 2
    expected = (1.5 + 1.5 / math.log2(3) + 1 / 2) / ideal3
    assert query_ndcg("sklearn", TIED_RESULTS, TIED_GRADES, 3, "linear") == pytest.approx(
        expected, abs=1e-15
    )
    trec3 = (2 + 1 / math.log2(3) + 1 / 2) / ideal3
    assert query_ndcg("trec_eval", TIED_RESULTS, TIED_GRADES, 3, "linear") == trec3


def test_sklearn_idcg_comes_from_the_retrieved_documents_only() -> None:
    assert query_ndcg("sklearn", MISSED_RESULTS, MISSED_GRADES, 10, "linear") == 1.0
    ideal = sum(1 / math.log2(i + 2) for i in range(10))
    assert query_ndcg("trec_eval", MISSED_RESULTS, MISSED_GRADES, 10, "linear") == 1 / ideal
    assert round(1 / ideal, 4) == 0.2201


def test_sklearn_gains_nothing_for_unjudged_or_negative_grades_and_scores_short_lists() -> None:
    results = [("a", 2.0), ("b", 1.0)]
    assert query_ndcg("sklearn", results, {"a": -1, "b": 1}, 5, "linear") == pytest.approx(
        1 / math.log2(3), abs=1e-15
    )
    assert query_ndcg("sklearn", [("a", 1.0)], {"a": 2}, 5, "linear") == 1.0
    assert query_ndcg("sklearn", [], {"a": 2}, 5, "linear") == 0.0
    assert query_ndcg("sklearn", results, {"a": 0}, 5, "linear") == 0.0


def test_ranx_keeps_the_input_order_of_ties_in_short_lists_and_reorders_long_ones() -> None:
    # Insertion sort up to 16 items: ties keep the platform's order (docno descending).
    short = [(f"d{i:02d}", 1.0) for i in range(16, 0, -1)]
    assert ranx_order(short) == [docno for docno, _ in short]
    long = [(f"d{i:02d}", 1.0) for i in range(40, 0, -1)]
    assert sorted(ranx_order(long)) == sorted(docno for docno, _ in long)
    assert ranx_order(long) != [docno for docno, _ in long]


def test_numba_argsort_sorts_and_numpy_mean_sums_pairwise() -> None:
    keys = [3.0, 1.0, 2.0, 1.0] * 10
    order = numba_argsort(keys)
    assert [keys[i] for i in order] == sorted(keys)
    values = [0.1] * 9
    assert (
        numpy_mean(values) == (((0.1 + 0.1) + (0.1 + 0.1)) + ((0.1 + 0.1) + (0.1 + 0.1)) + 0.1) / 9
    )


def test_ir_measures_orders_ties_by_docno_ascending() -> None:
    assert ir_measures_order([("b", 1.0), ("a", 1.0), ("c", 2.0)]) == ["c", "a", "b"]


def test_the_conventions_define_ndcg_at_k_and_ir_measures_judged_only() -> None:
    assert check_measures("ir_measures", [Measure("Judged", 5), Measure("nDCG", 5)])
    with pytest.raises(ConventionError, match="pytrec_eval"):
        check_measures("ir_measures", [Measure("P", 5)])
    with pytest.raises(ConventionError, match="nDCG@k only"):
        check_measures("sklearn", [Measure("Judged", 5)])
    with pytest.raises(ConventionError, match="unknown convention"):
        check_measures("trec", [Measure("nDCG", 5)])


def test_means_count_unanswered_queries_as_each_library_does() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}}
    results = {"q1": [("d1", 1.0)]}
    measure = Measure("nDCG", 5)
    for convention in ("trec_eval", "sklearn"):
        skipped = convention_values(convention, [measure], qrels, results, complete=False)
        assert skipped.means[measure] == 1.0
        assert list(skipped.per_query) == ["q1"]
    for convention in ("ranx", "ir_measures"):  # 0 for q2 whatever the collection says
        counted = convention_values(convention, [measure], qrels, results, complete=False)
        assert counted.means[measure] == 0.5


# --- the libraries themselves -------------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "grades"),
    [(WORKED_RESULTS, WORKED_GRADES), (TIED_RESULTS, TIED_GRADES), (MISSED_RESULTS, MISSED_GRADES)],
    ids=["worked-example", "ties", "unretrieved-ideal"],
)
@pytest.mark.parametrize("k", [1, 3, 5, 6, 10])
def test_equal_to_each_library_on_the_fixed_cases(
    sklearn_ndcg: Any, ranx: Any, results: list[tuple[str, float]], grades: dict[str, int], k: int
) -> None:
    expected = _sklearn(sklearn_ndcg, results, grades, k)
    assert query_ndcg("sklearn", results, grades, k, "linear") == pytest.approx(expected, abs=1e-12)
    (ranx_value,) = _ranx(ranx, {"q": grades}, {"q": results}, f"ndcg@{k}")
    assert query_ndcg("ranx", results, grades, k, "linear") == ranx_value
    (ranx_exp,) = _ranx(ranx, {"q": grades}, {"q": results}, f"ndcg_burges@{k}")
    assert query_ndcg("ranx", results, grades, k, "exponential") == ranx_exp
    (metric,) = ir_measures.iter_calc([ir_measures.nDCG @ k], {"q": grades}, {"q": dict(results)})
    assert query_ndcg("ir_measures", results, grades, k, "linear") == metric.value


def test_the_tied_case_differs_from_trec_eval_as_measured() -> None:
    trec = [query_ndcg("trec_eval", TIED_RESULTS, TIED_GRADES, k, "linear") for k in (1, 3, 5)]
    sk = [query_ndcg("sklearn", TIED_RESULTS, TIED_GRADES, k, "linear") for k in (1, 3, 5)]
    assert [round(v, 4) for v in trec] == [1.0, 0.8323, 0.9522]
    assert [round(v, 4) for v in sk] == [0.75, 0.7832, 0.8978]


_docnos = st.sampled_from([f"d{i:02d}" for i in range(40)])


@st.composite
def _collections(draw: Any) -> tuple[dict[str, dict[str, int]], dict[str, list[tuple[str, float]]]]:
    qrels: dict[str, dict[str, int]] = {}
    results: dict[str, list[tuple[str, float]]] = {}
    for index in range(draw(st.integers(1, 5))):
        qid = f"q{index}"
        qrels[qid] = draw(st.dictionaries(_docnos, st.integers(-1, 3), min_size=1, max_size=12))
        if draw(st.booleans()) or index == 0:
            docnos = draw(st.lists(_docnos, min_size=2, max_size=30, unique=True))
            # Few distinct scores: ties everywhere, across and within the cutoff.
            scores = draw(
                st.lists(
                    st.sampled_from([0.0, 1.0, 2.5, 3.0]),
                    min_size=len(docnos),
                    max_size=len(docnos),
                )
            )
            results[qid] = list(zip(docnos, scores, strict=True))
    return qrels, results


@settings(max_examples=150, deadline=None)
@given(collection=_collections(), k=st.sampled_from([1, 2, 3, 5, 10, 20]))
def test_random_collections_equal_each_library(
    sklearn_ndcg: Any, ranx: Any, collection: Any, k: int
) -> None:
    qrels, results = collection
    measures = [Measure("nDCG", k), Measure("Judged", k)]
    ndcg_k = measures[0]
    # scikit-learn, query by query, on the run's own documents (at least two, as it asks).
    for qid, rows in results.items():
        expected = _sklearn(sklearn_ndcg, rows, qrels[qid], k)
        got = query_ndcg("sklearn", rows, qrels[qid], k, "linear")
        assert got == pytest.approx(expected, abs=1e-12)
    # ranx: every judged query, per query and the mean, bit for bit.
    ranx_values = convention_values("ranx", [ndcg_k], qrels, results, complete=False)
    expected_per_query = _ranx(ranx, qrels, results, f"ndcg@{k}")
    assert [ranx_values.per_query[qid][ndcg_k] for qid in sorted(qrels)] == list(expected_per_query)
    run = ranx.Run({qid: dict(rows) for qid, rows in results.items()})
    assert ranx_values.means[ndcg_k] == ranx.evaluate(
        ranx.Qrels(qrels), run, f"ndcg@{k}", make_comparable=True
    )
    # ir_measures: nDCG@k and Judged@k per query and the aggregate, bit for bit.
    ir_values = convention_values("ir_measures", measures, qrels, results, complete=False)
    ir_run = {qid: dict(rows) for qid, rows in results.items()}
    ir_measures_list = [ir_measures.nDCG @ k, ir_measures.Judged @ k]
    ours = dict(zip(ir_measures_list, measures, strict=True))
    for metric in ir_measures.iter_calc(ir_measures_list, qrels, ir_run):
        assert ir_values.per_query[metric.query_id][ours[metric.measure]] == metric.value
    for measure, value in ir_measures.calc_aggregate(ir_measures_list, qrels, ir_run).items():
        assert ir_values.means[ours[measure]] == pytest.approx(value, abs=1e-12)
