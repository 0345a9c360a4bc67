"""Run means are trec_eval's `all` values bit for bit: its per-query doubles summed one by one
in qid order (0 for a judged query a run did not answer), divided by their count."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytrec_eval
from django.core.management import call_command

from annotations import scores, selectors, services
from annotations.metrics.ndcg import ordered_mean, trec_order
from annotations.models import Collection
from annotations.selectors.leaderboards import leaderboard_compute
from annotations.selectors.stored_scores import run_means_at
from tests.factories import CollectionFactory, UserFactory

WRITE = Callable[..., Path]
KS = (5, 10)


def _campaign(write_file: WRITE, *, missing: str = "zero") -> Collection:
    """40 queries (q1..q40: bytewise q10 < q2), random grades, four runs, each leaving some
    judged queries unanswered."""
    rng = random.Random(20261201)
    collection = CollectionFactory(slug="means", cutoffs=list(KS), missing_queries=missing)
    qrels = [
        f"q{q} 0 d{d} {rng.randint(0, 3)}" for q in range(1, 41) for d in rng.sample(range(60), 14)
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("q.qrels", "\n".join(qrels)),
        assessor=UserFactory(username="nist"),
    )
    for name in ("alpha", "beta", "gamma", "delta"):
        answered = [q for q in range(1, 41) if rng.random() > 0.15]
        results = {}
        for q in answered:
            ranking = rng.sample(range(60), 20)
            results[f"q{q}"] = [(f"d{d}", None, rank + 1) for rank, d in enumerate(ranking)]
        services.run_store(collection=collection, run_name=name, results=results)
    assert scores.scores_verify(collection=collection) == []
    return collection


def _trec_eval_all(collection: Collection) -> dict[tuple[str, int], float]:
    """What trec_eval -c prints on its `all` line for each run and k: pytrec_eval's
    per-query values, added in trec_eval's query order, over the judged queries."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, docno, grade in selectors.qrels_rows(collection=collection):
        qrels.setdefault(qid, {})[docno] = grade
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{','.join(map(str, KS))}"})
    means: dict[tuple[str, int], float] = {}
    for run in collection.runs.all():
        ranking: dict[str, dict[str, float]] = {}
        for qid, docno, _, score, _ in selectors.run_rows(run=run):
            ranking.setdefault(qid, {})[docno] = score
        result = evaluator.evaluate(ranking)
        for k in KS:
            counted = [
                q for q in trec_order(qrels) if collection.missing_queries == "zero" or q in result
            ]
            values = [result.get(q, {}).get(f"ndcg_cut_{k}", 0.0) for q in counted]
            total = 0.0
            for value in values:
                total += value
            means[(run.name, k)] = total / len(values)
    return means


def test_the_leaderboard_run_page_and_evaluate_print_trec_evals_all_values(
    transactional_db: None, write_file: WRITE
) -> None:
    collection = _campaign(write_file)
    expected = _trec_eval_all(collection)
    means = {(m.run.name, k): m.ndcg for k in KS for m in run_means_at(collection, k)}
    assert means == expected  # == on doubles: every bit
    for k in KS:
        board = leaderboard_compute(collection=collection, k=k)
        assert {(row.run.name, k): row.ndcg for row in board.rows} == {
            key: value for key, value in expected.items() if key[1] == k
        }
    run = collection.runs.get(name="beta")
    page = selectors.stored_scores.run_scores(run=run, k=10)
    assert page.ndcg == expected[("beta", 10)]
    out = StringIO()
    call_command("evaluate", "means", "--format", "json", stdout=out)
    printed = {
        (name, int(k)): value["ndcg"]
        for name, run_json in json.loads(out.getvalue())["runs"].items()
        for k, value in run_json["all"].items()
    }
    assert printed == expected
    # The test tells the ways apart: the correctly rounded sum of the same values, divided
    # by their count, differs from trec_eval's in the last bits for some run and k.
    per_query = {
        (run, k): [v.ndcg for v in selectors.stored_scores.run_scores(run=r, k=k).per_query]
        for r in collection.runs.all()
        for run in [r.name]
        for k in KS
    }
    assert any(
        math.fsum(values) / len(values) != expected[key] for key, values in per_query.items()
    )
    assert all(ordered_mean(values) == expected[key] for key, values in per_query.items())


def test_with_missing_queries_skipped_the_mean_is_over_the_answered_ones(
    transactional_db: None, write_file: WRITE
) -> None:
    collection = _campaign(write_file, missing="skip")
    expected = _trec_eval_all(collection)
    assert {(m.run.name, k): m.ndcg for k in KS for m in run_means_at(collection, k)} == expected


def test_every_per_query_output_lists_every_counted_query_and_averages_to_the_mean(
    transactional_db: None, write_file: WRITE
) -> None:
    """JSON and CSV exports (as `evaluate` and the export page write them): a judged query a
    run did not answer is a 0 row with answered false, so each run's rows at each k,
    summed in their order, give the stated mean exactly."""
    import csv

    from annotations.selectors import exports

    collection = _campaign(write_file)
    runs = list(collection.runs.order_by("name"))
    document = json.loads(exports.scores_json(collection=collection, runs=runs, ks=list(KS)))
    qids = document["evaluated_queries"]
    assert qids == trec_order(qids) and len(qids) == 40
    unanswered = 0
    for run_json in document["runs"].values():
        assert list(run_json["queries"]) == qids  # every judged query, in trec_eval's order
        for k in KS:
            rows = [run_json["queries"][qid][str(k)] for qid in qids]
            unanswered += sum(not row["answered"] for row in rows)
            assert ordered_mean(row["ndcg"] for row in rows) == run_json["all"][str(k)]["ndcg"]
    assert unanswered > 0  # the campaign leaves some judged queries unanswered
    lines = "".join(exports.scores_csv(collection=collection, runs=runs, ks=list(KS)))
    table = list(csv.DictReader(lines.splitlines()))
    for run in runs:
        for k in KS:
            rows = [r for r in table if r["run"] == run.name and r["k"] == str(k)]
            per_query = [float(r["ndcg"]) for r in rows if r["qid"] != "all"]
            (mean,) = [float(r["ndcg"]) for r in rows if r["qid"] == "all"]
            assert len(per_query) == 40 and ordered_mean(per_query) == mean
