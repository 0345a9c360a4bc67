"""The leaderboard's matrix of stored values, held per process and patched where it moved,
equals a whole read after every kind of change; its means are trec_eval's sums, bit for bit."""

from __future__ import annotations

import random
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations import services
from annotations.metrics.ndcg import ordered_mean
from annotations.metrics.ndcg_arrays import ordered_means
from annotations.models import Collection
from annotations.scores import bounds_cache, refresh_queue, snapshots
from annotations.selectors import leaderboards, score_matrix
from annotations.selectors.score_matrix import score_matrix_held, score_matrix_read
from tests.factories import CollectionFactory, DocumentFactory, QueryFactory, grade_pair

# --- the means --------------------------------------------------------------------------

_DOUBLES = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-300, 0.1, 2.0 / 3.0]),
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_subnormal=True),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(_DOUBLES, st.booleans()), max_size=30), max_size=6))
def test_ordered_means_are_the_sequential_loop_bit_for_bit(rows: list[list[Any]]) -> None:
    width = max((len(row) for row in rows), default=0)
    values = np.zeros((len(rows), width))
    counts = np.zeros((len(rows), width), dtype=bool)
    for r, row in enumerate(rows):
        for q, (value, counted) in enumerate(row):
            values[r, q], counts[r, q] = value, counted
    got = ordered_means(values, counts)
    for r, row in enumerate(rows):
        expected = ordered_mean(value for value, counted in row if counted)
        assert struct.pack("<d", float(got[r])) == struct.pack("<d", expected)


def test_ordered_means_keep_the_sign_of_a_zero_sum() -> None:
    values = np.array([[-0.0, -0.0, 5.0], [-0.0, 0.0, 0.0]])
    counts = np.array([[True, True, False], [True, False, True]])
    got = ordered_means(values, counts)
    # the loop starts at +0.0: 0.0 + -0.0 + -0.0 is +0.0
    assert [struct.pack("<d", v) for v in got] == [struct.pack("<d", 0.0)] * 2


# --- the held matrix through real changes -------------------------------------------------


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _nothing_held() -> Any:
    score_matrix.score_matrix_forget()
    bounds_cache.bounds_forget()
    yield
    score_matrix.score_matrix_forget()
    bounds_cache.bounds_forget()


DOCS = [f"d{n}" for n in range(12)]


def _campaign(missing: str) -> Collection:
    rng = random.Random(31)
    collection = CollectionFactory(slug=f"held-{missing}", cutoffs=[3, 5], missing_queries=missing)
    for q in range(1, 10):  # q9 has no judgement yet: a change may make it evaluated
        QueryFactory(collection=collection, qid=f"q{q}")
    for doc in DOCS:
        DocumentFactory(collection=collection, docno=doc)
    for q in range(1, 9):
        for doc in rng.sample(DOCS, 5):
            grade_pair(collection, f"q{q}", doc, "nist", rng.randint(0, 3))
    for r in range(6):
        results = {
            f"q{q}": [(doc, None, rank) for rank, doc in enumerate(rng.sample(DOCS, 6), 1)]
            for q in range(1, 9)
            if not (missing == "skip" and r % 3 == 2 and q % 4 == 0)
        }
        services.run_store(collection=collection, run_name=f"run{r}", results=results)
    return collection


def _runs(collection: Collection, k: int) -> list[tuple[int, Any, Any]]:
    scored, _ = leaderboards.leaderboard_runs(collection=collection, k=k)
    return [(run[0], run[3], run[4]) for run in scored]


def _whole(collection: Collection, k: int) -> score_matrix.ScoreMatrix:
    evaluated = [q for q, _, _ in leaderboards.evaluated_queries(collection, k)]
    return score_matrix_read(collection, k, [r for r, _, _ in _runs(collection, k)], evaluated)


def _same(a: score_matrix.ScoreMatrix, b: score_matrix.ScoreMatrix) -> bool:
    return (
        a.run_ids == b.run_ids
        and a.query_ids == b.query_ids
        and a.values.tobytes() == b.values.tobytes()
        and a.answered.tobytes() == b.answered.tobytes()
    )


def _changes(collection: Collection, rng: random.Random) -> list[Any]:
    def judge() -> None:
        grade_pair(collection, f"q{rng.randint(1, 9)}", rng.choice(DOCS), "amy", rng.randint(0, 3))

    def new_run() -> None:
        results = {f"q{q}": [(rng.choice(DOCS), None, 1)] for q in range(1, 6)}
        services.run_store(collection=collection, run_name=f"new{rng.random()}", results=results)

    def replace_run() -> None:
        run = collection.runs.order_by("?").first()
        results = {"q1": [(rng.choice(DOCS), None, 1)], "q2": [(rng.choice(DOCS), None, 1)]}
        services.run_store(collection=collection, run_name=run.name, results=results, replace=True)

    def delete_run() -> None:
        services.run_delete(run=collection.runs.order_by("?").first())

    def gain() -> None:
        fresh = Collection.objects.get(pk=collection.pk)
        flipped = "linear" if fresh.gain == "exponential" else "exponential"
        services.collection_update(collection=fresh, gain=flipped)

    return [judge] * 6 + [new_run, replace_run, delete_run, gain]


