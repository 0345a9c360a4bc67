"""Search systems end to end: described, tried and fetched from a real engine (tantivy behind
a local HTTP server answering as Elasticsearch and Solr), the run stored and scored."""

from __future__ import annotations

from typing import Any

import pytest
import pytrec_eval
from django.core.exceptions import ValidationError

from annotations import publishing, services
from annotations.models import (
    Collection,
    Document,
    FetchFailure,
    ImportJob,
    Run,
    SearchSystem,
)
from annotations.selectors.qrels import run_rows
from annotations.selectors.stored_scores import stored_ndcg
from annotations.selectors.system_history import system_history
from annotations.services import job_recovery, system_fetch
from annotations.services.imports import QueryFields, documents_ensure, queries_store
from annotations.services.system_fetch import system_fetch_cancel, system_fetch_start
from annotations.services.system_schedule import system_fetches_sweep
from annotations.services.systems import system_create, system_try, system_update
from tests.factories import CollectionFactory, UserFactory, record_grades
from tests.search_engine import Engine, Served, search_engine

QUERIES = {
    "q1": ("cats", "small felines"),
    "q2": ("dogs", "dogs at home"),
    "q3": ("broken", "the engine fails on this one"),
    "q4": ("zebra", "nothing matches"),
    "q5": ("tea", "green or black"),
}
ES_BODY = '{"size": "{{depth}}", "query": {"multi_match": {"query": "{{title}}"}}}'


@pytest.fixture
def engine() -> Engine:
    return Engine()


@pytest.fixture
def trial(transactional_db: None) -> Collection:
    collection = CollectionFactory(slug="trial")
    queries_store(
        collection=collection,
        queries=[
            QueryFields(qid, title, description) for qid, (title, description) in QUERIES.items()
        ],
    )
    return collection


def _elasticsearch(collection: Collection, url: str, **fields: Any) -> SearchSystem:
    values: dict[str, Any] = {
        "method": "POST", "url_template": f"{url}/docs/_search", "body_template": ES_BODY,
        "depth": 4, "answer_format": "elasticsearch", "snippet_path": "_source.text",
        "url_path": "_source.url", "headers": [
            {"name": "Authorization", "value": "ApiKey ", "secret": "NDCG_SEARCH_KEY_TEST"}
        ], **fields,
    }  # fmt: skip
    return system_create(collection=collection, name="bm25", created_by=None, **values)


