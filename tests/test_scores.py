"""Stored scores follow every change and always equal a recomputation and trec_eval."""

import math
import random
from collections.abc import Callable
from pathlib import Path

import pytest
import pytrec_eval
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from annotations import scores, services
from annotations.models import (
    Collection,
    Document,
    IdealScore,
    Judgement,
    Query,
    QueryScore,
    Run,
    RunScore,
)
from annotations.scores import scheduling
from tests.factories import CollectionFactory, UserFactory
from tests.stored import (
    judge_at_random,
    ndcg_by_key,
    packed_query_fields,
    packed_query_rows,
    query_rows,
    query_score,
    rewrite_query_scores,
    run_rows,
    run_score,
)

WRITE = Callable[..., Path]


def stored_ndcg(collection: Collection) -> dict[tuple[str, str, int], float]:
    return ndcg_by_key(query__collection=collection)


def oracle(
    collection: Collection, *, judged_only: bool = False
) -> dict[tuple[str, str, int], float]:
    """trec_eval's ndcg_cut through pytrec_eval on the collection's effective qrels and runs."""
    from annotations import selectors

    qrels: dict[str, dict[str, int]] = {}
    for qid, docno, grade in selectors.qrels_rows(collection=collection):
        gain = grade if collection.gain == "linear" else (2**grade - 1 if grade > 0 else grade)
        qrels.setdefault(qid, {})[docno] = gain
    ks = collection.sorted_cutoffs
    measures = {f"ndcg_cut.{','.join(map(str, ks))}"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, judged_docs_only_flag=judged_only)
    out: dict[tuple[str, str, int], float] = {}
    for run in Run.objects.filter(collection=collection):
        ranking: dict[str, dict[str, float]] = {}
        for qid, docno, _, score, _ in selectors.run_rows(run=run):
            ranking.setdefault(qid, {})[docno] = score
        result = evaluator.evaluate(ranking)
        for qid in qrels:
            if qid not in ranking:
                continue
            for k in ks:
                out[(run.name, qid, k)] = result[qid][f"ndcg_cut_{k}"]
    return out


def test_worked_example_is_stored_exactly(worked_example: Collection) -> None:
    row = query_score(query__qid="q1", k=6)
    assert row.ndcg == pytest.approx(0.7850023719699, abs=1e-12)
    assert round(row.dcg, 3) == 6.861
    assert round(IdealScore.objects.get(k=6).idcg, 3) == 8.740
    assert row.judged == 1.0
    assert run_score(k=6).ndcg == row.ndcg
    assert stored_ndcg(worked_example) == oracle(worked_example)


def test_worked_example_with_exponential_gain(worked_example: Collection) -> None:
    services.collection_update(collection=worked_example, gain="exponential")
    row = query_score(query__qid="q1", k=6)
    assert row.ndcg == pytest.approx(0.7510833867922, abs=1e-12)
    assert round(row.dcg, 3) == 13.848
    assert round(IdealScore.objects.get(k=6).idcg, 3) == 18.438
    assert stored_ndcg(worked_example) == oracle(worked_example)


def _random_collection(write_file: WRITE, rng: random.Random, **options: object) -> Collection:
    collection = CollectionFactory(
        slug=f"rand-{rng.randrange(10**6)}", cutoffs=[1, 3, 5], **options
    )
    docs = [f"d{i}" for i in range(12)] + ["D1", "d1a", "d10x"]
    for tag in ("alpha", "beta", "gamma"):
        lines = []
        for q in range(4):
            if tag == "gamma" and q == 3:
                continue  # a run that misses a query
            picked = rng.sample(docs, rng.randint(2, 9))
            for rank, docno in enumerate(picked, start=1):
                score = rng.choice([1.0, 2.0, 2.0, 3.5])  # many ties
                lines.append(f"q{q} Q0 {docno} {rank} {score} {tag}")
        services.run_import(
            collection=collection, source=write_file(f"{tag}.txt", "\n".join(lines))
        )
    return collection


