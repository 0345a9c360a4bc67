"""The randomised Tukey HSD test: against a plain reference, in simulation, its letter display."""

import time
import tracemalloc

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.metrics import hsd, significance, significance_arrays
from annotations.metrics.hsd import below_best, compact_letters, randomised_tukey_hsd


def _reference_p(scores: np.ndarray, permutations: int, seed: int) -> np.ndarray:
    """The documented procedure, pair by pair and permutation by permutation."""
    rng = np.random.Generator(np.random.PCG64(seed))
    runs, queries = scores.shape
    ranges = []
    for _ in range(permutations):
        shuffled = np.empty_like(scores)
        for query in range(queries):
            shuffled[:, query] = scores[rng.permutation(runs), query]
        means = shuffled.mean(axis=1)
        ranges.append(float(means.max() - means.min()))
    observed = scores.mean(axis=1)
    tolerance = 1e-10 * float(np.abs(scores).max())
    p = np.ones((runs, runs))
    for i in range(runs):
        for j in range(runs):
            if i != j:
                difference = abs(float(observed[i] - observed[j]))
                hits = sum(1 for value in ranges if value >= difference - tolerance)
                p[i, j] = (1 + hits) / (1 + permutations)
    return p


def _valid_display(letters: list[str], significant: np.ndarray) -> None:
    separator = " " if any(" " in text for text in letters) else None
    held = [set(text.split(separator)) if separator else set(text) for text in letters]
    for i in range(len(letters)):
        assert held[i], f"run {i} has no letter"
        for j in range(i + 1, len(letters)):
            shares = bool(held[i] & held[j])
            assert shares != bool(significant[i, j]), (i, j, letters)


