"""With a broker, judgements queue one recomputation per collection, not per query: the
task recomputes every query the collection has stale, so under a stream of judgements one
task (and one pass of the worker's overhead) takes all that came while it was queued."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches

from annotations import publishing, scores, services, tasks
from annotations.models import Collection, Document, Query
from tests.test_scores import oracle, stored_ndcg


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[tuple[str, int]]:
    """Recomputations published (not run): (task, id)."""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # never reached: recorded
    settings.NDCG_COORDINATION_SHARED = True  # the marks in use, as with Redis
    caches["coordination"].clear()
    calls: list[tuple[str, int]] = []
    every = (
        publishing.RECOMPUTE_STALE_QUERIES,
        publishing.RECOMPUTE_QUERY,
        publishing.RECOMPUTE_RUN,  # the fixtures' runs, scheduled before
        publishing.RESCORE_COLLECTION,
    )
    for task in every:
        monkeypatch.setattr(
            task, "apply_async", lambda args, name=task.name, **_: calls.append((name, args[0]))
        )
    monkeypatch.setattr(
        publishing.REFRESH_LEADERBOARDS, "apply_async", lambda args, **options: None
    )
    return calls


def _grade(collection: Collection, qid: str, docno: str, grade: int, who: str = "alice") -> None:
    services.judgement_record(
        query=Query.objects.get(collection=collection, qid=qid),
        document=Document.objects.get(collection=collection, docno=docno),
        assessor=User.objects.get(username=who),
        grade=grade,
        source="api",
    )


def test_judgements_of_several_queries_queue_one_task_for_their_collection(
    trial: Collection,
    published: list[tuple[str, int]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    queries = list(trial.queries.order_by("qid").values_list("qid", flat=True))
    assert len(queries) >= 2
    for grade, qid in enumerate(queries):
        with django_capture_on_commit_callbacks(execute=True):
            _grade(trial, qid, "d1", grade % 4)
    # (another test's changes left pending in this thread may be published beside them)
    queries_published = [call for call in published if "quer" in call[0] and call[1] == trial.id]
    assert queries_published == [(publishing.RECOMPUTE_STALE_QUERIES.name, trial.id)]
    # The task started (it clears the mark first): the next judgement queues again.
    scores.coalesce_release(scores.stale_queries_key(trial.id))
    with django_capture_on_commit_callbacks(execute=True):
        _grade(trial, queries[0], "d2", 3)
    mine = [call for call in published if "quer" in call[0] and call[1] == trial.id]
    assert mine == 2 * queries_published


def test_the_task_recomputes_every_stale_query_of_its_collection_and_no_other(
    worked_example: Collection,
    trial: Collection,
    published: list[tuple[str, int]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    for qid in trial.queries.values_list("qid", flat=True):
        with django_capture_on_commit_callbacks(execute=True):
            _grade(trial, qid, "d3", 2)
    query = Query.objects.get(collection=worked_example, qid="q1")
    Query.objects.filter(id=query.id).update(judgements_version=query.judgements_version + 1)
    stale = Query.objects.filter(collection=trial)
    assert all(q.scores_pending for q in stale)
    assert tasks.recompute_stale_queries.run(trial.id) == stale.count()
    assert not any(q.scores_pending for q in Query.objects.filter(collection=trial))
    assert stored_ndcg(trial) == oracle(trial)  # every bit, as inline
    query.refresh_from_db()
    assert query.scores_pending  # another collection's: its own task
    assert tasks.recompute_stale_queries.run(trial.id) == 0  # nothing left: nothing done


def test_a_query_that_fails_stays_pending_and_the_others_are_recomputed(
    trial: Collection,
    published: list[tuple[str, int]],
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from annotations.scores import scheduling

    qids = sorted(trial.queries.values_list("qid", flat=True))
    for qid in qids:
        with django_capture_on_commit_callbacks(execute=True):
            _grade(trial, qid, "d4", 1)
    failing = Query.objects.get(collection=trial, qid=qids[0]).id
    real = scheduling.scores_recompute_query

    def recompute(*, query_id: int, force: bool = False) -> bool:
        if query_id == failing:
            raise RuntimeError("a recomputation that fails")
        return real(query_id=query_id, force=force)

    monkeypatch.setattr(scheduling, "scores_recompute_query", recompute)
    assert scores.scores_recompute_stale_queries(collection_id=trial.id) == len(qids) - 1
    pending = {q.qid: q.scores_pending for q in Query.objects.filter(collection=trial)}
    assert pending == {qid: qid == qids[0] for qid in qids}
