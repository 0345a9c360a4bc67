"""annotations.metrics.measures_arrays: bit-identical to the reference measures, run by run,
from whole rankings and from the ranks of their qrels documents alone."""

from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics.measures import Measure, measure_value
from annotations.metrics.measures_arrays import FAST, measure_matrix, ranks_measure_matrix
from annotations.metrics.qrels_ranks import qrels_ranks

MEASURES = [
    Measure(name, cutoff, level)
    for level in (1, 2, 3)
    for name, cutoff in [
        ("AP", None),
        ("AP", 1),
        ("AP", 10),
        ("AP", 1000),
        ("P", 1),
        ("P", 5),
        ("P", 20),
        ("R", 5),
        ("R", 100),
        ("RR", None),
        ("RR", 3),
        ("Rprec", None),
        ("Success", 1),
        ("Success", 10),
        ("NumRel", None),
        ("NumRet", None),
        ("NumRelRet", None),
        ("SetP", None),
        ("SetR", None),
    ]
] + [
    Measure("Bpref"),
    Measure("Bpref", rel=2),
    Measure("infAP"),
    Measure("infAP", rel=2),
    Measure("nDCG"),
    Measure("nDCG", 1),
    Measure("nDCG", 10),
    Measure("ERR", 5),
]


def assert_bit_identical(
    rankings: Mapping[int, Sequence[int]],
    grades: Mapping[int, int],
    measures: list[Measure],
    scheme: str = "linear",
) -> np.ndarray:
    runs, values = measure_matrix(rankings, grades, measures, scheme)
    assert runs == list(rankings)
    assert values.shape == (len(rankings), len(measures))
    expected = np.array(
        [
            [
                measure_value(
                    measure,
                    [grades.get(doc) for doc in rankings[run]],
                    list(grades.values()),
                    scheme,
                )
                for measure in measures
            ]
            for run in runs
        ],
        dtype=np.float64,
    ).reshape(values.shape)
    # == treats -0.0 and 0.0 alike; the bit patterns do not.
    np.testing.assert_array_equal(values.view(np.int64), expected.view(np.int64))
    documents = np.array(sorted(grades), dtype=np.int64)
    reduced = qrels_ranks([rankings[run] for run in runs], documents)
    from_ranks = ranks_measure_matrix(reduced, grades, measures, scheme)
    np.testing.assert_array_equal(from_ranks.view(np.int64), expected.view(np.int64))
    return values


def test_every_trec_eval_family_a_judgement_recomputes_has_a_fast_column() -> None:
    assert {"AP", "P", "R", "RR", "Rprec", "Bpref", "infAP", "nDCG"} <= FAST


def test_hand_computed_rows() -> None:
    grades = {1: 2, 2: 0, 3: 1, 4: -1, 5: 3, 6: 1}
    rankings = {10: [1, 7, 2, 3, 4, 5], 11: [], 12: [7, 8]}
    measures = [Measure("AP"), Measure("P", 4), Measure("RR", rel=3), Measure("Rprec")]
    values = assert_bit_identical(rankings, grades, measures)
    assert values[0].tolist() == [(1 + 2 / 4 + 3 / 6) / 4, 2 / 4, 1 / 6, 2 / 4]
    assert values[1].tolist() == values[2].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_no_runs_and_no_grades() -> None:
    runs, values = measure_matrix({}, {1: 1}, MEASURES)
    assert runs == [] and values.shape == (0, len(MEASURES))
    assert_bit_identical({5: [1, 2, 3]}, {}, MEASURES)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scheme", ["linear", "exponential"])
def test_random_queries_of_realistic_size(seed: int, scheme: str) -> None:
    rng = np.random.default_rng(seed)
    docs = rng.choice(10**12, size=800, replace=False)  # sparse ids, as primary keys
    judged = rng.choice(docs, size=300, replace=False)
    grades = {int(doc): int(rng.integers(-2, 4)) for doc in judged}
    rankings = {
        int(run): [int(doc) for doc in rng.permutation(docs)[: rng.integers(0, 600)]]
        for run in rng.choice(10**6, size=40, replace=False)
    }
    assert_bit_identical(rankings, grades, MEASURES, scheme)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(0, 40), st.integers(-2, 4), max_size=30),
    st.lists(st.lists(st.integers(0, 50), unique=True, max_size=40), max_size=6),
)
def test_bit_identical_to_the_reference(grades: dict[int, int], lists: list[list[int]]) -> None:
    assert_bit_identical(dict(enumerate(lists)), grades, MEASURES)
