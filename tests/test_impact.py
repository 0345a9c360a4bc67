"""annotations.metrics.impact: hand-computed impacts, priors and pair states; properties."""

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics.impact import (
    UNJUDGED,
    QueryTop,
    estimated_idcg,
    grade_prior,
    impact_compute,
    impact_scores,
    pair_weights,
    query_calibrated,
)
from annotations.metrics.impact.prior import bucket, scale_indices

C2 = 1 / math.log2(3)  # the weight of rank 2: 0.6309297535714575


# --- hand-computed cases --------------------------------------------------------------------


def test_two_runs_swapping_two_documents_nothing_judged() -> None:
    # A = [d1, d2], B = [d2, d1], k = 2, grades {0, 1}, nothing judged: uniform prior,
    # E = 1/2 for both. The estimate 1/2 * 1 + 1/2 * c2 = (1 + c2) / 2 is below the least
    # relevant gain at rank 1, so I = 1. The pair's expected difference is 0, so its weight
    # is erfc(0) = 1. Judging d1 moves A - B by gain * (1 - c2) / I:
    # impact(d1) = E * (1 - c2) / I = (1 - c2) / 2 = 0.1845351232...; d2 the same.
    impacts = impact_scores(
        {"q": {"A": ["d1", "d2"], "B": ["d2", "d1"]}}, {}, k=2, scale=[0, 1], scheme="linear"
    )
    expected = (1 - C2) / 2
    assert impacts == pytest.approx({("q", "d1"): expected, ("q", "d2"): expected}, rel=1e-12)
    assert expected == pytest.approx(0.18453512321427123, rel=1e-12)


def test_judged_documents_outside_every_top_k_enter_the_idcg_estimate() -> None:
    # The swap again, plus a judged relevant document no run retrieved: the ideal list is
    # [1, 1/2, 1/2], cut at 2: I = 1 + c2 / 2. impact(d1) = 1/2 * (1 - c2) / I.
    impacts = impact_scores(
        {"q": {"A": ["d1", "d2"], "B": ["d2", "d1"]}},
        {"q": {"missed": 1}},
        k=2,
        scale=[0, 1],
        scheme="linear",
    )
    assert impacts[("q", "d1")] == pytest.approx(0.5 * (1 - C2) / (1 + C2 / 2), rel=1e-12)


def test_pair_states_of_the_swap_by_hand() -> None:
    # Same swap. I = 1 (the floor). V = 1/4 for both documents, and c_A - c_B = +-(1 - c2):
    # sigma^2 = 2 * 1/4 * (1 - c2)^2 / I^2, sigma = (1 - c2) / (sqrt(2) I).
    # Bounds: d1 relevant and d2 not gives +(1 - c2) / I; the reverse -(1 - c2) / I.
    top = QueryTop.of([[0, 1], [1, 0]], pool=2)
    result = impact_compute([top], [np.array([UNJUDGED, UNJUDGED])], scale=[0, 1], scheme="linear")
    idcg = 1.0
    assert result.idcgs[0] == pytest.approx(idcg, rel=1e-12)
    pairs = result.pairs
    assert pairs.mean[0, 1] == pytest.approx(0.0, abs=1e-15)
    assert pairs.spread[0, 1] == pytest.approx((1 - C2) / (math.sqrt(2) * idcg), rel=1e-12)
    assert pairs.upper[0, 1] == pytest.approx((1 - C2) / idcg, rel=1e-12)
    assert pairs.lower[0, 1] == pytest.approx(-(1 - C2) / idcg, rel=1e-12)
    assert pairs.weight[0, 1] == pairs.weight[1, 0] == pytest.approx(1.0)


