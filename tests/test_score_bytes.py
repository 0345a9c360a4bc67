"""Packed per-query scores: layouts, round trips, and the upgrade that rebuilds them."""

import importlib

import numpy as np
import pytest

from annotations import scores
from annotations.formats import score_bytes
from annotations.models import QueryScore, Run, RunScore
from tests.stored import run_rows


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


@pytest.mark.django_db
def test_the_upgrade_clears_scores_and_the_sweep_rebuilds_them(worked_example) -> None:  # type: ignore[no-untyped-def]
    # Migration 0012 drops the stored scores and marks every run unscored; the sweep (the
    # worker's beat, an inline read, `rescore --stale`) brings back the same numbers.
    from django.apps import apps

    migration = importlib.import_module("annotations.migrations.0012_packed_scores")
    before = {
        "query": [row.per_cutoff() for row in QueryScore.objects.all()],
        "run": run_rows(),
    }
    migration.clear_scores(apps, None)
    assert not QueryScore.objects.exists() and not RunScore.objects.exists()
    assert Run.objects.get().scored_at is None
    assert scores.scores_sweep_stale(collection=worked_example) == 1
    assert [row.per_cutoff() for row in QueryScore.objects.all()] == before["query"]
    assert run_rows() == before["run"]
