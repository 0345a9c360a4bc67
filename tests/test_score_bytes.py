"""Packed scores: layouts, round trips, and exact run means in and out of their 12 bytes."""

import importlib
import json

import numpy as np
import pytest

from annotations import scores, services
from annotations.formats import score_bytes
from annotations.metrics import exact, exact_arrays
from annotations.models import Judgement, Query, QueryScore, Run, RunScore
from annotations.scores.computing import ExactMeans
from annotations.selectors.stored_scores import run_means_at


def test_a_layout_reads_back_and_finds_each_cutoff() -> None:
    text = score_bytes.layout([1, 5, 10, 1000])
    assert text == "1,5,10,1000"
    assert score_bytes.cutoffs_of(text) == [1, 5, 10, 1000]
    assert score_bytes.position(text, 10) == 2
    assert score_bytes.position(text, 20) is None


@pytest.mark.parametrize("text", ["", "5,,10", "10,5", "5,5", "0,5", "a"])
def test_a_malformed_layout_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="layout"):
        score_bytes.cutoffs_of(text)


def test_per_query_values_round_trip_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.random((4, 7))
    matrix[0, 0] = -0.0
    columns = score_bytes.pack_query(matrix)
    assert [len(column) for column in columns] == [7 * 8] * 4
    back = score_bytes.unpack_query(memoryview(columns[0]), *columns[1:])
    assert back.view(np.int64).tolist() == matrix.view(np.int64).tolist()
    at = score_bytes.query_values("1,2,3,4,5,6,7", *columns)[3]
    assert at == score_bytes.QueryValues(3, *matrix[:, 2].tolist())
    with pytest.raises(ValueError, match="packed values"):
        score_bytes.unpack_query(*columns[:3], columns[3][:-8])
    with pytest.raises(ValueError, match="layout"):
        score_bytes.query_values("1,2,3", *columns)


def _reference(values: list[list[float]], count: int) -> list[float]:
    """Each column's correctly rounded mean over `count`, one big integer at a time."""
    return [
        exact.total_mean(sum(map(exact.scaled, column)), count)
        for column in zip(*values, strict=True)
    ]


def test_exact_means_keep_off_grid_values_exact() -> None:
    # 1e-30 and 2**-100 are not multiples of 2**-96: those sums leave the limbs for the
    # overflow texts, and every mean still equals the big-integer reference bit for bit.
    rng = np.random.default_rng(11)
    per_query = [rng.random((3, 4)) for _ in range(25)]
    per_query[3][0, 1] = 1e-30
    per_query[7][2, 3] = 2.0**-100
    means = ExactMeans(runs=1, cutoffs=4)
    rows = np.array([0])
    for values in per_query:
        means.move(rows, np.zeros((1, 3, 4)), values[np.newaxis])
        means.counts[0] += 1
    overflow = means.overflow(rows)
    got = score_bytes.means_of(means.sums[0], overflow[0], 25)  # as a read decodes them
    assert set(overflow[0]) == {"0:1", "2:3"}
    for measure in range(3):
        expected = _reference([v[measure].tolist() for v in per_query], 25)
        assert got[measure].tolist() == expected


def test_exact_means_survive_storage_and_moves_back_to_on_grid_values() -> None:
    rng = np.random.default_rng(5)
    values = [rng.random((2, 3, 2)) for _ in range(10)]
    values[0][1, 0, 1] = 1e-25  # run 1, nDCG at the second cutoff: off the grid
    means = ExactMeans(runs=2, cutoffs=2)
    rows = np.array([0, 1])
    for v in values:
        means.move(rows, np.zeros_like(v), v)
    means.counts[:] = 10
    overflow = means.overflow(rows)
    stored = ExactMeans.stored(
        [
            (
                10,
                [score_bytes.pack_sums(means.sums[r, m]) for m in range(3)],
                json.loads(json.dumps(overflow[r])),
            )
            for r in range(2)
        ],
        cutoffs=2,
    )
    # Replace the tiny value by an ordinary one: the sum stays exact (kept as text).
    replacement = values[0].copy()
    replacement[1, 0, 1] = 0.25
    stored.move(rows, values[0], replacement)
    overflow = stored.overflow(rows)
    assert list(overflow[1]) == ["0:1"] and overflow[0] == {}
    values[0] = replacement
    for r in range(2):
        got = score_bytes.means_of(stored.sums[r], overflow[r], 10)
        for measure in range(3):
            expected = _reference([v[r, measure].tolist() for v in values], 10)
            assert got[measure].tolist() == expected
    total = score_bytes.exact_total(stored.sums[1], overflow[1], 0, 1)
    assert total == sum(exact.scaled(float(v[1, 0, 1])) for v in values)