def test_judging_one_document_of_the_swap_decides_the_pair() -> None:
    # d1 judged 1: A has it at rank 1, B at rank 2, so A - B >= 0 whatever d2 turns out to be
    # (d2 relevant: both runs hold both relevant documents, a tie). lower = 0: decided,
    # weight 0, and d2 has impact 0 although it moves the difference.
    # Prior (d1 and d2: best rank 1 -> bucket 0, 2 runs -> bucket 1), counts n = (0, 1):
    #   collection (0 + 1, 1 + 1) / (1 + 2) = (1/3, 2/3)
    #   rank 1     (0 + 4/3, 1 + 8/3) / (1 + 4) = (4/15, 11/15)
    #   cell       (0 + 16/15, 1 + 44/15) / (1 + 4) = (16/75, 59/75)
    # The query's own calibration: d1, judged relevant, was expected relevant with 59/75;
    # the pool's mean row is (16/75, 59/75), 4 of it pseudo-judgements (64/75, 236/75):
    # non-relevant x (0 + 64/75) / (16/75 + 64/75) = 4/5, relevant x (1 + 236/75) /
    # (59/75 + 236/75) = 311/295; d2's row (16/75 x 4/5, 59/75 x 311/295) = (64/375, 311/375)
    # sums to 1. E(d2) = 311/375, I = 1 + c2 * 311/375, mean = (1 - c2)(64/375) / I.
    top = QueryTop.of([[0, 1], [1, 0]], pool=2)
    result = impact_compute([top], [np.array([1, UNJUDGED])], scale=[0, 1], scheme="linear")
    assert result.prior.table[0, 1] == pytest.approx([16 / 75, 59 / 75], rel=1e-12)
    assert result.prior.table[0, 0] == pytest.approx([4 / 15, 11 / 15], rel=1e-12)
    assert result.prior.table[1, 0] == pytest.approx([1 / 3, 2 / 3], rel=1e-12)
    idcg = 1 + C2 * 311 / 375
    assert result.idcgs[0] == pytest.approx(idcg, rel=1e-12)
    assert result.pairs.mean[0, 1] == pytest.approx((1 - C2) * (64 / 375) / idcg, rel=1e-12)
    assert result.pairs.lower[0, 1] == pytest.approx(0.0, abs=1e-12)
    assert result.pairs.weight[0, 1] == 0.0
    assert result.impacts[0].tolist() == [0.0, 0.0]


def test_a_document_every_run_ranks_alike_has_no_impact() -> None:
    # A = [d1, d2], B = [d1, d3]: d1 is at rank 1 in both, so it moves no difference.
    # Nothing judged: E = 1/2 each, I = max((1 + c2) / 2, 1) = 1, mean 0, weight 1;
    # impact(d2) = E * c2 / I = c2 / 2 = 0.3154648767..., d3 the same.
    impacts = impact_scores(
        {"q": {"A": ["d1", "d2"], "B": ["d1", "d3"]}}, {}, k=2, scale=[0, 1], scheme="linear"
    )
    assert impacts[("q", "d1")] == 0.0
    assert impacts[("q", "d2")] == pytest.approx(C2 / 2, rel=1e-12)
    assert impacts[("q", "d3")] == pytest.approx(C2 / 2, rel=1e-12)


def test_a_pair_decided_by_its_judgements_gives_its_documents_no_impact() -> None:
    # A = [d1, d2], B = [d3, d4]; d1 = 1, d3 = 0. A - B = (1 + c2 x2 - c2 x4) / I >=
    # (1 - c2) / I > 0 for every grade of d2 and d4: decided, though both still move it.
    impacts = impact_scores(
        {"q": {"A": ["d1", "d2"], "B": ["d3", "d4"]}},
        {"q": {"d1": 1, "d3": 0}},
        k=2,
        scale=[0, 1],
        scheme="linear",
    )
    assert impacts == {("q", "d2"): 0.0, ("q", "d4"): 0.0}


def test_a_third_run_reopens_what_one_pair_decided() -> None:
    # As above plus C = [d4, d1]: A - C = (1 + c2 x2 - x4 - c2) / I can be negative
    # (x4 = 1, x2 = 0: -c2 / I), so d4 has impact through the pair (A, C) only, and d2
    # through (A, C) as well; judged documents get no entry.
    impacts = impact_scores(
        {"q": {"A": ["d1", "d2"], "B": ["d3", "d4"], "C": ["d4", "d1"]}},
        {"q": {"d1": 1, "d3": 0}},
        k=2,
        scale=[0, 1],
        scheme="linear",
    )
    assert set(impacts) == {("q", "d2"), ("q", "d4")}
    assert impacts[("q", "d2")] > 0.0
    assert impacts[("q", "d4")] > impacts[("q", "d2")]  # rank 1 of C against rank 2 of B


def test_estimated_idcg_sorts_gains_and_cuts_at_k() -> None:
    # [1, 3, 0.5] -> ideal [3, 1]: 3 / 1 + 1 / log2(3).
    assert estimated_idcg([1.0, 3.0, 0.5], 2) == pytest.approx(3 + C2, rel=1e-15)
    assert estimated_idcg([], 5) == 0.0


