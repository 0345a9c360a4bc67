"""Tests for the data model: constraints the database enforces, validation, the history signal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from annotations.formats import ranking_bytes
from annotations.models import (
    Adjudication,
    Collection,
    Document,
    GradeLevel,
    IdealScore,
    Judgement,
    JudgementHistory,
    Membership,
    Query,
    QueryScore,
    Ranking,
    Run,
    RunScore,
)
from tests.factories import (
    CollectionFactory,
    DocumentFactory,
    QueryFactory,
    RunFactory,
    UserFactory,
)
from tests.stored import packed_query_fields, packed_run_fields

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """Factories hash a password per user; the production hasher costs ~0.3 s each."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@contextmanager
def refused_by_database() -> Iterator[None]:
    """Expect an IntegrityError; the savepoint keeps the test's transaction usable after it."""
    with pytest.raises(IntegrityError), transaction.atomic():
        yield


@pytest.fixture
def pair(db: None) -> tuple[Query, Document]:
    collection = CollectionFactory()
    return QueryFactory(collection=collection), DocumentFactory(collection=collection)


def judge(query: Query, document: Document, assessor: Any, grade: int) -> Judgement:
    return Judgement.objects.create(query=query, document=document, assessor=assessor, grade=grade)


def ranking(run: Run, query: Query, documents: list[Document]) -> Ranking:
    return Ranking.objects.create(
        run=run,
        query=query,
        size=len(documents),
        documents=ranking_bytes.pack_ids([document.pk for document in documents]),
        scores=ranking_bytes.pack_scores([float(-i) for i in range(len(documents))]),
        ranks=ranking_bytes.pack_ranks(list(range(1, len(documents) + 1))),
    )


def test_a_ranking_keeps_a_copy_of_its_top_ids_in_the_row(pair: tuple[Query, Document]) -> None:
    """`head` is computed by the database from `documents`, by any writer, and stays equal."""
    from annotations.models import HEAD_IDS

    query, _ = pair
    ids = list(range(1, HEAD_IDS + 40))
    run = RunFactory(collection=query.collection)
    Ranking.objects.create(
        run=run,
        query=query,
        size=len(ids),
        documents=ranking_bytes.pack_ids(ids),
        scores=b"",
        ranks=ranking_bytes.pack_ranks(list(range(1, len(ids) + 1))),
    )
    stored = Ranking.objects.get(run=run)
    assert ranking_bytes.unpack_ids(stored.head) == ids[:HEAD_IDS]
    Ranking.objects.filter(pk=stored.pk).update(documents=ranking_bytes.pack_ids([7, 8]), size=2)
    assert ranking_bytes.unpack_ids(Ranking.objects.get(pk=stored.pk).head) == [7, 8]


# Uniqueness ------------------------------------------------------------------------------


def test_a_qid_is_unique_within_a_collection_but_not_across_collections() -> None:
    first, second = CollectionFactory(), CollectionFactory()
    QueryFactory(collection=first, qid="301")
    with refused_by_database():
        Query.objects.create(collection=first, qid="301")
    assert Query.objects.create(collection=second, qid="301").pk is not None


def test_a_docno_is_unique_within_a_collection_but_not_across_collections() -> None:
    first, second = CollectionFactory(), CollectionFactory()
    DocumentFactory(collection=first, docno="FT911-1")
    with refused_by_database():
        Document.objects.create(collection=first, docno="FT911-1")
    assert Document.objects.create(collection=second, docno="FT911-1").pk is not None


def test_a_run_name_is_unique_within_a_collection_but_not_across_collections() -> None:
    first, second = CollectionFactory(), CollectionFactory()
    RunFactory(collection=first, name="bm25")
    with refused_by_database():
        Run.objects.create(collection=first, name="bm25")
    assert Run.objects.create(collection=second, name="bm25").pk is not None