# --- (a) the reference ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runs", "queries", "seed", "discrete"),
    [(2, 1, 0, False), (3, 4, 1, False), (5, 7, 2, False), (6, 9, 3, True), (4, 12, 4, True)],
)
def test_equals_the_plain_reference(runs: int, queries: int, seed: int, discrete: bool) -> None:
    data = np.random.default_rng(100 + seed)
    if discrete:  # nDCG-like: many equal values, so many exact ties of shuffled ranges
        scores = data.choice([0.0, 0.5, 1.0, 0.6309297535714575], size=(runs, queries))
    else:
        scores = data.random((runs, queries))
    result = randomised_tukey_hsd(scores, permutations=300, seed=seed)
    expected = _reference_p(scores, 300, seed)
    np.testing.assert_allclose(result.p_adjusted, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.means, scores.mean(axis=1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        result.differences, scores.mean(axis=1)[:, None] - scores.mean(axis=1), rtol=0, atol=0
    )
    assert np.array_equal(result.significant, expected < 0.05)
    assert result.runs == runs and result.queries == queries


def test_p_value_convention_counts_the_observed_assignment() -> None:
    # Run 0 beats run 1 by 10 on all 30 queries, run 2 sits between: a shuffled range reaches
    # 10 only if every query puts its 10 and its 0 on the same two runs in the same roles.
    scores = np.array([[10.0] * 30, [0.0] * 30, [5.0] * 30])
    result = randomised_tukey_hsd(scores, permutations=999, seed=0)
    assert result.p_adjusted[0, 1] == 1 / 1000  # (1 + 0) / (1 + 999): never 0
    assert result.significant[0, 1] and result.significant[1, 0]
    assert np.array_equal(result.p_adjusted, result.p_adjusted.T)
    assert np.all(np.diagonal(result.p_adjusted) == 1.0)
    assert not np.any(np.diagonal(result.significant))


def test_identical_rows_give_p_one_everywhere() -> None:
    row = np.random.default_rng(5).random(20)
    result = randomised_tukey_hsd(np.tile(row, (6, 1)), permutations=200)
    assert np.all(result.p_adjusted == 1.0)
    assert not result.significant.any()
    assert result.letters() == ["a"] * 6
    assert result.below_best() == [False] * 6


def test_one_and_no_runs() -> None:
    one = randomised_tukey_hsd([[0.25, 0.75]])
    assert one.runs == 1 and one.means.tolist() == [0.5]
    assert one.p_adjusted.tolist() == [[1.0]] and one.significant.tolist() == [[False]]
    assert one.letters() == ["a"] and one.below_best() == [False]
    empties: list[npt.ArrayLike] = [[], np.empty((0, 5))]
    for empty in empties:
        none = randomised_tukey_hsd(empty)
        assert none.runs == 0 and none.p_adjusted.shape == (0, 0) and none.means.shape == (0,)
        assert none.letters() == [] and none.below_best() == []


@pytest.mark.parametrize(
    ("scores", "kwargs", "message"),
    [
        ([[0.1, float("nan")], [0.2, 0.3]], {}, "finite"),
        ([[0.1, float("inf")], [0.2, 0.3]], {}, "finite"),
        ([[], []], {}, "at least one query"),
        ([0.1, 0.2], {}, "matrix"),
        ([[[0.1]]], {}, "matrix"),
        ([[0.1, 0.2], [0.3]], {}, "matrix of numbers"),
        ([["a", "b"]], {}, "matrix of numbers"),
        ([[0.1], [0.2]], {"permutations": 0}, "permutations"),
        ([[0.1], [0.2]], {"seed": -1}, "seed"),
        ([[0.1], [0.2]], {"alpha": 0.0}, "alpha"),
        ([[0.1], [0.2]], {"alpha": float("nan")}, "alpha"),
        ([[0.1], [0.2]], {"chunk_permutations": 0}, "chunk_permutations"),
    ],
)
def test_bad_input_is_refused(scores: object, kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        randomised_tukey_hsd(scores, **kwargs)  # type: ignore[arg-type]


def test_results_are_read_only() -> None:
    result = randomised_tukey_hsd(np.random.default_rng(0).random((3, 5)), permutations=50)
    with pytest.raises(ValueError, match="read-only"):
        result.p_adjusted[0, 1] = 0.0
    with pytest.raises(ValueError, match="read-only"):
        result.scores[0, 0] = 1.0


def test_pair_reports_difference_effect_size_and_bootstrap_interval() -> None:
    scores = np.random.default_rng(9).random((4, 25))
    result = randomised_tukey_hsd(scores, permutations=200, seed=3)
    comparison = result.pair(0, 2, resamples=500)
    per_query = scores[0] - scores[2]
    assert comparison.difference == result.differences[0, 2]
    assert comparison.effect_size == pytest.approx(per_query.mean() / per_query.std(ddof=1))
    assert (comparison.ci_low, comparison.ci_high) == significance.bootstrap_ci(
        per_query, resamples=500, seed=3
    )
    assert comparison.ci_low <= comparison.difference <= comparison.ci_high
    assert comparison.p_adjusted == result.p_adjusted[0, 2]
    assert comparison.significant == bool(result.significant[0, 2])
    reverse = result.pair(2, 0, resamples=500)
    assert reverse.difference == -comparison.difference
    assert reverse.effect_size == pytest.approx(-comparison.effect_size)
    assert reverse.p_adjusted == comparison.p_adjusted
    other_seed = result.pair(0, 2, resamples=500, seed=4)
    assert (other_seed.ci_low, other_seed.ci_high) == significance.bootstrap_ci(
        per_query, resamples=500, seed=4
    )
    with pytest.raises(ValueError, match="range"):
        result.pair(0, 4)
    with pytest.raises(ValueError, match="range"):
        result.pair(-1, 0)


def test_pair_effect_size_without_spread() -> None:
    result = randomised_tukey_hsd([[0.5, 0.7], [0.25, 0.45], [0.5, 0.7]], permutations=20)
    assert result.pair(0, 1).effect_size == float("inf")
    assert result.pair(1, 0).effect_size == float("-inf")
    same = result.pair(0, 2)
    assert same.effect_size == 0.0 and (same.ci_low, same.ci_high) == (0.0, 0.0)


# --- (b) simulations -----------------------------------------------------------------------


def test_separated_quality_levels_are_all_told_apart() -> None:
    data = np.random.default_rng(2012)
    levels = np.repeat([0.2, 0.4, 0.6], 4)
    order = data.permutation(levels.size)  # runs in no particular input order
    query_effect = data.normal(0.0, 0.1, size=50)
    scores = levels[order][:, None] + query_effect + data.normal(0.0, 0.1, size=(12, 50))
    result = randomised_tukey_hsd(scores, permutations=1000, seed=0)
    group = levels[order]
    cross = group[:, None] != group[None, :]
    assert result.significant[cross].all()
    assert not result.significant[~cross].any()
    letters = result.letters()
    assert {letters[r] for r in range(12) if group[r] == 0.6} == {"a"}
    assert {letters[r] for r in range(12) if group[r] == 0.4} == {"b"}
    assert {letters[r] for r in range(12) if group[r] == 0.2} == {"c"}
    assert result.below_best() == [bool(level < 0.6) for level in group]


def test_family_wise_error_is_controlled_under_the_null() -> None:
    # 8 exchangeable runs (same distribution on every query), 50 queries, 40 data sets.
    # A procedure with family-wise error rate <= 0.05 finds some significant pair in
    # X ~ Binomial(40, <= 0.05) of them: P(X >= 7) = 0.0007 at exactly 0.05, so at most
    # 6 of 40 (a share of 0.15) is allowed. Unadjusted pairwise tests over the 28 pairs are
    # the contrast that shows the bound has teeth: they exceed it by far.
    hsd_hits = 0
    unadjusted_hits = 0
    for seed in range(40):
        data = np.random.default_rng(seed)
        difficulty = data.uniform(0.2, 0.8, size=50)
        scores = np.clip(difficulty + data.normal(0.0, 0.15, size=(8, 50)), 0.0, 1.0)
        result = randomised_tukey_hsd(scores, permutations=1000, seed=seed)
        hsd_hits += bool(result.significant.any())
        pairs = [(scores[i], scores[j]) for i in range(8) for j in range(i + 1, 8)]
        raw = significance_arrays.paired_randomization_tests(pairs, permutations=1000, seed=seed)
        unadjusted_hits += any(p < 0.05 for p in raw)
    assert hsd_hits <= 6
    assert unadjusted_hits > 6


# --- (c) compact letter display ------------------------------------------------------------


@st.composite
def _ordered_patterns(draw: st.DrawFn) -> tuple[list[float], np.ndarray]:
    """Significance consistent with the ranking: in rank order each run reaches, without a
    significant pair, a stretch ending no earlier than its predecessor's."""
    count = draw(st.integers(min_value=0, max_value=30))
    ends: list[int] = []
    for start in range(count):
        low = max(start, ends[-1] if ends else 0)
        ends.append(draw(st.integers(min_value=low, max_value=count - 1)))
    ranked = np.ones((count, count), dtype=bool)
    for start, end in enumerate(ends):
        ranked[start, start : end + 1] = False
        ranked[start : end + 1, start] = False
    placement = draw(st.permutations(range(count)))  # input position of each rank
    means = [0.0] * count
    significant = np.zeros((count, count), dtype=bool)
    for rank, run in enumerate(placement):
        means[run] = 1.0 - rank / 64
        for other_rank, other in enumerate(placement):
            significant[run, other] = ranked[rank, other_rank]
    return means, significant


@settings(max_examples=200, deadline=None)
@given(pattern=_ordered_patterns())
def test_letters_are_valid_for_orderly_patterns(pattern: tuple[list[float], np.ndarray]) -> None:
    means, significant = pattern
    letters = compact_letters(means, significant)
    assert len(letters) == len(means)
    _valid_display(letters, significant)
    if means:
        assert letters[int(np.argmax(means))].startswith("a")


@st.composite
def _any_patterns(draw: st.DrawFn) -> tuple[list[float], np.ndarray]:
    count = draw(st.integers(min_value=0, max_value=8))
    means = draw(st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.5]), min_size=count, max_size=count))
    significant = np.zeros((count, count), dtype=bool)
    for i in range(count):
        for j in range(i + 1, count):
            significant[i, j] = significant[j, i] = draw(st.booleans())
    return means, significant


