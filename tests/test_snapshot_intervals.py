"""A refresh keeps the stored CIs of the runs whose values did not move: the same bits as
resampling every run from scratch, on random data and through real judgements."""

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotations import services
from annotations.metrics import significance_arrays
from annotations.models import Collection, LeaderboardSnapshot
from annotations.scores import refresh_queue, snapshot_intervals, snapshots
from annotations.selectors import leaderboards
from tests.factories import CollectionFactory, UserFactory, grade_pair

Interval = tuple[float, float]


def _bits(intervals: dict[int, Interval | None]) -> dict[int, bytes | None]:
    """The intervals' bit patterns (``==`` would take -0.0 for 0.0)."""
    return {run: None if ci is None else struct.pack("<dd", *ci) for run, ci in intervals.items()}


def _scratch(vectors: dict[int, dict[int, float]]) -> dict[int, Interval]:
    runs = list(vectors)
    computed = significance_arrays.bootstrap_cis(
        [list(vectors[run].values()) for run in runs],
        resamples=leaderboards.BOOTSTRAP_RESAMPLES,
        confidence=leaderboards.CONFIDENCE,
        seed=leaderboards.BOOTSTRAP_SEED,
    )
    return dict(zip(runs, computed, strict=True))


def _known(vectors: dict[int, dict[int, float]], intervals: dict[int, Interval]) -> Any:
    query_ids = tuple(next(iter(vectors.values())))
    values = {
        run: np.array(list(vector.values()), dtype="<f8").tobytes()
        for run, vector in vectors.items()
    }
    return leaderboards.KnownIntervals(query_ids, values, intervals)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The runs each `bootstrap_cis` call resamples, in order (the calls still compute)."""
    calls: list[int] = []
    real = significance_arrays.bootstrap_cis

    def spy(rows: Any, **kwargs: Any) -> Any:
        calls.append(len(rows))
        return real(rows, **kwargs)

    monkeypatch.setattr(significance_arrays, "bootstrap_cis", spy)
    return calls


@pytest.mark.parametrize("seed", range(6))
def test_kept_intervals_equal_resampling_every_run_on_random_data(
    seed: int, asked: list[int]
) -> None:
    rng = np.random.default_rng(seed)
    queries = int(rng.integers(2, 40))
    query_ids = [int(q) for q in rng.permutation(1000)[:queries]]
    choices = np.array([0.0, 1.0, 0.5, 0.25, 0.6309297535714575])

    def row() -> dict[int, float]:
        tied = rng.random() < 0.5
        values = rng.choice(choices, size=queries) if tied else rng.random(queries)
        return dict(zip(query_ids, (float(v) for v in values), strict=True))

    before = {run: row() for run in range(30)}
    before[30] = dict.fromkeys(query_ids, 0.0)  # a zero interval, kept
    before[31] = dict.fromkeys(query_ids, -0.0)  # a stored -0.0 reads back as 0.0: not kept
    stored = {run: (abs(low), abs(high)) for run, (low, high) in _scratch(before).items()}
    known = _known(before, stored)
    after = {run: dict(vector) for run, vector in before.items()}
    moved = [int(run) for run in rng.choice(30, size=8, replace=False)]
    for run in moved:  # one query's value moves, as after a judgement
        query = query_ids[int(rng.integers(queries))]
        after[run][query] = float(rng.choice([0.0, 0.75, after[run][query] + 2**-40]))
    after[3][query_ids[0]] = -0.0 if after[3][query_ids[0]] == 0.0 else after[3][query_ids[0]]

    asked.clear()  # the calls of `_intervals` alone
    kept = leaderboards.intervals_kept(
        list(after), {run: _vector(v) for run, v in after.items()}, known
    )
    assert _bits(kept) == _bits(_scratch(after))  # type: ignore[arg-type]
    assert asked and asked[0] <= len(moved) + 2  # the moved runs, run 3, run 31


def _vector(values: dict[int, float]) -> leaderboards.RunVector:
    return tuple(values), np.array(list(values.values()), dtype=np.float64)


def test_an_interval_is_kept_only_over_the_same_queries_in_the_same_order() -> None:
    vector = {1: 0.25, 2: 0.5, 3: 1.0}
    known = _known({7: vector}, {7: (0.3, 0.9)})
    assert known.interval(7, _vector(vector)) == (0.3, 0.9)
    assert known.interval(7, ([1, 2, 3], np.array([0.25, 0.5, 1.0]))) == (0.3, 0.9)
    assert known.interval(7, _vector({2: 0.5, 1: 0.25, 3: 1.0})) is None
    assert known.interval(7, _vector({1: 0.25, 2: 0.5})) is None
    assert known.interval(7, _vector({1: 0.25, 2: 0.5, 3: 1.0, 4: 0.0})) is None
    assert known.interval(7, _vector({1: 0.25, 2: 0.5, 3: 0.9999999999999999})) is None
    assert known.interval(8, _vector(vector)) is None


# --- through the stored snapshot ------------------------------------------------------------

QRELS = (
    "q1 0 d1 3\nq1 0 d2 1\nq1 0 d3 2\nq2 0 d3 2\nq2 0 d4 1\nq3 0 d5 1\nq3 0 d6 2\n"
    "q4 0 d7 1\nq4 0 d1 2\n"
)


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _collection(write_file: Callable[..., Path], missing: str) -> Collection:
    collection = CollectionFactory(slug=f"iv-{missing}", cutoffs=[2, 3], missing_queries=missing)
    services.judgements_import(
        collection=collection, source=write_file("q.qrels", QRELS), assessor=UserFactory()
    )
    rng = np.random.default_rng(5)
    documents = [f"d{n}" for n in range(1, 10)]
    for r in range(12):
        lines = []
        for qid in ("q1", "q2", "q3", "q4"):
            if missing == "skip" and r % 5 == 4 and qid == "q4":
                continue  # some runs answer fewer queries
            for rank, doc in enumerate(rng.permutation(documents)[:3], start=1):
                lines.append(f"{qid} Q0 {doc} {rank} {10 - rank} R{r}\n")
        services.run_import(collection=collection, source=write_file(f"r{r}.run", "".join(lines)))
    return collection


def _intervals_of(board: leaderboards.Leaderboard) -> dict[int, Interval | None]:
    return {
        row.run.id: None if row.ci_low is None else (row.ci_low, row.ci_high)  # type: ignore[misc]
        for row in board.rows
    }


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_a_refresh_after_each_judgement_equals_a_computation_from_scratch(
    transactional_db: None,
    write_file: Callable[..., Path],
    asked: list[int],
    missing: str,
) -> None:
    collection = _collection(write_file, missing)
    for k in (2, 3):
        snapshots.leaderboard_refresh(collection=collection, k=k)
    changes = [("q2", "d9", 1), ("q1", "d8", 3), ("q3", "d5", 0), ("q4", "d2", 2), ("q2", "d9", 0)]
    resampled: list[int] = []
    for number, (qid, docno, grade) in enumerate(changes):
        grade_pair(collection, qid, docno, f"assessor-{number}", grade)  # one each
        for k in (2, 3):
            asked.clear()
            board = snapshots.leaderboard_refresh(collection=collection, k=k)
            resampled.append(sum(asked))
            fresh = leaderboards.leaderboard_compute(collection=collection, k=k)
            assert _bits(_intervals_of(board)) == _bits(_intervals_of(fresh))
            assert [row.run.id for row in board.rows] == [row.run.id for row in fresh.rows]
    asked.clear()
    snapshots.leaderboard_refresh(collection=collection, k=2)
    if missing == "zero":  # judgements move some runs; nothing moved, nothing is resampled
        assert min(resampled) < 12 and asked == [0]
    else:  # the stored matrix's columns are the queries every run answered: only the two
        # runs that answered no more are kept, the ten others are resampled every time
        assert min(resampled) == 10 and asked == [10]


def test_a_snapshot_whose_matrix_does_not_fit_its_rows_offers_nothing(
    transactional_db: None, write_file: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh_queue, "_publish", lambda *a, **kw: None)  # no worker yet
    collection = _collection(write_file, "zero")
    snapshots.leaderboard_refresh(collection=collection, k=2)
    assert snapshot_intervals.known_intervals(collection=collection, k=3) is None
    known = snapshot_intervals.known_intervals(collection=collection, k=2)
    assert known is not None and len(known.intervals) == 12
    LeaderboardSnapshot.objects.filter(collection=collection, k=2).update(per_query=b"\0" * 8)
    assert snapshot_intervals.known_intervals(collection=collection, k=2) is None
