"""The assessor sensitivity from its inputs, without a database (metrics.sensitivity)."""

from annotations.metrics import ndcg
from annotations.metrics.ndcg import ordered_mean
from annotations.metrics.sensitivity import SensitivityInputs, queries_to_rescore, sensitivity

K = 2
RUNS = {1: "A", 2: "B", 3: "C"}
# Two queries; run C skipped query 20 (it has no ranking there).
RANKINGS = {10: {1: [100, 101], 2: [101, 100], 3: [100]}, 20: {1: [200], 2: [201, 200]}}
EFFECTIVE = {10: {100: 2, 101: 0}, 20: {200: 1, 201: 1}}
# Assessor 5 disagrees on query 10 only; assessor 6 agrees everywhere.
OWN = {5: {10: {100: 0, 101: 2}, 20: {200: 1}}, 6: {10: {100: 2, 101: 0}}}


def _vector(grades: dict[int, dict[int, int]], run_id: int) -> dict[int, float]:
    """The run's nDCG@K per query (0.0 where it has no ranking), by the reference."""
    vector = {}
    for query_id in sorted(grades):
        ranking = RANKINGS[query_id].get(run_id, [])
        vector[query_id] = ndcg.query_scores(ranking, grades[query_id], [K], "linear")[K].ndcg
    return vector


def _inputs(rankings: dict[int, dict[int, list[int]]]) -> SensitivityInputs:
    return SensitivityInputs(
        k=K,
        gain="linear",
        runs=RUNS,
        vectors={run_id: _vector(EFFECTIVE, run_id) for run_id in RUNS},
        shared_pairs=2,
        own=OWN,
        effective=EFFECTIVE,
        names={5: "ann", 6: "bob"},
        rankings=rankings,
    )


def test_only_counted_queries_where_an_assessor_differs_are_rescored() -> None:
    assert queries_to_rescore(OWN, EFFECTIVE, {10, 20}) == [10]
    assert queries_to_rescore(OWN, EFFECTIVE, {20}) == []
    assert queries_to_rescore({}, EFFECTIVE, {10, 20}) == []


def test_each_assessor_ranking_equals_a_full_recomputation_with_their_grades() -> None:
    result = sensitivity(_inputs({10: RANKINGS[10]}))
    effective_means = {
        RUNS[run_id]: ordered_mean(_vector(EFFECTIVE, run_id).values()) for run_id in RUNS
    }
    assert result.effective_means == effective_means
    assert result.effective == sorted(RUNS.values(), key=lambda n: -effective_means[n])
    ann, bob = result.assessors
    ann_grades = {10: OWN[5][10], 20: EFFECTIVE[20]}
    assert ann.means == {
        RUNS[run_id]: ordered_mean(_vector(ann_grades, run_id).values()) for run_id in RUNS
    }
    assert (ann.assessor, ann.judged, ann.differing, ann.queries) == ("ann", 3, 2, 1)
    assert ann.ranking[0] == "B"  # B ranks the document ann finds relevant first
    assert (bob.assessor, bob.judged, bob.differing, bob.queries) == ("bob", 2, 0, 0)
    assert bob.means == effective_means and bob.ranking == result.effective
    assert bob.tau == 1.0
    assert [(p.first, p.second) for p in result.pairs] == [("ann", "bob")]
    swing = {s.run: (s.best, s.worst) for s in result.swings}
    assert swing["B"] == (1, result.effective.index("B") + 1)


def test_a_run_without_a_ranking_keeps_zero_and_a_skipped_query_stays_out() -> None:
    inputs = _inputs({10: RANKINGS[10]})
    # Run C answered only query 10 (skip rule: its vector lacks query 20).
    vectors = {run_id: dict(vector) for run_id, vector in inputs.vectors.items()}
    del vectors[3][20]
    rankings = {10: {1: RANKINGS[10][1], 2: RANKINGS[10][2]}}  # C retrieved nothing here
    skipped = SensitivityInputs(**{**inputs.__dict__, "vectors": vectors, "rankings": rankings})
    ann = sensitivity(skipped).assessors[0]
    assert ann.means["C"] == ordered_mean([vectors[3][10]])  # unchanged, over one query
