"""annotations.metrics.measure_names: ir_measures' and trec_eval's names, round trips, errors."""

import ir_measures
import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotations.metrics.measure_names import (
    FAMILIES,
    MeasureNameError,
    format_measure,
    parse_measure,
    parse_measures,
    parse_trec_eval,
    trec_name,
)
from annotations.metrics.measures import Measure


@pytest.mark.parametrize(
    ("text", "measure", "trec"),
    [
        ("AP(rel=2)@100", Measure("AP", 100, 2), "map_cut_100"),
        ("AP", Measure("AP"), "map"),
        ("MAP", Measure("AP"), "map"),
        ("P@10", Measure("P", 10), "P_10"),
        ("P(rel=3)@5", Measure("P", 5, 3), "P_5"),
        ("nDCG@10", Measure("nDCG", 10), "ndcg_cut_10"),
        ("nDCG", Measure("nDCG"), "ndcg"),
        ("R@1000", Measure("R", 1000), "recall_1000"),
        ("RR", Measure("RR"), "recip_rank"),
        ("RR(rel=2)@10", Measure("RR", 10, 2), "RR(rel=2)@10"),
        ("Rprec", Measure("Rprec"), "Rprec"),
        ("Bpref", Measure("Bpref"), "bpref"),
        ("infAP", Measure("infAP"), "infAP"),
        ("Success@10", Measure("Success", 10), "success_10"),
        ("SetF", Measure("SetF"), "set_F"),
        ("SetF(beta=1.0)", Measure("SetF"), "set_F"),
        ("SetF(beta=0.5)", Measure("SetF", params=(("beta", 0.5),)), "set_F_0.5"),
        ("SetP", Measure("SetP"), "set_P"),
        ("SetR", Measure("SetR"), "set_recall"),
        ("NumRel", Measure("NumRel"), "num_rel"),
        ("NumRet", Measure("NumRet"), "num_ret"),
        ("NumRelRet", Measure("NumRelRet"), "num_rel_ret"),
        ("NumRet(rel=2)", Measure("NumRelRet", rel=2), "num_rel_ret"),
        ("ERR@20", Measure("ERR", 20), "ERR@20"),
        ("RBP(p=0.8)", Measure("RBP"), "RBP"),
        ("RBP(p=0.5)@10", Measure("RBP", 10, 1, (("p", 0.5),)), "RBP(p=0.5)@10"),
        ("Judged@10", Measure("Judged", 10), "Judged@10"),
    ],
)
def test_ir_measures_names(text: str, measure: Measure, trec: str) -> None:
    assert parse_measure(text) == measure
    assert parse_measures(text) == [measure]
    assert trec_name(measure) == trec
    assert parse_measure(format_measure(measure)) == measure
    # The same measure as ir_measures reads it (RBPResid is the platform's own).
    theirs = ir_measures.parse_measure(text)
    assert ir_measures.parse_measure(format_measure(measure)) == theirs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("map", ["AP"]),
        ("map_cut.100", ["AP@100"]),
        ("map_cut_100", ["AP@100"]),
        ("P.10", ["P@10"]),
        ("P_10", ["P@10"]),
        ("P.5,10", ["P@5", "P@10"]),
        ("ndcg_cut.10", ["nDCG@10"]),
        ("ndcg", ["nDCG"]),
        ("recall.1000", ["R@1000"]),
        ("success.1,5,10", ["Success@1", "Success@5", "Success@10"]),
        ("recip_rank", ["RR"]),
        ("bpref", ["Bpref"]),
        ("num_rel_ret", ["NumRet(rel=1)"]),
        ("set_F.0.5", ["SetF(beta=0.5)"]),
        ("success", ["Success@1", "Success@5", "Success@10"]),  # trec_eval's defaults
    ],
)
def test_trec_eval_names(text: str, expected: list[str]) -> None:
    measures = parse_trec_eval(text)
    assert [format_measure(m) for m in measures] == expected
    assert parse_measures(text) == measures
    # trec_eval prints P_10 for P.10: the printed name reads back as the same measure.
    for measure in measures:
        assert parse_trec_eval(trec_name(measure)) == [measure]


def test_trec_eval_level_applies_where_a_name_gives_none() -> None:
    assert parse_measures("map", level=2) == [Measure("AP", rel=2)]
    assert parse_measures("P@10", level=3) == [Measure("P", 10, 3)]
    assert parse_measures("P(rel=1)@10", level=3) == [Measure("P", 10, 1)]
    assert parse_measures("ndcg_cut.5", level=2) == [Measure("nDCG", 5)]  # no levels in nDCG


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("Foo@10", "unknown measure 'Foo'"),
        ("P", "P needs a cutoff"),
        ("AP@0", "cutoff '0'"),
        ("AP@x", "cutoff 'x'"),
        ("Rprec@10", "Rprec takes no cutoff"),
        ("nDCG(rel=2)@10", "nDCG takes no relevance level"),
        ("P(x=1)@3", "P has no parameter 'x'"),
        ("P(rel=a)@3", "rel='a' is not a number"),
        ("P(rel=1,rel=2)@3", "given twice"),
        ("AP(rel=0)", "is not an integer >= 1"),
        ("AP(rel=1.5)", "is not an integer >= 1"),
        ("RBP(p=1.5)", "not in (0, 1)"),
        ("AP(", "not of the form"),
    ],
)
def test_unknown_or_malformed_names_say_why_and_list_the_known_ones(
    text: str, fragment: str
) -> None:
    with pytest.raises(MeasureNameError) as caught:
        parse_measure(text)
    message = str(caught.value)
    assert repr(text) in message
    assert fragment in message
    assert "known measures: AP, P, R" in message and "map_cut" in message


def test_unknown_trec_eval_names() -> None:
    for text in ("mapp", "map.10", "P.x", "set_F.0.5.1"):
        with pytest.raises(MeasureNameError):
            parse_trec_eval(text)


@given(
    st.sampled_from(sorted(FAMILIES)),
    st.one_of(st.none(), st.integers(1, 2000)),
    st.integers(1, 4),
    st.sampled_from([0.5, 0.8, 0.95]),
)
def test_round_trip(name: str, cutoff: int | None, rel: int, p: float) -> None:
    family = FAMILIES[name]
    if family.cutoff == "required" and cutoff is None:
        cutoff = 10
    if family.cutoff == "none":
        cutoff = None
    params = (("p", p),) if name.startswith("RBP") and p != 0.8 else ()
    measure = Measure(name, cutoff, rel if family.rel else 1, params)
    assert parse_measure(format_measure(measure)) == measure
    assert parse_measures(trec_name(measure), level=measure.rel) == [measure]