def test_pair_weights_by_hand() -> None:
    # mean 0: erfc(0) = 1; mean = sigma: erfc(1 / sqrt 2) = 2 Phi(-1) = 0.3173105078...;
    # lower >= 0 or upper <= 0 (decided), or sigma 0: 0.
    mean = np.array([0.0, 0.1, 0.1, -0.1, 0.0])
    spread = np.array([0.2, 0.1, 0.1, 0.1, 0.0])
    lower = np.array([-0.3, -0.1, 0.0, -0.2, -0.1])
    upper = np.array([0.3, 0.3, 0.3, 0.0, 0.1])
    weights = pair_weights(mean, spread, lower, upper)
    assert weights == pytest.approx([1.0, 0.3173105078629141, 0.0, 0.0, 0.0], rel=1e-12)


def test_prior_buckets_are_floor_log2() -> None:
    assert [bucket(v) for v in (1, 2, 3, 4, 7, 8, 15, 16)] == [0, 1, 1, 2, 2, 3, 3, 4]


def test_prior_with_nothing_judged_is_uniform() -> None:
    top = QueryTop.of([[0, 1, 2], [2, 1, -1]], pool=3)
    prior = grade_prior([top], [np.full(3, UNJUDGED)], scale=[0, 1, 2, 3])
    assert np.allclose(prior.table, 0.25)


def test_prior_counts_judged_documents_by_rank_and_runs() -> None:
    # Two queries, k = 1, one run: every document has best rank 1, 1 run: one cell.
    # Judged grades 0 and 0 on scale {0, 1}: collection (2 + 1, 0 + 1) / (2 + 2) = (3/4, 1/4);
    # the rank and cell levels hold the same two judgements: (2 + 4 p) / (2 + 4) each:
    # rank (2 + 3, 0 + 1) / 6 = (5/6, 1/6); cell (2 + 10/3, 0 + 2/3) / 6 = (8/9, 1/9).
    tops = [QueryTop.of([[0]], pool=1), QueryTop.of([[0]], pool=1)]
    prior = grade_prior(tops, [np.array([0]), np.array([0])], scale=[0, 1])
    assert prior.table[0, 0] == pytest.approx([8 / 9, 1 / 9], rel=1e-12)


def test_a_run_without_the_query_scores_zero_there() -> None:
    # q2 has only run A: B scores 0 on it. q1 ties them (same document at rank 1), so
    # A - B = x_d / (Q I) >= 0: A can only end ahead or level; decided, d has impact 0.
    # Give B a document of its own in q1 (y) and the pair is open again: E = 1/2 for x, y, d;
    # I1 = I2 = max(1/2, 1) = 1, Q = 2: A - B = (x_x + x_d - x_y) / 2, mean 1/4, V = 1/4
    # for each of x, d, y, over 4: sigma^2 = 3/16. weight = erfc((1/4) / sqrt(3/16 * 2)) =
    # erfc((1/2) / sqrt(3/2)). impact(d) = E / (Q I) * w * |1 - 0| = 1/4 * w; x, y the same.
    impacts = impact_scores(
        {"q1": {"A": ["x"], "B": ["x"]}, "q2": {"A": ["d"]}}, {}, k=1, scale=[0, 1], scheme="linear"
    )
    assert impacts == {("q1", "x"): 0.0, ("q2", "d"): 0.0}
    impacts = impact_scores(
        {"q1": {"A": ["x"], "B": ["y"]}, "q2": {"A": ["d"]}}, {}, k=1, scale=[0, 1], scheme="linear"
    )
    weight = math.erfc(0.5 / math.sqrt(1.5))
    assert impacts == pytest.approx(
        {("q1", "x"): weight / 4, ("q1", "y"): weight / 4, ("q2", "d"): weight / 4}, rel=1e-12
    )


def test_the_model_is_framework_free() -> None:
    # A fresh interpreter: importing annotations.metrics.impact loads scoring and numpy, no Django.
    code = (
        "import sys, annotations.metrics.impact; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework'}))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    assert output.strip() == "[]"


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scale": [-1, 0, 1]}, "must be >= 0"),
        ({"scale": []}, "one or more integers"),
        ({"scheme": "cubic"}, "unknown gain scheme"),
        ({"k": 0}, "cutoff k"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"k": 2, "scale": [0, 1], "scheme": "linear"} | kwargs
    with pytest.raises(ValueError, match=message):
        impact_scores({"q": {"A": ["a"], "B": ["b"]}}, {}, **arguments)  # type: ignore[arg-type]


def test_a_grade_off_the_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="not on the scale"):
        impact_scores({"q": {"A": ["a"]}}, {"q": {"a": 5}}, k=1, scale=[0, 1], scheme="linear")


