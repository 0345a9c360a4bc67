"""annotations.metrics.measures: hand-computed conventions, trec_eval (pytrec_eval) parity bit
for bit, gdeval's ERR and ir_measures' Judged as oracles."""

import math
import pkgutil
import shutil
import subprocess
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.formats.trec.evaluation import trec_eval_lines
from annotations.metrics.measures import (
    Measure,
    average_precision,
    bpref,
    err,
    inferred_average_precision,
    judged,
    measure_value,
    query_values,
    r_precision,
    rbp,
    rbp_residual,
    reciprocal_rank,
    run_values,
    set_f,
    summary,
)
from annotations.metrics.ndcg import order_ranking, ordered_mean
from tests.conftest import require_component

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

# trec_eval's name -> the measure, at relevance level 1 (the level is set per test).
TREC_MEASURES: dict[str, Measure] = {
    "map": Measure("AP"),
    "map_cut_1": Measure("AP", 1),
    "map_cut_5": Measure("AP", 5),
    "map_cut_20": Measure("AP", 20),
    "P_1": Measure("P", 1),
    "P_5": Measure("P", 5),
    "P_20": Measure("P", 20),
    "recall_1": Measure("R", 1),
    "recall_5": Measure("R", 5),
    "recall_20": Measure("R", 20),
    "success_1": Measure("Success", 1),
    "success_5": Measure("Success", 5),
    "Rprec": Measure("Rprec"),
    "bpref": Measure("Bpref"),
    "recip_rank": Measure("RR"),
    "ndcg": Measure("nDCG"),
    "ndcg_cut_5": Measure("nDCG", 5),
    "infAP": Measure("infAP"),
    "num_rel_ret": Measure("NumRelRet"),
    "num_rel": Measure("NumRel"),
    "num_ret": Measure("NumRet"),
    "set_F": Measure("SetF"),
    "set_P": Measure("SetP"),
    "set_recall": Measure("SetR"),
}
TREC_REQUEST = {
    "map",
    "map_cut.1,5,20",
    "P.1,5,20",
    "recall.1,5,20",
    "success.1,5",
    "Rprec",
    "bpref",
    "recip_rank",
    "ndcg",
    "ndcg_cut.5",
    "infAP",
    "num_rel_ret",
    "num_rel",
    "num_ret",
    "set_F",
    "set_P",
    "set_recall",
}


def at_level(measure: Measure, level: int) -> Measure:
    return Measure(measure.name, measure.cutoff, level, measure.params)


def trec(qrels: Qrels, run: Run, level: int) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC_REQUEST, relevance_level=level)
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


def assert_equal_to_trec_eval(qrels: Qrels, run: Run, level: int) -> int:
    """Every measure of every query trec_eval evaluates, and the `all` values, compared
    with ==; returns how many values were compared."""
    expected = trec(qrels, run, level)
    measures = [at_level(measure, level) for measure in TREC_MEASURES.values()]
    ours: dict[str, dict[Measure, float]] = {}
    for qid, grades in qrels.items():
        ranking = order_ranking(run.get(qid, {}).items())
        ours[qid] = query_values(measures, ranking, grades)
    compared = 0
    for qid, values in expected.items():
        for name, measure in TREC_MEASURES.items():
            assert ours[qid][at_level(measure, level)] == values[name], (qid, name)
            compared += 1
    # A judged query the run does not answer: trec_eval -c gives it 0 for every measure
    # but num_rel; pytrec_eval leaves it out. The reference gives that for an empty ranking.
    for qid in set(qrels) - set(expected):
        for name, measure in TREC_MEASURES.items():
            want = (
                float(sum(1 for g in qrels[qid].values() if g >= level))
                if name == "num_rel"
                else 0.0
            )
            assert ours[qid][at_level(measure, level)] == want, (qid, name)
    # The `all` line of trec_eval -c: pytrec_eval's per-query values in qid order.
    for name, measure in TREC_MEASURES.items():
        measure = at_level(measure, level)
        per_query = {qid: values[name] for qid, values in expected.items()}
        ours_per_query = {qid: values[measure] for qid, values in ours.items()}
        if name in {"num_rel", "num_ret", "num_rel_ret"}:
            total = 0.0
            for qid in sorted(qrels):
                total += per_query.get(qid, 0.0)
            if name == "num_rel":  # with -c: every qrels grade > 0, whatever -l says
                total = float(sum(g > 0 for grades in qrels.values() for g in grades.values()))
                grades_by_query = {qid: list(grades.values()) for qid, grades in qrels.items()}
                assert summary(measure, ours_per_query, qrels, grades_by_query) == total
                continue
            assert summary(measure, ours_per_query, qrels) == total
        else:
            want = ordered_mean(per_query.get(qid, 0.0) for qid in sorted(qrels))
            assert summary(measure, ours_per_query, qrels) == want
    return compared


