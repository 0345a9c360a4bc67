"""Adjudication: it overrides the assessors' grades, keeps history and moves the scores."""

import math

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client

from annotations import scores, services
from annotations.models import (
    Adjudication,
    Collection,
    JudgementHistory,
    Pool,
    Query,
)
from tests.factories import CollectionFactory, DocumentFactory, UserFactory
from tests.stored import query_score, run_score


def user(name: str):  # type: ignore[no-untyped-def]
    return get_user_model().objects.get(username=name)


def ndcg(run: str, qid: str = "q1", k: int = 5) -> float:
    return query_score(run__name=run, query__qid=qid, k=k).ndcg


def judge(collection: Collection, docno: str, **grades: int) -> None:
    query = collection.queries.get(qid="q1")
    document = collection.documents.get(docno=docno)
    for name, grade in grades.items():
        services.judgement_record(
            query=query, document=document, assessor=user(name), grade=grade, source="form"
        )


@pytest.fixture
def disputed(trial: Collection, transactional_db: None) -> Collection:
    """q1/d1 graded 0 by alice and 3 by bob (lower median: 0); scores computed on commit."""
    judge(trial, "d1", alice=0, bob=3)
    return trial


def adjudicate(collection: Collection, grade: int, organiser: str = "olga", note: str = ""):  # type: ignore[no-untyped-def]
    return services.adjudication_record(
        query=collection.queries.get(qid="q1"),
        document=collection.documents.get(docno="d1"),
        organiser=user(organiser),
        grade=grade,
        note=note,
    )


def test_adjudication_overrides_the_aggregate_and_the_scores_follow(
    disputed: Collection,
) -> None:
    # d1 is the only judged document: effective grade 0, so no relevant document is known.
    assert ndcg("bm25") == 0.0
    version = Query.objects.get(qid="q1").judgements_version

    adjudicate(disputed, 3, note="bob is right")

    assert Adjudication.objects.get().grade == 3
    assert Query.objects.get(qid="q1").judgements_version == version + 1
    # bm25 ranks d1 first (nDCG 1); dense ranks it third: (3 / log2 4) / 3 = 0.5.
    assert ndcg("bm25") == 1.0
    assert ndcg("dense") == 0.5
    assert run_score(run__name="dense", k=5).ndcg == 0.5
    assert scores.scores_verify(collection=disputed) == []


def test_adjudication_history_records_the_effective_grade_it_replaced(
    disputed: Collection,
) -> None:
    adjudicate(disputed, 3, note="bob is right")
    adjudicate(disputed, 2, note="on reflection")
    rows = list(
        JudgementHistory.objects.filter(source="adjudication").values_list(
            "assessor__username", "changed_by__username", "old_grade", "new_grade", "note"
        )
    )
    assert rows == [
        ("olga", "olga", 0, 3, "bob is right"),
        ("olga", "olga", 3, 2, "on reflection"),
    ]
    # The assessors' own rows are untouched: two creations from the form.
    assert JudgementHistory.objects.filter(source="form").count() == 2
    assert Adjudication.objects.count() == 1


def test_recording_the_same_adjudication_twice_writes_nothing_more(disputed: Collection) -> None:
    adjudicate(disputed, 3)
    version = Query.objects.get(qid="q1").judgements_version
    adjudicate(disputed, 3)
    assert JudgementHistory.objects.filter(source="adjudication").count() == 1
    assert Query.objects.get(qid="q1").judgements_version == version


def test_only_organisers_and_staff_may_adjudicate(disputed: Collection) -> None:
    with pytest.raises(PermissionDenied):
        adjudicate(disputed, 3, organiser="alice")
    with pytest.raises(PermissionDenied):
        adjudicate(disputed, 3, organiser="eve")
    UserFactory(username="root", is_staff=True)
    adjudicate(disputed, 2, organiser="root")
    assert Adjudication.objects.get().organiser.username == "root"


def test_an_unjudged_pair_or_an_off_scale_grade_cannot_be_adjudicated(trial: Collection) -> None:
    with pytest.raises(ValidationError):
        adjudicate(trial, 3)
    judge(trial, "d1", alice=1)
    with pytest.raises(ValidationError):
        adjudicate(trial, 9)
    other = CollectionFactory(slug="other")
    with pytest.raises(ValidationError):
        services.adjudication_record(
            query=trial.queries.get(qid="q1"),
            document=DocumentFactory(collection=other),
            organiser=user("olga"),
            grade=2,
        )
    assert not Adjudication.objects.exists()


def test_organiser_flow_pool_overlap_agreement_adjudication_and_scores(
    trial: Collection, transactional_db: None
) -> None:
    """The "done when" of issue 4 through the pages (the browser test repeats it by keyboard)."""
    olga, alice, bob = Client(), Client(), Client()
    for client, name in ((olga, "olga"), (alice, "alice"), (bob, "bob")):
        client.force_login(user(name))
    olga.post("/collections/trial/pools/", {"name": "main", "depth": "1", "queries": "q1"})
    pool = Pool.objects.get(name="main")
    olga.post(
        f"/collections/trial/pools/{pool.id}/assign/",
        {"assessors": [user("alice").pk, user("bob").pk], "overlap": "2"},
    )
    # Depth 1 pools d1 (bm25) and d6 (dense); items are ordered by docno.
    grades = {"alice": {"d1": 3, "d6": 1}, "bob": {"d1": 1, "d6": 3}}
    for client, name in ((alice, "alice"), (bob, "bob")):
        assignment = pool.assignments.get(assessor__username=name)
        for item in assignment.items.select_related("entry__document"):
            client.post(
                f"/judging/assignments/{assignment.id}/pairs/{item.position}/",
                {"grade": grades[name][item.entry.document.docno]},
            )
    log3 = math.log2(3)
    # Lower median: both pairs 1. bm25: d1 at 1, d6 at 3; dense the other way round.
    before = (1 + 1 / 2) / (1 + 1 / log3)
    assert ndcg("bm25") == pytest.approx(before)
    assert ndcg("dense") == pytest.approx(before)

    page = olga.get("/collections/trial/agreement/").content.decode()
    assert "alice and bob" in page
    assert "2 common pairs" in page
    listed = olga.get("/collections/trial/disagreements/").content.decode()
    assert 'data-pair="q1/d1"' in listed
    q1, d1 = trial.queries.get(qid="q1"), trial.documents.get(docno="d1")
    olga.post(
        "/collections/trial/disagreements/",
        {"query": q1.id, "document": d1.id, "grade": "3", "note": "clearly on topic"},
    )

    ideal = 3 + 1 / log3
    assert ndcg("bm25") == pytest.approx((3 + 1 / 2) / ideal)
    assert ndcg("dense") == pytest.approx((1 + 3 / 2) / ideal)
    history = list(
        JudgementHistory.objects.filter(document=d1).values_list(
            "assessor__username", "old_grade", "new_grade", "source"
        )
    )
    assert history == [
        ("alice", None, 3, "form"),
        ("bob", None, 1, "form"),
        ("olga", 1, 3, "adjudication"),
    ]
    assert scores.scores_verify(collection=trial) == []