@pytest.mark.parametrize(
    ("seed", "options"),
    [
        (1, {}),
        (2, {"gain": "exponential"}),
        (3, {"missing_queries": "skip"}),
        (4, {"aggregation": "majority"}),
    ],
)
def test_random_judgement_changes_keep_stored_scores_exact(
    transactional_db: None, write_file: WRITE, seed: int, options: dict[str, object]
) -> None:
    """After every create, change or delete, stored scores equal a recompute and trec_eval."""
    rng = random.Random(seed)
    collection = _random_collection(write_file, rng, **options)
    assessors = [UserFactory(username=f"a{seed}-{i}") for i in range(2)]
    queries = list(Query.objects.filter(collection=collection))
    documents = list(Document.objects.filter(collection=collection))
    for step in range(40):
        judge_at_random(rng, queries, documents, assessors, delete_share=0.3)
        assert scores.scores_verify(collection=collection) == [], f"step {step}"
        if collection.aggregation == "median" and len(assessors) and step % 5 == 4:
            assert stored_ndcg(collection) == oracle(collection)


def test_import_then_rescore_verify_and_oracle_agree(
    transactional_db: None, write_file: WRITE
) -> None:
    rng = random.Random(7)
    collection = _random_collection(write_file, rng)
    lines = [f"q{q} 0 d{d} {rng.randint(0, 3)}" for q in range(4) for d in rng.sample(range(12), 6)]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(lines)),
        assessor=UserFactory(username="importer"),
    )
    assert scores.scores_verify(collection=collection) == []
    assert stored_ndcg(collection) == oracle(collection)
    condensed = {
        (run, qid, values.k): values.ndcg_condensed
        for run, qid, values in query_rows(query__collection=collection)
    }
    assert condensed == oracle(collection, judged_only=True)


def test_cutoffs_deeper_than_the_copied_head_read_whole_rankings(
    transactional_db: None, write_file: WRITE
) -> None:
    """Scoring reads the in-row head of each ranking for shallow cutoffs and the whole
    ranking for deep ones; both agree with trec_eval, ties and unjudged documents included."""
    rng = random.Random(11)
    collection = CollectionFactory(slug="deep", cutoffs=[5, 20, 100])
    docs = [f"d{i}" for i in range(400)]
    for tag in ("alpha", "beta"):
        lines = [
            f"q{q} Q0 {docno} {rank} {rng.choice([1.0, 2.0, 3.0])} {tag}"
            for q in range(3)
            for rank, docno in enumerate(rng.sample(docs, 300), start=1)
        ]
        services.run_import(
            collection=collection, source=write_file(f"{tag}.txt", "\n".join(lines))
        )
    qrels = [
        f"q{q} 0 d{d} {rng.randint(0, 3)}" for q in range(3) for d in rng.sample(range(400), 150)
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(qrels)),
        assessor=UserFactory(username="deep-importer"),
    )
    assert stored_ndcg(collection) == oracle(collection)
    services.collection_update(collection=collection, cutoffs=[5, 10, 20])
    assert stored_ndcg(collection) == oracle(collection)
    assert scores.scores_verify(collection=collection) == []


def test_run_replace_and_delete_update_scores(
    worked_example: Collection, write_file: WRITE
) -> None:
    better = "q1 Q0 d1 1 9 example\nq1 Q0 d3 2 8 example\nq1 Q0 d7 3 7 example\n"
    services.run_import(
        collection=worked_example, source=write_file("better.txt", better), replace=True
    )
    row = query_score(query__qid="q1", k=6)
    assert row.dcg == pytest.approx(3 + 3 / 1.5849625007211563 + 3 / 2, abs=1e-12)
    assert scores.scores_verify(collection=worked_example) == []
    services.run_delete(run=Run.objects.get(name="example"))
    assert not QueryScore.objects.exists() and not RunScore.objects.exists()