@pytest.mark.parametrize("missing", ["zero", "skip"])
@pytest.mark.django_db(transaction=True)
def test_the_held_matrix_equals_a_whole_read_after_every_kind_of_change(missing: str) -> None:
    collection = _campaign(missing)
    rng = random.Random(7)
    changes = _changes(collection, rng)
    for step in range(30):
        fresh = Collection.objects.get(pk=collection.pk)
        for k in (3, 5):
            held = score_matrix_held(fresh, k, _runs(fresh, k))
            assert _same(held, _whole(fresh, k)), (step, k)
        rng.choice(changes)()


@pytest.mark.django_db(transaction=True)
def test_after_a_judgement_only_its_query_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    collection = _campaign("zero")
    monkeypatch.setattr(refresh_queue, "_publish", lambda *a, **kw: None)  # no worker yet
    score_matrix_held(collection, 5, _runs(collection, 5))
    whole: list[int] = []
    patched: list[list[int]] = []
    real_read, real_rows = score_matrix.score_matrix_read, score_matrix.stored_rows_at
    monkeypatch.setattr(
        score_matrix, "score_matrix_read", lambda *a, **kw: whole.append(1) or real_read(*a, **kw)
    )

    def rows(*args: Any, **kwargs: Any) -> Any:
        patched.append(list(kwargs["query_ids"]))
        return real_rows(*args, **kwargs)

    monkeypatch.setattr(score_matrix, "stored_rows_at", rows)
    grade_pair(collection, "q3", "d11", "amy", 3)
    held = score_matrix_held(collection, 5, _runs(collection, 5))
    q3 = collection.queries.get(qid="q3").id
    assert whole == [] and patched == [[q3]]
    assert _same(held, _whole(collection, 5))
    assert score_matrix_held(collection, 5, _runs(collection, 5)) is held  # nothing moved


@pytest.mark.parametrize("missing", ["zero", "skip"])
@pytest.mark.django_db(transaction=True)
def test_refreshed_rows_equal_a_computation_from_scratch_bit_for_bit(missing: str) -> None:
    """The snapshot's rows (matrix held, bounds held, CIs kept) against a leaderboard computed
    from nothing held, after each of many judgements."""
    collection = _campaign(missing)
    rng = random.Random(11)

    def bits(board: leaderboards.Leaderboard) -> list[Any]:
        return [
            (
                row.rank,
                row.run.id,
                struct.pack("<dddd", row.ndcg, row.judged, row.ndcg_condensed, row.ndcg_top_grade),
                None if row.ci_low is None else struct.pack("<dd", row.ci_low, row.ci_high),
                row.queries,
                row.pending,
            )
            for row in board.rows
        ] + [board.query_ids, board.per_query.tobytes() if board.per_query is not None else b""]

    for _ in range(12):
        grade_pair(collection, f"q{rng.randint(1, 8)}", rng.choice(DOCS), "amy", rng.randint(0, 3))
        fresh = Collection.objects.get(pk=collection.pk)
        refreshed = snapshots.leaderboard_refresh(collection=fresh, k=5)
        scratch = leaderboards.leaderboard_compute(collection=fresh, k=5)
        assert bits(refreshed) == bits(scratch)
        assert [run.id for run in refreshed.unscored] == [run.id for run in scratch.unscored]


@pytest.mark.django_db(transaction=True)
def test_held_bounds_are_read_again_only_for_the_query_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collection = _campaign("zero")
    monkeypatch.setattr(refresh_queue, "_publish", lambda *a, **kw: None)  # no worker yet
    snapshots.leaderboard_refresh(collection=collection, k=5)
    asked: list[set[int]] = []
    real = bounds_cache.top_grade_bounds_by_query

    def spy(**kwargs: Any) -> Any:
        asked.append(set(kwargs["query_ids"]))
        return real(**kwargs)

    monkeypatch.setattr(bounds_cache, "top_grade_bounds_by_query", spy)
    snapshots.leaderboard_refresh(collection=collection, k=5)
    assert asked == []
    grade_pair(collection, "q2", "d10", "amy", 2)
    snapshots.leaderboard_refresh(collection=collection, k=5)
    assert asked == [{collection.queries.get(qid="q2").id}]


@pytest.mark.django_db(transaction=True)
def test_a_computation_on_another_thread_leaves_the_held_matrix_to_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two computations may run at once in one process (a worker's threads): the matrix and
    the bounds stay held for both (shared, read-only), so each still reads only what moved."""
    collection = _campaign("zero")
    snapshots.leaderboard_refresh(collection=collection, k=5)
    whole: list[int] = []
    real_read, real_patch = score_matrix.score_matrix_read, score_matrix.score_matrix_patch
    monkeypatch.setattr(
        score_matrix, "score_matrix_read", lambda *a, **kw: whole.append(1) or real_read(*a, **kw)
    )
    inside: list[bool] = []

    def patch(*args: Any, **kwargs: Any) -> Any:
        if not inside:  # a second computation, while the first patches its matrix
            inside.append(True)
            score_matrix.score_matrix_held(collection, 5, _runs(collection, 5))
        return real_patch(*args, **kwargs)

    monkeypatch.setattr(score_matrix, "score_matrix_patch", patch)
    grade_pair(collection, "q4", "d11", "amy", 3)
    board = snapshots.leaderboard_refresh(collection=collection, k=5)
    assert inside and whole == [] and board.rows
    held = score_matrix.score_matrix_held(collection, 5, _runs(collection, 5))
    assert not held.values.flags.writeable and not held.answered.flags.writeable
    assert _same(held, _whole(collection, 5))