@settings(max_examples=200, deadline=None)
@given(pattern=_any_patterns())
def test_letters_are_valid_for_any_pattern(pattern: tuple[list[float], np.ndarray]) -> None:
    means, significant = pattern
    letters = compact_letters(means, significant)
    _valid_display(letters, significant)
    assert compact_letters(means, significant) == letters  # deterministic
    if means:
        best = min(range(len(means)), key=lambda run: (-means[run], run))
        assert letters[best].startswith("a")


def test_letters_of_an_irregular_pattern() -> None:
    # Not separated: 0-1, 1-2, 2-3, 3-0 (a cycle); separated: 0-2, 1-3. Four maximal groups.
    significant = np.zeros((4, 4), dtype=bool)
    significant[0, 2] = significant[2, 0] = significant[1, 3] = significant[3, 1] = True
    assert compact_letters([0.4, 0.3, 0.2, 0.1], significant) == ["ab", "ac", "cd", "bd"]


def test_letters_follow_the_ranking_not_the_input_order() -> None:
    means = [0.1, 0.5, 0.3]  # ranks: run 1, run 2, run 0
    significant = np.array([[False, True, False], [True, False, False], [False, False, False]])
    assert compact_letters(means, significant) == ["b", "a", "ab"]
    assert below_best(means, significant) == [True, False, False]