# --- hand-computed values -------------------------------------------------------------------

# Ranks 1..6: relevant (2), unjudged, non-relevant (0), relevant (1), pooled-unjudged (-1),
# relevant (3). Two more relevant documents are not retrieved, and one more non-relevant.
RANKED: list[int | None] = [2, None, 0, 1, -1, 3]
QRELS = [2, 0, 1, -1, 3, 1, 2, 0]  # the retrieved ones first, then 1, 2 and 0 not retrieved


def test_average_precision_by_hand() -> None:
    # Relevant at ranks 1, 4 and 6: (1/1 + 2/4 + 3/6) / 5 relevant in the qrels.
    assert average_precision(RANKED, 5) == (1 / 1 + 2 / 4 + 3 / 6) / 5
    assert average_precision(RANKED, 5, k=4) == (1 / 1 + 2 / 4) / 5
    assert average_precision(RANKED, 2, level=2) == (1 / 1 + 2 / 6) / 2  # grades 2 and 3
    assert average_precision([], 5) == 0.0
    assert average_precision([None, 0], 0) == 0.0  # no relevant document known


def test_precision_recall_success_rprec_by_hand() -> None:
    m = {name: measure_value(Measure(name, 10), RANKED, QRELS) for name in ("P", "R", "Success")}
    assert m == {"P": 3 / 10, "R": 3 / 5, "Success": 1.0}  # P divides by k, not by 6
    assert measure_value(Measure("P", 3, rel=2), RANKED, QRELS) == 1 / 3
    assert measure_value(Measure("Success", 1, rel=3), RANKED, QRELS) == 0.0
    assert r_precision(RANKED, 5) == 2 / 5  # the top 5 hold ranks 1 and 4
    assert r_precision(RANKED[:2], 5) == 1 / 5  # shorter than R: still divided by R
    assert r_precision([], 5) == 0.0


def test_reciprocal_rank_by_hand() -> None:
    assert reciprocal_rank(RANKED) == 1.0
    assert reciprocal_rank(RANKED, level=3) == 1 / 6
    assert reciprocal_rank(RANKED, level=3, k=5) == 0.0
    assert reciprocal_rank([None, -1, 0]) == 0.0


def test_bpref_skips_unjudged_and_counts_nonrelevant_above_each_relevant() -> None:
    # R = 5, N = 2 judged non-relevant; ranks 1, 4, 6 relevant, one non-relevant (rank 3)
    # above the last two: (1 + (1 - 1/2) + (1 - 1/2)) / 5.
    assert bpref(RANKED, QRELS) == (1.0 + 0.5 + 0.5) / 5
    # Level 2: grade 1 becomes non-relevant too (N = 4, R = 3): two of them above rank 6.
    assert bpref(RANKED, QRELS, level=2) == (1.0 + (1.0 - 2 / 3)) / 3