def test_run_means_text_gives_the_exact_sum() -> None:
    sums = exact_arrays.sum_values(np.array([[[0.5, 0.25]] * 3]), axis=0)  # (3, 2, limbs)
    text = score_bytes.run_means("5,10", 1, [score_bytes.pack_sums(s) for s in sums], {})
    assert text[10].ndcg_sum == exact.ExactSum([0.25]).to_text()
    assert text[5] == score_bytes.RunMeans(5, 1, 0.5, 0.5, 0.5, exact.ExactSum([0.5]).to_text())
    assert text[10].ndcg == 0.25


def test_sums_pack_in_12_bytes_and_read_back_exactly() -> None:
    rng = np.random.default_rng(2)
    values = rng.random((40, 3, 5)) - 0.3  # negative sums too
    values[0, 0, 0] = 2.0**22  # near the largest sum 12 bytes hold (2**23)
    values[1, 1, 1] = 2.0**-20  # the smallest score whose last bit they hold
    sums = exact_arrays.sum_values(values, axis=0)
    assert score_bytes.packable(sums).all()
    packed = score_bytes.pack_sums(sums)
    assert len(packed) == 3 * 5 * score_bytes.SUM_BYTES == 3 * 5 * 12
    back = score_bytes.unpack_sums(packed, 5, measures=3)
    assert score_bytes.unpack_sums(score_bytes.pack_sums(sums[1]), 5).tolist() == sums[1].tolist()
    assert back.tolist() == sums.tolist()
    means = score_bytes.means_of(back, {}, 40)
    assert means.tolist() == exact_arrays.means(sums, 40).tolist()


@pytest.mark.parametrize(
    "value",
    [2.0**23, -(2.0**23) - 1.0, 3 * 2.0**-74, 0.1 * 2.0**-21],
    ids=["too-large", "too-negative", "below-2^-72", "tiny-mantissa"],
)
def test_a_sum_12_bytes_cannot_hold_is_refused_and_spills_to_text_exactly(value: float) -> None:
    sums = exact_arrays.sum_values(np.array([value, 0.5]))
    assert not score_bytes.packable(sums)
    with pytest.raises(ValueError, match="12 bytes"):
        score_bytes.pack_sums(sums[np.newaxis])
    assert score_bytes.packable(exact_arrays.sum_values(np.array([-(2.0**23)])))  # the edge
    # Before packing, ExactMeans moves such a sum to the overflow texts, exactly.
    means = ExactMeans(runs=1, cutoffs=1)
    rows = np.array([0])
    for v in (value, 0.5):
        means.move(rows, np.zeros((1, 3, 1)), np.full((1, 3, 1), v))
    means.counts[0] = 2
    means.spill(rows)
    overflow = means.overflow(rows)[0]
    assert sorted(overflow) == ["0:0", "1:0", "2:0"]
    packed = [score_bytes.pack_sums(means.sums[0, m]) for m in range(3)]
    read = score_bytes.run_means("5", 2, packed, overflow)[5]
    assert read.ndcg == read.judged == _reference([[value], [0.5]], 2)[0]
    assert exact.total_from_text(read.ndcg_sum) == exact.scaled(value) + exact.scaled(0.5)


