"""The hybrid-judging benchmark's core on a tiny collection: judges, strategies, curves."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_hybrid
from hybrid_strategies import Curve, simulate
from hybrid_world import (
    Collection,
    FloatArray,
    Sizes,
    engine_means,
    fast_means,
    generate,
    judge_for,
    judge_noise,
    uncertainty_informative,
)

World = tuple[Collection, FloatArray]
TINY = Sizes(runs=6, queries=6, depth=15, candidates=60, k=5)


@pytest.fixture(scope="module")
def world() -> World:
    collection = generate(TINY, 3)
    return collection, engine_means(collection, collection.truth)


def test_a_perfect_judge_needs_no_people(world: World) -> None:
    collection, truth = world
    judge = judge_for(collection, judge_noise(collection, 3), 1.0)
    assert judge.kappa == 1.0
    assert (judge.grades[collection.valid()] == collection.truth[collection.valid()]).all()
    curve = simulate(collection, truth, "hybrid", judge)
    assert curve.needed("tau") == 0
    assert curve.needed("tau_ap") == 0
    assert curve.tau[0] == 1.0


def test_depth_pooling_reaches_tau_one_once_everything_is_judged(world: World) -> None:
    collection, truth = world
    curve = simulate(collection, truth, "depth", None)
    assert curve.counts[0] == 0
    assert curve.counts[-1] == collection.pairs
    assert curve.tau[-1] == 1.0
    assert curve.tau_ap[-1] == 1.0
    assert curve.checked >= 2  # leaderboards compared with the engine's on the way
    assert curve.needed("tau") is not None


def test_every_strategy_ends_with_the_truth(world: World) -> None:
    collection, truth = world
    judge = judge_for(collection, judge_noise(collection, 3), 0.5)
    for strategy, with_judge in (("impact", None), ("hybrid", judge)):
        curve = simulate(collection, truth, strategy, with_judge)
        assert curve.counts[-1] == collection.pairs
        assert curve.tau[-1] == 1.0


@pytest.mark.parametrize("target", [0.3, 0.5, 0.6])
def test_the_judge_meets_its_kappa(world: World, target: float) -> None:
    collection, _ = world
    judge = judge_for(collection, judge_noise(collection, 3), target)
    assert judge.kappa == pytest.approx(target, abs=0.02)
    assert judge.sigma > 0
    valid = collection.valid()
    assert np.allclose(judge.distribution[valid].sum(axis=1), 1.0)


def test_uncertainty_is_higher_where_the_judge_errs() -> None:
    collection = generate(Sizes(runs=8, queries=20, depth=30, candidates=120, k=10), 1)
    judge = judge_for(collection, judge_noise(collection, 1), 0.5)
    least, most = uncertainty_informative(collection, judge)
    assert least < most


def test_fast_leaderboard_equals_the_engine_on_a_partial_state(world: World) -> None:
    collection, _ = world
    rng = np.random.default_rng(0)
    grades = np.where(rng.random(collection.truth.shape) < 0.4, collection.truth, -1)
    assert np.abs(fast_means(collection, grades) - engine_means(collection, grades)).max() < 1e-12


def test_needed_is_the_count_from_which_tau_stays_at_the_level() -> None:
    curve = Curve(counts=[0, 10, 20, 30], tau=[0.5, 0.95, 0.8, 0.92], tau_ap=[0.9, 1, 1, 1])
    assert curve.needed("tau") == 30
    assert curve.needed("tau_ap") == 0
    assert Curve(counts=[0, 10], tau=[0.5, 0.8], tau_ap=[0, 0]).needed("tau") is None


def test_quick_run_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "hybrid.json"
    argv = ["--quick", "--runs", "6", "--queries", "5", "--depth", "12", "--json", str(out)]
    bench_hybrid.main(argv)
    payload = json.loads(out.read_text())
    assert payload["met"] in (True, False)
    assert [j["target"] for j in payload["seeds"][0]["judges"]] == [0.3, 0.5, 0.6]
    assert any("target (issue 26)" in line for line in payload["table"])