def test_an_assessor_judges_a_pair_once_while_another_assessor_may_judge_it_too(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    alice, bob = UserFactory(), UserFactory()
    judge(query, document, alice, 1)
    with refused_by_database():
        judge(query, document, alice, 2)
    judge(query, document, bob, 2)
    assert sorted(Judgement.objects.values_list("grade", flat=True)) == [1, 2]


def test_a_run_holds_one_ranking_per_query(pair: tuple[Query, Document]) -> None:
    """Positions are indices into the one ranking, so no two documents share a position.

    A document twice in one ranking is refused by the imports (tests/test_commands.py and
    tests/test_services_imports.py): inside a packed ranking the database cannot see it.
    """
    query, document = pair
    other = DocumentFactory(collection=query.collection)
    run = RunFactory(collection=query.collection)
    ranking(run, query, [document, other])
    with refused_by_database():
        ranking(run, query, [other])
    # The same query in another run is fine.
    ranking(RunFactory(collection=query.collection), query, [other])
    assert Ranking.objects.count() == 2


def test_a_ranking_is_never_empty(pair: tuple[Query, Document]) -> None:
    query, _ = pair
    with refused_by_database():
        ranking(RunFactory(collection=query.collection), query, [])


def test_a_ranking_reads_back_its_documents_scores_and_ranks_in_stored_order(
    pair: tuple[Query, Document],
) -> None:
    query, first = pair
    second = DocumentFactory(collection=query.collection)
    third = DocumentFactory(collection=query.collection)
    created = ranking(RunFactory(collection=query.collection), query, [third, first, second])
    stored = Ranking.objects.get(pk=created.pk)
    assert stored.document_ids() == [third.pk, first.pk, second.pk]
    assert stored.document_ids(2) == [third.pk, first.pk]
    assert stored.score_values() == [0.0, -1.0, -2.0]
    assert stored.rank_values() == [1, 2, 3]


def test_a_grade_level_value_is_unique_within_its_collection() -> None:
    collection = CollectionFactory()  # levels 0-3
    with refused_by_database():
        GradeLevel.objects.create(collection=collection, value=3, label="again")
    GradeLevel.objects.create(collection=collection, value=4, label="Grade 4")
    assert list(collection.grades.values_list("value", flat=True)) == [0, 1, 2, 3, 4]


def test_an_adjudication_is_unique_per_pair(pair: tuple[Query, Document]) -> None:
    query, document = pair
    organiser = UserFactory()
    Adjudication.objects.create(query=query, document=document, grade=2, organiser=organiser)
    with refused_by_database():
        Adjudication.objects.create(query=query, document=document, grade=1, organiser=organiser)


def test_a_membership_role_is_held_once_per_user_and_collection() -> None:
    collection, user = CollectionFactory(), UserFactory()
    Membership.objects.create(collection=collection, user=user, role=Membership.ASSESSOR)
    with refused_by_database():
        Membership.objects.create(collection=collection, user=user, role=Membership.ASSESSOR)
    Membership.objects.create(collection=collection, user=user, role=Membership.ORGANISER)
    assert Membership.objects.filter(user=user).count() == 2


def test_stored_scores_are_unique_per_run_and_query_and_ideal_per_cutoff(
    pair: tuple[Query, Document],
) -> None:
    """One packed per-query row per (run, query) and one row of means per run, whatever
    cutoffs they hold; the ideal DCGs stay one row per query and cutoff."""
    query, _ = pair
    run = RunFactory(collection=query.collection)
    values = {"ndcg": 0.5, "dcg": 1.0, "judged": 1.0, "ndcg_condensed": 0.5}
    QueryScore.objects.create(run=run, query=query, **packed_query_fields([5], **values))
    for cutoffs in ([5], [10], [5, 10]):
        with refused_by_database():
            QueryScore.objects.create(
                run=run, query=query, **packed_query_fields(cutoffs, **values)
            )
    other = RunFactory(collection=query.collection)
    QueryScore.objects.create(run=other, query=query, **packed_query_fields([5], **values))
    RunScore.objects.create(run=run, **packed_run_fields([5]))
    for cutoffs in ([5], [10]):
        with refused_by_database():
            RunScore.objects.create(run=run, **packed_run_fields(cutoffs))
    RunScore.objects.create(run=other, **packed_run_fields([5]))
    IdealScore.objects.create(query=query, k=5, idcg=2.0)
    with refused_by_database():
        IdealScore.objects.create(query=query, k=5, idcg=3.0)


# Check constraints -----------------------------------------------------------------------


@pytest.mark.parametrize("grade", [-10, 100, 32767])
def test_a_judgement_grade_outside_the_check_range_is_refused(
    pair: tuple[Query, Document], grade: int
) -> None:
    query, document = pair
    with refused_by_database():
        judge(query, document, UserFactory(), grade)
    assert not Judgement.objects.exists()


@pytest.mark.parametrize("grade", [-9, 99])
def test_a_judgement_grade_at_the_ends_of_the_check_range_is_stored(
    pair: tuple[Query, Document], grade: int
) -> None:
    query, document = pair
    assert judge(query, document, UserFactory(), grade).grade == grade


def test_an_existing_judgement_cannot_be_updated_outside_the_check_range(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    judgement = judge(query, document, UserFactory(), 2)
    with refused_by_database():
        Judgement.objects.filter(pk=judgement.pk).update(grade=100)
    judgement.refresh_from_db()
    assert judgement.grade == 2


@pytest.mark.parametrize("grade", [-10, 100])
def test_adjudication_and_grade_level_values_outside_the_check_range_are_refused(
    pair: tuple[Query, Document], grade: int
) -> None:
    query, document = pair
    with refused_by_database():
        Adjudication.objects.create(
            query=query, document=document, grade=grade, organiser=UserFactory()
        )
    with refused_by_database():
        GradeLevel.objects.create(collection=query.collection, value=grade, label="odd")


def test_a_history_row_without_old_or_new_grade_is_refused(pair: tuple[Query, Document]) -> None:
    query, document = pair
    user = UserFactory()
    with refused_by_database():
        JudgementHistory.objects.create(
            query=query, document=document, assessor=user, source="form"
        )
    # A creation (no old grade) and a deletion (no new grade) are both fine.
    JudgementHistory.objects.create(
        query=query, document=document, assessor=user, new_grade=1, source="form"
    )
    JudgementHistory.objects.create(
        query=query, document=document, assessor=user, old_grade=1, source="form"
    )
    assert JudgementHistory.objects.count() == 2


@pytest.mark.parametrize(
    ("field", "value"),
    [("gain", "logarithmic"), ("missing_queries", "drop"), ("aggregation", "max")],
)
def test_a_collection_setting_outside_its_choices_is_refused_by_the_database(
    field: str, value: str
) -> None:
    with refused_by_database():
        Collection.objects.create(slug="odd", name="Odd", **{field: value})
    assert not Collection.objects.filter(slug="odd").exists()


def test_a_membership_with_an_unknown_role_is_refused_by_the_database() -> None:
    with refused_by_database():
        Membership.objects.create(collection=CollectionFactory(), user=UserFactory(), role="boss")


# Validation and deletion -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cutoffs", "message"),
    [
        ([], "non-empty list"),
        ([0, 10], "integers >= 1"),
        ([5, "10"], "integers >= 1"),
        ([True], "integers >= 1"),
        ("5,10", "non-empty list"),
        ([5, 5], "must not repeat"),
        ([5, 1001], "above 1000"),
    ],
)
def test_collection_validation_rejects_bad_cutoffs(cutoffs: object, message: str) -> None:
    collection = Collection(slug="c", name="C", cutoffs=cutoffs)
    with pytest.raises(ValidationError) as caught:
        collection.full_clean()
    assert message in " ".join(caught.value.message_dict["cutoffs"])


def test_collection_sorted_cutoffs_orders_the_stored_list() -> None:
    assert Collection(slug="c", cutoffs=[20, 5, 10]).sorted_cutoffs == [5, 10, 20]


def test_an_assessor_with_judgements_cannot_be_deleted(pair: tuple[Query, Document]) -> None:
    query, document = pair
    alice = UserFactory()
    judge(query, document, alice, 1)
    with pytest.raises(ProtectedError), transaction.atomic():
        alice.delete()
    assert Judgement.objects.filter(assessor=alice).count() == 1


def test_deleting_a_collection_removes_everything_in_it(pair: tuple[Query, Document]) -> None:
    query, document = pair
    judge(query, document, UserFactory(), 2)
    ranking(RunFactory(collection=query.collection), query, [document])
    query.collection.delete()
    for model in (Query, Document, Run, Ranking, Judgement, JudgementHistory, GradeLevel):
        assert not model.objects.exists(), model.__name__


# A judgement written with the ORM, outside the services (annotations/signals.py) ----------


def test_a_judgement_created_with_the_orm_gets_a_history_row_from_other(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    alice = UserFactory()
    judge(query, document, alice, 2)
    history = JudgementHistory.objects.get()
    assert (history.old_grade, history.new_grade, history.source) == (None, 2, "other")
    assert (history.query, history.document, history.assessor) == (query, document, alice)


def test_a_judgement_changed_with_save_gets_a_history_row_and_marks_its_query_stale(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    judgement = judge(query, document, UserFactory(), 2)
    version = Query.objects.get(pk=query.pk).judgements_version
    judgement.grade = 0
    judgement.save()
    latest = JudgementHistory.objects.latest("id")
    assert (latest.old_grade, latest.new_grade, latest.source) == (2, 0, "other")
    refreshed = Query.objects.get(pk=query.pk)
    assert refreshed.judgements_version == version + 1
    # The `db` fixture never commits, so the scheduled recomputation has not run yet.
    assert refreshed.scores_pending


def test_saving_a_judgement_without_changing_its_grade_writes_no_history(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    judgement = judge(query, document, UserFactory(), 2)
    version = Query.objects.get(pk=query.pk).judgements_version
    judgement.note = "looked again"
    judgement.save()
    assert JudgementHistory.objects.count() == 1
    assert Query.objects.get(pk=query.pk).judgements_version == version