def test_infap_by_hand() -> None:
    # Rank 4 (j = 3): above it one relevant, one non-relevant, one outside the pool.
    at_4 = 1 / 4 + (3 / 4) * ((1 + 1 + 0) / 3) * ((1 + 1e-5) / (1 + 1 + 2e-5))
    # Rank 6 (j = 5): two relevant, one non-relevant, one pooled-unjudged above.
    at_6 = 1 / 6 + (5 / 6) * ((2 + 1 + 1) / 5) * ((2 + 1e-5) / (2 + 1 + 2e-5))
    assert inferred_average_precision(RANKED, 5) == pytest.approx((1.0 + at_4 + at_6) / 5, 1e-15)


def test_set_f_is_the_harmonic_mean_for_beta_one() -> None:
    # 3 relevant retrieved of 6 retrieved, 5 relevant: P = 1/2, R = 3/5.
    assert set_f(RANKED, 5) == pytest.approx(2 * 0.5 * 0.6 / (0.5 + 0.6), 1e-15)
    assert set_f([0, None], 5) == 0.0


def test_err_as_gdeval_writes_it() -> None:
    # r = (2**g - 1) / 16 on gdeval's 0-4 scale.
    r = [3 / 16, 0.0, 0.0, 1 / 16, 0.0, 7 / 16]
    expected = r[0] + (1 - r[0]) * r[3] / 4 + (1 - r[0]) * (1 - r[3]) * r[5] / 6
    assert err(RANKED, 10) == pytest.approx(expected, 1e-15)
    assert err(RANKED, 1) == 3 / 16
    assert err([4], 1) == 15 / 16
    with pytest.raises(ValueError):
        err([5], 1)


def test_rbp_and_its_residual_by_hand() -> None:
    p = 0.5
    # Relevant at ranks 1, 4, 6; unjudged (absent or negative) at ranks 2 and 5.
    assert rbp(RANKED, p) == pytest.approx(0.5 * (1 + 0.5**3 + 0.5**5), 1e-15)
    residual = 0.5 * (0.5**1 + 0.5**4) + 0.5**6  # unjudged ranks, then the tail
    assert rbp_residual(RANKED, p) == pytest.approx(residual, 1e-15)
    # At k = 8 the two absent ranks 7 and 8 are unjudged as well: the bound is the same.
    assert rbp_residual(RANKED, p, k=8) == pytest.approx(residual, 1e-15)
    assert rbp(RANKED, p) + rbp_residual(RANKED, p) <= 1.0
    assert rbp_residual([], p) == 1.0
    assert rbp([0, 0], 0.8, k=1) == 0.0
    with pytest.raises(ValueError):
        rbp(RANKED, 1.0)


def test_judged_divides_by_the_documents_retrieved_and_counts_negative_grades() -> None:
    assert judged(RANKED, 2) == 1 / 2
    assert judged(RANKED, 10) == 5 / 6  # six retrieved, one absent from the qrels
    assert judged(RANKED) == 5 / 6
    assert judged([], 10) == 0.0


def test_ndcg_without_cutoff_ignores_the_relevance_level() -> None:
    at_1 = measure_value(Measure("nDCG"), RANKED, QRELS)
    assert at_1 == measure_value(Measure("nDCG", rel=3), RANKED, QRELS)
    dcg = 2 + 1 / math.log2(5) + 3 / math.log2(7)
    ideal = 3 + 2 / math.log2(3) + 2 / 2 + 1 / math.log2(5) + 1 / math.log2(6)
    assert at_1 == pytest.approx(dcg / ideal, 1e-15)


def test_worked_example_equals_trec_eval() -> None:
    docnos = ["r1", "u2", "r3", "r4", "p5", "r6"]
    grades = {"r1": 2, "r3": 0, "r4": 1, "p5": -1, "r6": 3, "m1": 1, "m2": 2, "m3": 0}
    run = {"q": {docno: float(6 - i) for i, docno in enumerate(docnos)}}
    for level in (1, 2, 3):
        assert assert_equal_to_trec_eval({"q": grades}, run, level) == len(TREC_MEASURES)


