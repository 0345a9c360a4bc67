"""The plan of one query's recomputation, without a database: which rows and columns move."""

import numpy as np

from annotations.formats import score_bytes
from annotations.scores.computing import QueryScores
from annotations.scores.query_plan import MEASURES_MOVED, plan_query, stored_matrix

LAYOUT = "5,10"
QUERY = 7


def _stored(matrix: np.ndarray, layout: str = LAYOUT) -> tuple[object, ...]:
    return (layout, *score_bytes.pack_query(matrix))


def _scores(runs: dict[int, np.ndarray], idcgs: dict[int, float]) -> QueryScores:
    ids = list(runs)
    matrix = np.stack([runs[r] for r in ids]) if ids else np.zeros((0, 4, 2))
    return QueryScores(idcgs, ids, matrix)


def _matrix(ndcg: float, dcg: float, judged: float, condensed: float) -> np.ndarray:
    return np.array([[ndcg] * 2, [dcg] * 2, [judged] * 2, [condensed] * 2])


def test_only_the_moved_measures_of_the_moved_runs_are_written() -> None:
    same = _matrix(0.5, 1.0, 1.0, 0.5)
    old = {1: _stored(same), 2: _stored(same), 3: _stored(same)}
    # Run 1 unchanged; run 2's nDCG and nDCG' moved (a new IDCG); run 3 is gone; run 4 new.
    new = _scores(
        {1: same, 2: _matrix(0.25, 1.0, 1.0, 0.25), 4: _matrix(1.0, 2.0, 1.0, 1.0)},
        {5: 2.0, 10: 4.0},
    )
    writes = plan_query(
        LAYOUT,
        QUERY,
        new,
        stored=old,
        old_ideal={5: 2.0, 10: 2.0, 20: 3.0},
        run_layouts={1: LAYOUT, 2: LAYOUT, 3: LAYOUT, 4: LAYOUT},
    )
    assert [row[:3] for row in writes.inserts] == [(4, QUERY, LAYOUT)]
    assert list(writes.updates) == [(0, 3)]  # ndcg and ndcg_condensed only
    ((query_id, run_id, layout, ndcg, condensed),) = writes.updates[(0, 3)]
    assert (query_id, run_id, layout) == (QUERY, 2, LAYOUT)
    assert score_bytes.floats(ndcg).tolist() == score_bytes.floats(condensed).tolist() == [0.25] * 2
    assert writes.deletes == [3]
    assert writes.ideal_updates == [(10, 4.0)]
    assert writes.ideal_inserts == []
    assert writes.ideal_deletes == [20]
    assert sorted(writes.touched) == [2, 3, 4]
    assert writes.unscored == []


def test_a_sign_of_zero_is_a_change_and_equal_bits_are_not() -> None:
    old = {1: _stored(_matrix(0.0, 0.0, 0.0, 0.0))}
    unchanged = plan_query(
        LAYOUT,
        QUERY,
        _scores({1: _matrix(0.0, 0.0, 0.0, 0.0)}, {5: 1.0}),
        stored=old,
        old_ideal={5: 1.0},
        run_layouts={1: LAYOUT},
    )
    assert (unchanged.inserts, unchanged.updates, unchanged.deletes) == ([], {}, [])
    assert unchanged.touched == []
    negative = plan_query(
        LAYOUT,
        QUERY,
        _scores({1: _matrix(-0.0, 0.0, 0.0, 0.0)}, {5: 1.0}),
        stored=old,
        old_ideal={5: 1.0},
        run_layouts={1: LAYOUT},
    )
    assert list(negative.updates) == [(0,)]
    assert negative.touched == [1]


def test_a_row_in_another_layout_is_rewritten_whole_and_its_run_marked_unscored() -> None:
    old = {1: _stored(np.zeros((4, 3)), layout="5,10,20"), 2: _stored(np.zeros((4, 2)))}
    new = _scores({1: _matrix(0.5, 1.0, 1.0, 0.5), 2: np.zeros((4, 2))}, {5: 1.0, 10: 1.0})
    writes = plan_query(
        LAYOUT,
        QUERY,
        new,
        stored=old,
        old_ideal={5: 1.0, 10: 1.0},
        # Run 1's RunScore says the current layout, but this query's row is in another.
        run_layouts={1: LAYOUT, 2: "5,10,20"},
    )
    # Whole: the four nDCG columns and the other measures' layout and values.
    assert list(writes.updates) == [(0, 1, 2, 3, MEASURES_MOVED)]
    assert [row[1] for row in writes.updates[(0, 1, 2, 3, MEASURES_MOVED)]] == [1]
    assert writes.unscored == [1]
    # Run 1 is rebuilt by its rescore, run 2 is not scored in the current layout.
    assert writes.touched == []


def test_a_query_losing_its_last_judgement_deletes_every_row() -> None:
    old = {1: _stored(_matrix(0.5, 1.0, 1.0, 0.5)), 2: _stored(_matrix(0.0, 0.0, 1.0, 0.0))}
    writes = plan_query(
        LAYOUT,
        QUERY,
        _scores({}, {}),
        stored=old,
        old_ideal={5: 2.0, 10: 2.0},
        run_layouts={1: LAYOUT, 2: LAYOUT},
    )
    assert writes.deletes == [1, 2]
    assert sorted(writes.ideal_deletes) == [5, 10]
    assert writes.touched == [1, 2]
    assert writes.inserts == [] and writes.updates == {}


def test_the_stored_matrix_keeps_the_rows_in_the_layout() -> None:
    first, second = _matrix(0.5, 1.0, 1.0, 0.5), _matrix(0.25, 2.0, 0.5, 0.75)
    stored = {3: _stored(first), 4: _stored(np.ones((4, 3)), "1,2,3"), 5: _stored(second)}
    runs, matrix = stored_matrix(stored, LAYOUT)
    assert runs == [3, 5]
    assert matrix.tolist() == [first.tolist(), second.tolist()]
    assert stored_matrix({}, LAYOUT)[1].shape == (0, 4, 2)