def test_letters_beyond_fifty_two_groups() -> None:
    # 61 runs in a chain: each pair of neighbours not separated, everything else separated,
    # so 60 groups; run r (rank r) holds groups r - 1 and r.
    count = 61
    significant = np.ones((count, count), dtype=bool)
    for run in range(count):
        significant[run, run] = False
        if run + 1 < count:
            significant[run, run + 1] = significant[run + 1, run] = False
    letters = compact_letters([float(count - run) for run in range(count)], significant)
    assert letters[0] == "a" and letters[1] == "a b" and letters[26] == "z A"
    assert letters[52] == "Z aa" and letters[53] == "aa ab" and letters[60] == "ah"
    _valid_display(letters, significant)
    alone = compact_letters([float(-run) for run in range(80)], ~np.eye(80, dtype=bool))
    assert alone[:3] == ["a", "b", "c"] and alone[51:54] == ["Z", "aa", "ab"]
    assert alone[79] == "bb"


@pytest.mark.parametrize(
    ("means", "significant", "message"),
    [
        ([0.1, float("nan")], [[False, False], [False, False]], "finite"),
        ([0.1, 0.2], [[False, True], [False, False]], "symmetric"),
        ([0.1, 0.2], [[True, False], [False, False]], "diagonal"),
        ([0.1, 0.2], [[False]], "2 x 2"),
        ([0.1, 0.2], [[0, 1], [1, 0]], "booleans"),
        ([[0.1]], [[False]], "flat"),
    ],
)
def test_letter_inputs_are_checked(means: object, significant: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compact_letters(means, significant)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        below_best(means, significant)  # type: ignore[arg-type]


def test_below_best_uses_the_first_of_tied_best_runs() -> None:
    significant = np.array([[False, False, True], [False, False, False], [True, False, False]])
    assert below_best([0.5, 0.5, 0.2], significant) == [False, False, True]
    assert below_best([], np.zeros((0, 0), dtype=bool)) == []


# --- (d) chunking --------------------------------------------------------------------------


def test_chunking_never_changes_the_result() -> None:
    scores = np.random.default_rng(77).random((9, 31))
    results = [
        randomised_tukey_hsd(scores, permutations=500, seed=11, chunk_permutations=chunk)
        for chunk in (None, 1, 7, 64, 500, 10_000)
    ]
    for result in results[1:]:
        assert np.array_equal(result.p_adjusted, results[0].p_adjusted)
    # The default chunk holds many permutations here, and a different seed does differ.
    assert hsd.CHUNK_ELEMENTS // scores.size > 7
    other = randomised_tukey_hsd(scores, permutations=500, seed=12)
    assert not np.array_equal(other.p_adjusted, results[0].p_adjusted)


# --- (e) memory ----------------------------------------------------------------------------


def test_a_large_matrix_stays_within_bounded_memory() -> None:
    scores = np.random.default_rng(3).random((500, 250))
    tracemalloc.start()
    try:
        probe = np.ones(2_000_000)  # tracemalloc sees numpy's buffers: 16 MB
        assert tracemalloc.get_traced_memory()[1] >= probe.nbytes
        del probe
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        started = time.perf_counter()
        result = randomised_tukey_hsd(scores, permutations=2000, seed=0)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    print(f"500 x 250 x 2,000 permutations: {elapsed:.2f} s, peak {peak / 2**20:.1f} MiB")
    assert peak < 100 * 2**20  # a full 500 x 250 x 2,000 array alone would be 2 GB
    assert result.p_adjusted.shape == (500, 500)


@pytest.mark.parametrize(("seed", "permutations"), [(0, 300), (1, 999), (2, 1000), (3, 50)])
def test_critical_difference_makes_intervals_exclude_zero_exactly_for_significant_pairs(
    seed: int, permutations: int
) -> None:
    data = np.random.default_rng(seed)
    scores = data.random((8, 15)) + np.linspace(0.0, 0.6, 8)[:, None]
    result = randomised_tukey_hsd(scores, permutations=permutations, seed=seed)
    expected = _reference_p(scores, permutations, seed)
    tolerance = 1e-10 * float(np.abs(scores).max())
    outside = np.abs(result.differences) - tolerance > result.critical
    np.fill_diagonal(outside, False)
    assert np.array_equal(outside, expected < 0.05)
    assert np.array_equal(outside, result.significant)


def test_critical_difference_is_infinite_when_no_pair_can_be_significant() -> None:
    scores = np.array([[10.0] * 30, [0.0] * 30])
    result = randomised_tukey_hsd(scores, permutations=10, seed=0)  # p >= 1/11 > 0.05
    assert result.critical == float("inf") and not result.significant.any()
    assert randomised_tukey_hsd([[0.5, 0.25]]).critical == 0.0