def test_ties_break_by_docno_descending_for_every_measure() -> None:
    grades = {"d9a": 0, "d9": 3, "d10": 0, "D9": 1}
    run = {"q": {"d10": 1.0, "d9": 1.0, "D9": 1.0, "d9a": 1.0}}  # order: d9a d9 d10 D9
    assert_equal_to_trec_eval({"q": grades}, run, 1)
    values = query_values([Measure("RR"), Measure("AP")], order_ranking(run["q"].items()), grades)
    assert values[Measure("RR")] == 1 / 2
    assert values[Measure("AP")] == (1 / 2 + 2 / 4) / 2


def test_summary_rejects_no_queries() -> None:
    with pytest.raises(ValueError):
        summary(Measure("AP"), {}, [])


# --- property: identical to trec_eval on random collections --------------------------------

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
        judged_ = {docno: grade for docno, grade in documents.items() if grade is not None}
        # trec_eval's behaviour is undefined on a query without a grade >= 0: it reads
        # counts left over from the previous query (form_res_rels sizes them by the
        # largest grade), and crashes or never ends on some. Such a query scores 0 here.
        if judged_ and max(judged_.values()) >= 0:
            qrels[qid] = judged_
        retrieved = draw(st.lists(st.sampled_from(sorted(documents)), unique=True))
        mention_when_empty = draw(st.booleans())  # else the run omits the query entirely
        if retrieved or mention_when_empty:
            run[qid] = {docno: draw(TINY_SCORES) for docno in retrieved}
    if not qrels:
        qrels["q-only"] = {"x": 1}
    return qrels, run


@settings(max_examples=200, deadline=None)
@given(collections(), st.integers(min_value=1, max_value=3))
def test_matches_trec_eval_bit_for_bit(collection: tuple[Qrels, Run], level: int) -> None:
    qrels, run = collection
    assert_equal_to_trec_eval(qrels, run, level)


def test_a_query_without_a_grade_from_zero_scores_zero() -> None:
    values = query_values(
        [Measure(name) for name in ("AP", "Bpref", "infAP", "nDCG", "RR", "Rprec", "NumRel")],
        ["a", "b"],
        {"a": -1, "b": -2},
    )
    assert set(values.values()) == {0.0}


# --- ERR: gdeval itself, printing every digit ------------------------------------------------