def test_a_rescore_rewrites_only_what_differs(
    worked_example: Collection, write_file: WRITE
) -> None:
    """Confirming the stored scores writes no per-query row; a changed row is updated in
    place (same primary key), not deleted and inserted again."""
    other = "q1 Q0 d8 1 3.0 other\nq1 Q0 d4 2 2.0 other\nq1 Q0 d2 3 1.0 other\n"
    services.run_import(collection=worked_example, source=write_file("other.txt", other))
    before = packed_query_rows()
    assert len(before) == 2  # one packed row per run
    wrong = QueryScore.objects.get(run__name="example").pk
    at_other_cutoffs = {k: query_score(run__name="example", k=k) for k in (5, 10)}
    # A stored value gone wrong: nDCG@6 of one row, its other cutoffs and measures kept.
    assert rewrite_query_scores(k=6, values={"ndcg": 0.5}, run__name="example") == 1
    assert query_score(run__name="example", k=6).ndcg == 0.5
    assert {k: query_score(run__name="example", k=k) for k in (5, 10)} == at_other_cutoffs
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, xmin::text FROM annotations_queryscore WHERE id <> %s", [wrong]
            )
            untouched = dict(cursor.fetchall())
        assert len(untouched) == 1
    call_command("rescore", worked_example.slug)
    assert packed_query_rows() == before  # same ids, same bits
    assert scores.scores_verify(collection=worked_example) == []
    if connection.vendor == "postgresql":  # the rows that were right were not rewritten
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, xmin::text FROM annotations_queryscore WHERE id <> %s", [wrong]
            )
            assert dict(cursor.fetchall()) == untouched


def test_a_rescore_drops_the_scores_of_a_query_no_longer_judged(
    worked_example: Collection,
) -> None:
    """A query without judgements keeps no scores: verify names the stray rows and a
    rescore, which works one query at a time, deletes them and leaves the rest as it was."""
    before = packed_query_rows()
    means = sorted(run_rows())
    unjudged = Query.objects.create(collection=worked_example, qid="q-unjudged")
    run = Run.objects.get(name="example")
    QueryScore.objects.create(
        run=run,
        query=unjudged,
        **packed_query_fields([5, 6, 10], ndcg=0.5, dcg=1.0, judged=0.5, ndcg_condensed=0.5),
    )
    IdealScore.objects.create(query=unjudged, k=6, idcg=2.0)
    differences = scores.scores_verify(collection=worked_example)
    assert any("query=q-unjudged k=6: stored" in line for line in differences)
    assert any(line.startswith("idcg query=q-unjudged k=6") for line in differences)
    scores.scores_rescore_collection(collection_id=worked_example.id)
    assert not QueryScore.objects.filter(query=unjudged).exists()
    assert not IdealScore.objects.filter(query=unjudged).exists()
    assert packed_query_rows() == before
    assert sorted(run_rows()) == means
    assert scores.scores_verify(collection=worked_example) == []
    assert stored_ndcg(worked_example) == oracle(worked_example)


def test_collection_cutoff_change_rescores_everything(worked_example: Collection) -> None:
    services.collection_update(collection=worked_example, cutoffs=[2, 6])
    assert sorted(means.k for _, means in run_rows()) == [2, 6]
    assert set(QueryScore.objects.values_list("cutoffs", flat=True)) == {"2,6"}
    assert scores.scores_verify(collection=worked_example) == []


def test_a_lost_recomputation_stays_pending_and_rescore_stale_heals_it(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduling, "_publish", lambda *args, **options: None)  # the task is lost
    judgement = Judgement.objects.get(query__qid="q1", document__docno="d1")
    services.judgement_record(
        query=judgement.query,
        document=judgement.document,
        assessor=judgement.assessor,
        grade=0,
        source="api",
    )
    query = Query.objects.get(qid="q1")
    assert query.scores_pending
    with pytest.raises(CommandError, match="differ"):
        call_command("rescore", "demo", "--verify")
    monkeypatch.undo()
    call_command("rescore", "demo", "--stale")
    query.refresh_from_db()
    assert not query.scores_pending
    call_command("rescore", "demo", "--verify")
    assert stored_ndcg(worked_example) == oracle(worked_example)