@pytest.mark.django_db
def test_a_sum_kept_as_text_folds_exactly_through_a_judgement(worked_example, assessor) -> None:  # type: ignore[no-untyped-def]
    # The stored nDCG sum at the first cutoff moved to the overflow texts (where a sum of
    # off-grid values lives): a judgement folds into it exactly, and it stays there.
    row = RunScore.objects.get()
    sums = score_bytes.unpack_sums(row.ndcg_sums, len(score_bytes.cutoffs_of(row.cutoffs)))
    before = row.per_cutoff()
    row.overflow = {"0:0": exact_arrays.to_text(sums[0])}
    sums[0] = 0
    row.ndcg_sums = score_bytes.pack_sums(sums)
    row.save()
    assert RunScore.objects.get().per_cutoff() == before
    first = min(before)  # the cutoff whose sum moved to the texts, as a leaderboard reads it
    (mean,) = run_means_at(worked_example, first)
    assert mean.ndcg == before[first].ndcg  # one query: the mean is its value either way
    query = Query.objects.get()
    judgement = Judgement.objects.filter(query=query, grade__gt=0).select_related("document")[0]
    services.judgement_record(
        query=query, document=judgement.document, assessor=assessor, grade=0, source="api"
    )
    stored = RunScore.objects.get()
    assert list(stored.overflow) == ["0:0"]
    assert scores.scores_verify(collection=worked_example) == []
    assert stored.per_cutoff() != before


@pytest.mark.django_db
def test_the_upgrade_clears_scores_and_the_sweep_rebuilds_them(worked_example) -> None:  # type: ignore[no-untyped-def]
    # Migration 0012 drops the stored scores and marks every run unscored; the sweep (the
    # worker's beat, an inline read, `rescore --stale`) brings back the same numbers.
    from django.apps import apps

    migration = importlib.import_module("annotations.migrations.0012_packed_scores")
    before = {
        "query": [row.per_cutoff() for row in QueryScore.objects.all()],
        "run": [row.per_cutoff() for row in RunScore.objects.all()],
    }
    migration.clear_scores(apps, None)
    assert not QueryScore.objects.exists() and not RunScore.objects.exists()
    assert Run.objects.get().scored_at is None
    assert scores.scores_sweep_stale(collection=worked_example) == 1
    assert [row.per_cutoff() for row in QueryScore.objects.all()] == before["query"]
    assert [row.per_cutoff() for row in RunScore.objects.all()] == before["run"]


@pytest.mark.django_db
def test_the_upgrade_to_12_bytes_keeps_every_sum_exact(worked_example) -> None:  # type: ignore[no-untyped-def]
    # Migration 0013 converts the 20-byte sums (five 32-bit limbs) in place: every mean and
    # exact sum reads back the same, and a sum 12 bytes cannot hold moves to the texts.
    from django.apps import apps

    migration = importlib.import_module("annotations.migrations.0013_sums_in_12_bytes")
    row = RunScore.objects.get()
    before = row.per_cutoff()
    ks = len(score_bytes.cutoffs_of(row.cutoffs))
    old = {}
    for m, name in enumerate(score_bytes.SUM_COLUMNS):
        sums = score_bytes.unpack_sums(getattr(row, name), ks)
        if m == 2:
            sums[0] = exact_arrays.sum_values(np.array([0.1 * 2.0**-21]))  # 12 bytes too few
        old[name] = sums.astype("<i4").tobytes()  # limbs 0..3 keep their low 32 bits
    RunScore.objects.filter(pk=row.pk).update(**old)
    migration.to_12_bytes(apps, None)
    converted = RunScore.objects.get()
    assert list(converted.overflow) == ["2:0"]
    after = converted.per_cutoff()
    first = min(after)
    assert exact.total_from_text(after[first].ndcg_sum) == exact.total_from_text(
        before[first].ndcg_sum
    )
    assert after[first].judged == 0.1 * 2.0**-21
    assert {k: v for k, v in after.items() if k != first} == {
        k: v for k, v in before.items() if k != first
    }
    assert (after[first].ndcg, after[first].ndcg_condensed) == (
        before[first].ndcg,
        before[first].ndcg_condensed,
    )