def gdeval_err(
    qrels: dict[int, dict[str, int]], run: dict[int, dict[str, float]], k: int, folder: Path
) -> dict[int, float]:
    """ERR@k from gdeval.pl as ir_measures ships it, with its %.5f output widened to 17
    significant digits (the computation is untouched)."""
    script = pkgutil.get_data("ir_measures", "bin/gdeval.pl")
    assert script is not None
    (folder / "gdeval.pl").write_bytes(script.replace(b"%.5f,%.5f", b"%.17g,%.17g"))
    (folder / "qrels").write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, grades in qrels.items() for d, g in grades.items())
    )
    (folder / "run").write_text(
        "".join(
            f"{q} Q0 {d} {i + 1} {s!r} sys\n"
            for q, scores in run.items()
            for i, (d, s) in enumerate(scores.items())
        )
    )
    out = subprocess.run(
        ["perl", str(folder / "gdeval.pl"), str(folder / "qrels"), str(folder / "run"), str(k)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    values = {}
    for line in out.splitlines()[1:]:
        _, qid, _, value = line.split(",")
        if qid != "amean":
            values[int(qid)] = float(value)
    return values


@settings(max_examples=30, deadline=None)
@given(
    data=st.dictionaries(
        st.integers(1, 5),
        st.tuples(
            st.dictionaries(st.sampled_from("abcdefghij"), st.integers(-1, 4), max_size=10),
            st.dictionaries(st.sampled_from("abcdefghijxy"), TINY_SCORES, min_size=1),
        ),
        min_size=1,
        max_size=4,
    ),
    k=st.sampled_from([1, 3, 5, 20]),
)
def test_err_equals_gdeval(
    data: dict[int, tuple[dict[str, int], dict[str, float]]],
    k: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if shutil.which("perl") is None:
        require_component("perl is not installed (gdeval is a Perl script)")
    qrels = {q: grades for q, (grades, _) in data.items() if grades}
    run = {q: scores for q, (_, scores) in data.items()}
    if not qrels:
        return
    expected = gdeval_err(qrels, run, k, tmp_path_factory.mktemp("gdeval"))
    for qid, grades in qrels.items():
        ranking_grades = [grades.get(d) for d in order_ranking(run[qid].items())]
        ours = err(ranking_grades, k)
        if qid in expected:  # gdeval reports queries with a grade > 0
            assert abs(ours - expected[qid]) <= 1e-12
        else:
            assert ours == 0.0


# --- Judged@k: ir_measures' provider -----------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcdefghij"), st.integers(-2, 3), min_size=1),
    st.lists(st.sampled_from("abcdefghijxyz"), unique=True, min_size=1),
    st.sampled_from([1, 3, 5, 20]),
)
def test_judged_equals_ir_measures(grades: dict[str, int], retrieved: list[str], k: int) -> None:
    # Distinct scores: ir_measures breaks ties by docno ascending, trec_eval descending.
    scores = {docno: float(len(retrieved) - i) for i, docno in enumerate(retrieved)}
    measure = ir_measures.parse_measure(f"Judged@{k}")
    (result,) = ir_measures.iter_calc([measure], {"q": grades}, {"q": scores})
    ranking_grades = [grades.get(docno) for docno in order_ranking(scores.items())]
    assert abs(judged(ranking_grades, k) - result.value) <= 1e-12
    assert measure_value(Measure("Judged", k), ranking_grades, list(grades.values())) == judged(
        ranking_grades, k
    )


# --- a whole run ------------------------------------------------------------------------------


def test_run_values_with_and_without_missing_queries() -> None:
    qrels = {"q2": {"a": 1, "b": 0}, "q10": {"c": 2}, "q1": {"d": 1, "e": 1}}
    rankings = {"q2": ["b", "a"], "q1": ["d"], "unjudged": ["a"]}
    measures = [Measure("AP"), Measure("NumRel"), Measure("NumRet")]
    complete = run_values(measures, qrels, rankings)
    assert list(complete.per_query) == ["q1", "q10", "q2"]  # bytewise, unjudged left out
    assert complete.per_query["q10"] == dict(zip(measures, [0.0, 1.0, 0.0], strict=True))
    assert complete.means[Measure("AP")] == (0.5 + 0.0 + 0.5) / 3
    assert complete.means[Measure("NumRel")] == 4.0 and complete.means[Measure("NumRet")] == 3.0
    skipped = run_values(measures, qrels, rankings, complete=False)
    assert list(skipped.per_query) == ["q1", "q2"]
    assert skipped.means[Measure("AP")] == 0.5
    assert skipped.means[Measure("NumRel")] == 3.0  # without -c: the sum of the values
    with pytest.raises(ValueError):
        run_values(measures, qrels, {}, complete=False)


def test_trec_eval_lines_order_and_format() -> None:
    values = run_values(
        [Measure("P", 5), Measure("NumRel"), Measure("AP"), Measure("P", 1)],
        {"q": {"a": 1}},
        {"q": ["a"]},
    )
    lines = list(
        trec_eval_lines(
            [Measure("P", 5), Measure("NumRel"), Measure("AP"), Measure("P", 1), Measure("AP")],
            values,
            per_query=True,
        )
    )
    assert lines == [
        f"{'num_rel':<22}\tq\t1\n",
        f"{'map':<22}\tq\t1.0000\n",
        f"{'P_1':<22}\tq\t1.0000\n",
        f"{'P_5':<22}\tq\t0.2000\n",
        f"{'num_rel':<22}\tall\t1\n",
        f"{'map':<22}\tall\t1.0000\n",
        f"{'P_1':<22}\tall\t1.0000\n",
        f"{'P_5':<22}\tall\t0.2000\n",
    ]