def test_a_fetch_stores_the_engines_ranking_documents_failures_and_scores(
    trial: Collection, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NDCG_SEARCH_KEY_TEST", "s3cret")
    organiser = UserFactory(username="olga")
    # Documents known by id only (from a qrels file): a fetch gives them their texts.
    documents_ensure(collection=trial, docnos=["d1", "d2", "d3"])
    record_grades(trial, organiser, {("q1", "d1"): 3, ("q1", "d3"): 1, ("q2", "d2"): 2})
    monkeypatch.setattr(system_fetch, "DOCUMENTS_PER_WRITE", 2)  # written in several goes
    served = Served(
        engine,
        faults={"dogs": [(429, {"Retry-After": "0"}), (503, {"Retry-After": "0"})]},
        always={"broken": (500, {})},
    )
    with search_engine(served):
        system = _elasticsearch(trial, served.url, attempts=3)
        job = system_fetch_start(system=system, label="bm25-title", created_by=organiser)
        job.refresh_from_db()
    assert job.state == ImportJob.DONE, job.error
    assert (job.kind, job.lines_done, job.lines_total) == ("fetch", 5, 5)
    # Every request carried the secret and the query's text escaped into the JSON body.
    assert {r["headers"]["Authorization"] for r in served.requests} == {"ApiKey s3cret"}
    assert {r["body"]["size"] for r in served.requests} == {4}
    assert sum(r["text"] == "dogs" for r in served.requests) == 3  # 429, 503, then the answer
    assert sum(r["text"] == "broken" for r in served.requests) == 3  # every attempt
    run = Run.objects.get(collection=trial, name="bm25-title")
    stored: dict[str, list[tuple[str, float]]] = {}
    for qid, docno, _rank, score, _tag in run_rows(run=run):
        stored.setdefault(qid, []).append((docno, score))
    expected = {
        qid: [(docno, score) for docno, score, _ in engine.search(title, 4)]
        for qid, (title, _) in QUERIES.items()
        if engine.search(title, 4) and qid != "q3"
    }
    assert stored == expected  # the engine's own ranking, scores bit for bit
    assert "q4" not in stored  # nothing found: no ranking, not a failure
    (failure,) = FetchFailure.objects.filter(job=job)
    assert (failure.qid, failure.status) == ("q3", 500)
    assert "HTTP 500" in failure.message and "after 3 attempts" in failure.message
    assert "1 queries failed (listed) and are missing from the run" in job.summary
    assert "1 of 5 queries got no answer" in run.description
    cats = Document.objects.get(collection=trial, docno="d1")
    assert (cats.title, cats.url) == ("Cats", "https://example.org/cats")
    assert cats.text.startswith("Cats are small")
    # Scored at once (eager tasks), as trec_eval scores the engine's ranking.
    qrels = {"q1": {"d1": 3, "d3": 1}, "q2": {"d2": 2}}
    ranking = {qid: dict(rows) for qid, rows in expected.items() if qid in qrels}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5"}).evaluate(ranking)
    values = stored_ndcg(trial, [run.id], 5)[run.id]
    by_qid = dict(trial.queries.values_list("id", "qid"))
    got = {
        by_qid[query_id]: value for query_id, value in values.items() if by_qid[query_id] in qrels
    }
    assert got == {qid: oracle[qid]["ndcg_cut_5"] for qid in qrels}


def test_a_solr_system_asked_by_get_with_the_query_in_the_url(
    trial: Collection, engine: Engine
) -> None:
    with search_engine(Served(engine)) as served:
        system = system_create(
            collection=trial, name="solr", created_by=None, method="GET",
            url_template=f"{served.url}/solr/docs/select?q={{{{title}}}}&rows={{{{depth}}}}&wt=json",
            answer_format="solr", depth=3,
        )  # fmt: skip
        job = system_fetch_start(system=system, created_by=None)
        job.refresh_from_db()
    assert job.state == ImportJob.DONE, job.error
    assert job.run_name.startswith("solr-")
    run = Run.objects.get(collection=trial, name=job.run_name)
    rows = [(qid, docno) for qid, docno, *_ in run_rows(run=run)]
    assert [docno for qid, docno in rows if qid == "q1"] == [
        docno for docno, _, _ in engine.search("cats", 3)
    ]
    assert all(r["path"].startswith("/solr/docs/select?q=") for r in served.requests)
    # Solr's multi-valued title becomes the document's title.
    assert Document.objects.get(collection=trial, docno="doc/6").title == "Cat food"


def test_a_try_shows_what_would_be_stored_and_stores_nothing(
    trial: Collection, engine: Engine
) -> None:
    served = Served(engine, always={"cats": (503, {})})
    with search_engine(served):
        system = _elasticsearch(trial, served.url, headers=[])
        tried = system_try(system=system)
    assert [item.qid for item in tried] == ["q1", "q2", "q3"]
    assert tried[0].hits == [] and tried[0].status == 503
    assert "HTTP 503" in tried[0].failure and "after 1 attempts" in tried[0].failure
    assert [hit.docno for hit in tried[1].hits] == [d for d, _, _ in engine.search("dogs", 4)]
    assert tried[1].hits[0].snippet.startswith("Dogs and cats")
    assert not Run.objects.exists() and not Document.objects.exists()


def test_an_answer_that_cannot_be_read_names_the_path(trial: Collection, engine: Engine) -> None:
    with search_engine(Served(engine)) as served:
        system = _elasticsearch(trial, served.url, headers=[], id_path="_source.missing")
        tried = system_try(system=system)
    assert tried[0].failure == (
        "the answer could not be read at hits.hits[0]._source.missing: "
        "the document id is null, not a string"
    )
    assert tried[0].status == 200


def test_a_fetch_whose_engine_keeps_failing_stops_and_stores_nothing(
    trial: Collection, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(system_fetch, "FAILURES_IN_A_ROW", 2)
    served = Served(engine, always={title: (400, {}) for title, _ in QUERIES.values()})
    with search_engine(served):
        system = _elasticsearch(trial, served.url, headers=[], concurrency=1)
        job = system_fetch_start(system=system, created_by=None)
        job.refresh_from_db()
    assert job.state == ImportJob.FAILED
    assert "no answer for 2 queries in a row" in job.error and "no run was stored" in job.error
    assert "HTTP 400" in job.error
    assert not Run.objects.exists()
    assert FetchFailure.objects.filter(job=job).count() >= 2
    assert job.retryable


def test_a_queued_fetch_cancelled_stores_nothing_and_retry_fetches_again(
    trial: Collection, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    with search_engine(Served(engine)) as served:
        system = _elasticsearch(trial, served.url, headers=[])
        with monkeypatch.context() as lost:  # the task not delivered yet
            lost.setattr(publishing.SYSTEM_FETCH, "apply_async", lambda *args, **kw: None)
            job = system_fetch_start(system=system, label="later", created_by=None)
        system_fetch_cancel(job=job)
        job.refresh_from_db()
        assert (job.state, job.error) == (
            ImportJob.FAILED, "Cancelled after 0 of 5 queries; no run was stored."
        )  # fmt: skip
        assert not served.requests and not Run.objects.exists()
        job = job_recovery.import_job_retry(job=job, by=None)
    assert job.state == ImportJob.DONE, job.error
    assert Run.objects.filter(collection=trial, name="later").exists()


def test_a_running_fetch_cancelled_asks_no_more_and_keeps_the_documents_written(
    trial: Collection, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancel is pressed once the first answer's documents are written: the queries handed
    to the threads but not started are dropped, no run is stored, and the documents stay."""
    write = system_fetch._documents_write

    def written_then_cancelled(collection: Collection, asked: Any) -> None:
        write(collection, asked)
        ImportJob.objects.filter(kind=ImportJob.FETCH).update(cancel_requested=True)

    monkeypatch.setattr(system_fetch, "_documents_write", written_then_cancelled)
    monkeypatch.setattr(system_fetch, "DOCUMENTS_PER_WRITE", 1)
    monkeypatch.setattr(system_fetch, "PROGRESS_SECONDS", 0.0)
    with search_engine(Served(engine)) as served:
        system = _elasticsearch(trial, served.url, headers=[], concurrency=1)
        job = system_fetch_start(system=system, created_by=None)
        job.refresh_from_db()
    assert job.state == ImportJob.FAILED
    assert job.error.startswith("Cancelled after ") and job.error.endswith("no run was stored.")
    assert len(served.requests) < len(QUERIES)
    assert not Run.objects.exists()
    cats = [docno for docno, _, _ in engine.search("cats", 4)]
    assert set(cats) <= set(Document.objects.values_list("docno", flat=True))


def test_a_run_name_taken_or_no_secret_is_refused_before_queueing(
    trial: Collection, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NDCG_SEARCH_KEY_TEST", raising=False)
    services.run_store(collection=trial, run_name="taken", results={"q1": [("d1", 1.0, 1)]})
    system = _elasticsearch(trial, "http://127.0.0.1:9")
    with pytest.raises(ValidationError, match="NDCG_SEARCH_KEY_TEST is not set"):
        system_fetch_start(system=system, label="x", created_by=None)
    system_update(system=system, headers=[])
    with pytest.raises(ValidationError, match="A run named taken exists"):
        system_fetch_start(system=system, label="taken", created_by=None)
    assert not ImportJob.objects.exists()


def test_a_system_is_checked_when_described(trial: Collection, settings: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        system_create(
            collection=trial, name="bad", created_by=None, method="POST",
            url_template="http://{{title}}.example.org/", body_template="{nope",
            answer_format="jmespath", hits_path="data[",
            headers=[{"name": "X-Key", "value": "", "secret": "DATABASE_URL"}],
        )  # fmt: skip
    problems = caught.value.message_dict
    assert "not in the host" in problems["url_template"][0]
    assert "Not JSON" in problems["body_template"][0]
    assert "NDCG_SEARCH_KEY_" in problems["headers"][0]
    assert set(problems) >= {"hits_path", "id_path"}
    settings.NDCG_SEARCH_ALLOW_PRIVATE = False
    with pytest.raises(ValidationError, match="NDCG_SEARCH_ALLOW_PRIVATE=true"):
        system_create(
            collection=trial, name="local", created_by=None,
            url_template="http://127.0.0.1:9200/docs/_search?q={{title}}",
        )  # fmt: skip


def test_a_scheduled_fetch_stores_a_run_in_the_systems_history(
    trial: Collection, engine: Engine
) -> None:
    with search_engine(Served(engine)) as served:
        system = _elasticsearch(trial, served.url, headers=[], fetch_every_hours=24)
        (job,) = system_fetches_sweep()
        job.refresh_from_db()
        assert system_fetches_sweep() == []  # the next one is due in 24 hours
    assert job.state == ImportJob.DONE, job.error
    run = Run.objects.get(collection=trial, name=job.run_name)
    assert run.system_id == system.id and run.scored_at is not None
    assert [point.run for point in system_history(system=system, k=5).points] == [run]