def test_an_older_recomputation_never_marks_a_newer_change_scored(
    worked_example: Collection,
) -> None:
    query = Query.objects.get(qid="q1")
    Query.objects.filter(id=query.id).update(judgements_version=query.judgements_version + 5)
    assert scores.scores_recompute_query(query_id=query.id)
    query.refresh_from_db()
    assert query.scored_version == query.judgements_version
    assert not scores.scores_recompute_query(query_id=query.id)  # nothing stale: coalesced


def test_judgement_saved_with_the_orm_still_rescores(worked_example: Collection) -> None:
    judgement = Judgement.objects.get(query__qid="q1", document__docno="d1")
    judgement.grade = 0
    judgement.save()
    assert query_score(query__qid="q1", k=6).ndcg == oracle(worked_example)[("example", "q1", 6)]


def test_periodic_sweep_task_heals_pending_queries(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from annotations import tasks
    from ndcg_platform.settings import CELERY_BEAT_SCHEDULE

    assert CELERY_BEAT_SCHEDULE["scores-sweep-stale"]["task"] == tasks.scores_sweep_stale.name
    # the recomputation is lost
    monkeypatch.setattr(scheduling, "_publish", lambda *args, **options: None)
    judgement = Judgement.objects.get(query__qid="q1", document__docno="d2")
    services.judgement_record(
        query=judgement.query,
        document=judgement.document,
        assessor=judgement.assessor,
        grade=3,
        source="api",
    )
    assert Query.objects.get(qid="q1").scores_pending
    assert tasks.scores_sweep_stale() == 1
    assert not Query.objects.get(qid="q1").scores_pending
    assert stored_ndcg(worked_example) == oracle(worked_example)


def test_rankings_whose_prefix_holds_too_few_judged_documents_are_read_whole(
    transactional_db: None, write_file: WRITE
) -> None:
    """At cutoffs up to 5 scoring reads the first 20 ids of each ranking; with judgements
    this sparse the condensed list needs documents far below them, and nDCG' still equals
    trec_eval -J's."""
    rng = random.Random(13)
    collection = CollectionFactory(slug="sparse", cutoffs=[1, 5])
    docs = [f"d{i}" for i in range(400)]
    for tag in ("alpha", "beta", "gamma"):
        lines = [
            f"q{q} Q0 {docno} {rank} {300 - rank} {tag}"
            for q in range(2)
            for rank, docno in enumerate(rng.sample(docs, 300), start=1)
        ]
        services.run_import(
            collection=collection, source=write_file(f"{tag}.txt", "\n".join(lines))
        )
    qrels = [
        f"q{q} 0 d{d} {rng.randint(1, 3)}" for q in range(2) for d in rng.sample(range(400), 12)
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(qrels)),
        assessor=UserFactory(username="sparse-importer"),
    )
    assert scores.scores_verify(collection=collection) == []
    condensed = {
        (run, qid, values.k): values.ndcg_condensed
        for run, qid, values in query_rows(query__collection=collection)
    }
    assert condensed == oracle(collection, judged_only=True)
    assert any(value > 0 for value in condensed.values())


def test_verify_lists_a_mean_read_otherwise_than_trec_eval_sums_it_and_a_run_without_means(
    worked_example: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from annotations.selectors import stored_scores

    assert scores.scores_verify(collection=worked_example) == []
    read = stored_scores.run_means_at

    def one_ulp_off(collection: Collection, k: int, **kwargs: object) -> list[object]:
        return [
            replace(mean, ndcg=math.nextafter(mean.ndcg, 2.0))
            for mean in read(collection, k, **kwargs)  # type: ignore[arg-type]
        ]

    monkeypatch.setattr(stored_scores, "run_means_at", one_ulp_off)
    differences = scores.scores_verify(collection=worked_example)
    ks = worked_example.sorted_cutoffs
    assert len(differences) == len(ks)
    assert all("means (queries, ndcg, ndcg', judged): as read" in line for line in differences)
    monkeypatch.setattr(stored_scores, "run_means_at", read)
    RunScore.objects.update(cutoffs="1,2")  # the run's means are in another layout
    assert scores.scores_verify(collection=worked_example) == [
        f"run=example k={k}: no means (not scored in the current cutoffs)" for k in ks
    ]