def test_a_document_twice_in_a_ranking_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        impact_scores({"q": {"A": ["a", "a"]}}, {}, k=2, scale=[0, 1], scheme="linear")


def test_malformed_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="outside the pool"):
        QueryTop.of([[0, 3]], pool=2)
    with pytest.raises(ValueError, match="after its end"):
        QueryTop.of([[-1, 0]], pool=1)
    with pytest.raises(ValueError, match="no run's top k"):
        QueryTop.of([[0]], pool=2)
    tops = [QueryTop.of([[0]], pool=1), QueryTop.of([[0], [0]], pool=1)]
    with pytest.raises(ValueError, match="same runs"):
        impact_compute(tops, [np.array([-1]), np.array([-1])], scale=[0, 1], scheme="linear")
    with pytest.raises(ValueError, match="at least one"):
        impact_compute([], [], scale=[0, 1], scheme="linear")


# --- properties -----------------------------------------------------------------------------


@st.composite
def collections(draw: st.DrawFn, max_unjudged: int = 99) -> tuple[list[QueryTop], list[np.ndarray]]:
    """1-3 queries, 1-4 runs, k 1-3, pools of up to 5 documents, grades 0-2 or unjudged."""
    n_queries = draw(st.integers(1, 3))
    n_runs = draw(st.integers(1, 4))
    k = draw(st.integers(1, 3))
    tops, grades = [], []
    unjudged_left = max_unjudged
    for _ in range(n_queries):
        size = draw(st.integers(1, 5))
        matrix = np.full((n_runs, k), -1, dtype=np.int64)
        for a in range(n_runs):
            length = draw(st.integers(0, min(k, size)))
            matrix[a, :length] = draw(st.permutations(range(size)))[:length]
        used = sorted(set(matrix[matrix >= 0].tolist()))
        if not used:
            matrix[0, 0] = 0
            used = [0]
        relabel = np.full(size + 1, -1, dtype=np.int64)  # index -1 (no document) stays -1
        relabel[used] = np.arange(len(used))
        matrix = relabel[matrix]
        tops.append(QueryTop.of(matrix, len(used)))
        row = []
        for _ in used:
            grade = draw(st.sampled_from([UNJUDGED, 0, 1, 2]) if unjudged_left else st.just(1))
            unjudged_left -= grade == UNJUDGED
            row.append(grade)
        grades.append(np.array(row, dtype=np.int64))
    return tops, grades


SCALE = (0, 1, 2)


@settings(max_examples=60, deadline=None)
@given(collections(max_unjudged=6))
def test_pair_states_equal_enumeration_over_all_grades(
    case: tuple[list[QueryTop], list[np.ndarray]],
) -> None:
    """mean, sigma^2 and the bounds against every assignment of grades to the unjudged
    documents, weighted by the prior (calibrated per query), at the model's fixed IDCGs."""
    tops, grades = case
    result = impact_compute(tops, grades, scale=SCALE, scheme="linear")
    n_runs, n_queries = tops[0].top.shape[0], len(tops)
    slots = [(q, d) for q, row in enumerate(grades) for d in np.flatnonzero(row < 0)]
    calibrated = [
        query_calibrated(
            result.prior.distribution(top.best_rank, top.runs), scale_indices(row, SCALE)
        )
        for top, row in zip(tops, grades, strict=True)
    ]
    priors = {(q, d): calibrated[q][d] for q, d in slots}
    expectation = np.zeros((n_runs, n_runs))
    second = np.zeros((n_runs, n_runs))
    smallest = np.full((n_runs, n_runs), np.inf)
    largest = np.full((n_runs, n_runs), -np.inf)
    for assignment in itertools.product(range(len(SCALE)), repeat=len(slots)):
        probability = math.prod(priors[s][g] for s, g in zip(slots, assignment, strict=True))
        values = np.zeros(n_runs)
        for q, top in enumerate(tops):
            gains = np.where(grades[q] >= 0, grades[q], 0).astype(np.float64)
            for (sq, d), g in zip(slots, assignment, strict=True):
                if sq == q:
                    gains[d] = SCALE[g]
            if result.idcgs[q] > 0:
                values += top.weights @ gains / (n_queries * result.idcgs[q])
        difference = values[:, None] - values[None, :]
        expectation += probability * difference
        second += probability * difference**2
        smallest = np.minimum(smallest, difference)
        largest = np.maximum(largest, difference)
    pairs = result.pairs
    assert np.allclose(pairs.mean, expectation, atol=1e-12)
    assert np.allclose(pairs.spread**2, second - expectation**2, atol=1e-12)
    assert np.allclose(pairs.lower, smallest, atol=1e-12)
    assert np.allclose(pairs.upper, largest, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(collections(), st.randoms(use_true_random=False))
def test_impact_is_invariant_to_the_order_of_runs_and_queries(
    case: tuple[list[QueryTop], list[np.ndarray]], random: object
) -> None:
    tops, grades = case
    result = impact_compute(tops, grades, scale=SCALE, scheme="linear")
    runs = list(range(tops[0].top.shape[0]))
    queries = list(range(len(tops)))
    random.shuffle(runs)  # type: ignore[attr-defined]
    random.shuffle(queries)  # type: ignore[attr-defined]
    shuffled = impact_compute(
        [QueryTop.of(tops[q].top[runs], tops[q].weights.shape[1]) for q in queries],
        [grades[q] for q in queries],
        scale=SCALE,
        scheme="linear",
    )
    for position, q in enumerate(queries):
        assert np.allclose(shuffled.impacts[position], result.impacts[q], rtol=1e-9, atol=1e-15)
    assert np.allclose(shuffled.pairs.weight, result.pairs.weight[np.ix_(runs, runs)], atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(collections())
def test_weights_and_impacts_stay_in_range_and_decided_pairs_weigh_nothing(
    case: tuple[list[QueryTop], list[np.ndarray]],
) -> None:
    tops, grades = case
    result = impact_compute(tops, grades, scale=SCALE, scheme="linear")
    pairs = result.pairs
    assert ((pairs.weight >= 0) & (pairs.weight <= 1)).all()
    assert np.allclose(pairs.weight, pairs.weight.T)
    assert (pairs.lower <= pairs.mean + 1e-12).all() and (pairs.mean <= pairs.upper + 1e-12).all()
    decided = (pairs.lower >= 0) | (pairs.upper <= 0)
    assert (pairs.weight[decided] == 0).all()
    for impact, row in zip(result.impacts, grades, strict=True):
        assert (impact >= 0).all()
        assert (impact[row >= 0] == 0).all()  # judged documents have nothing left to move
    if tops[0].top.shape[0] == 1:  # one run: no pair, no decision to change
        assert all((impact == 0).all() for impact in result.impacts)


@settings(max_examples=40, deadline=None)
@given(collections())
def test_the_mapping_interface_agrees_with_the_arrays(
    case: tuple[list[QueryTop], list[np.ndarray]],
) -> None:
    tops, grades = case
    result = impact_compute(tops, grades, scale=SCALE, scheme="linear")
    rankings = {
        f"q{q}": {
            f"r{a}": [f"d{d}" for d in row if d >= 0] for a, row in enumerate(top.top.tolist())
        }
        for q, top in enumerate(tops)
    }
    judged = {
        f"q{q}": {f"d{d}": int(g) for d, g in enumerate(row) if g >= 0}
        for q, row in enumerate(grades)
    }
    impacts = impact_scores(rankings, judged, k=tops[0].top.shape[1], scale=SCALE, scheme="linear")
    expected = {
        (f"q{q}", f"d{d}"): float(result.impacts[q][d])
        for q, row in enumerate(grades)
        for d in np.flatnonzero(row < 0)
    }
    assert impacts.keys() == expected.keys()
    for key, value in expected.items():
        assert impacts[key] == pytest.approx(value, rel=1e-9, abs=1e-15)


def test_the_arrays_of_a_top_k_equal_those_built_run_by_run() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n_runs, k, pool = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 9))
        matrix = np.full((n_runs, k), -1, dtype=np.int64)
        for a in range(n_runs):
            chosen = rng.permutation(pool)[: int(rng.integers(0, min(k, pool) + 1))]
            matrix[a, : len(chosen)] = chosen
        used = sorted(set(matrix[matrix >= 0].tolist()))
        matrix = np.where(matrix >= 0, np.searchsorted(used, matrix), -1)
        top = QueryTop.of(matrix, len(used))
        weights = np.zeros((n_runs, len(used)))
        best = np.full(len(used), k + 1, dtype=np.int64)
        for a in range(n_runs):  # one run at a time, as the model's docstring reads
            row = matrix[a][matrix[a] >= 0]
            weights[a, row] = [1.0 / math.log2(i + 2) for i in range(len(row))]
            np.minimum.at(best, row, np.arange(1, len(row) + 1))
        assert weights.tobytes() == top.weights.tobytes()
        assert best.tolist() == top.best_rank.tolist()
        assert top.runs.tolist() == [int((matrix == d).sum()) for d in range(len(used))]
