"""Sending a query's unjudged top-k documents to a judging pool: the service and the button."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client

from annotations import services
from annotations.models import Collection, Pool, Query
from annotations.selectors.query_scores import query_unjudged_top
from annotations.services.pools import UNRANKED_POSITION
from tests.factories import CollectionFactory, DocumentFactory, QueryFactory

# The trial runs' top 5 for q1 hold d1..d6; a depth-1 pool already has q1's d1 and d6.
TO_POOL = "/collections/trial/queries/q1/to-pool/"
QUERY_PAGE = "/collections/trial/queries/q1/"


def user(name: str) -> Any:
    return get_user_model().objects.get(username=name)


def q1(collection: Collection) -> Query:
    return collection.queries.get(qid="q1")


def ids(collection: Collection, *docnos: str) -> list[int]:
    return [collection.documents.get(docno=docno).id for docno in docnos]


def pairs_of(pool: Pool) -> dict[tuple[str, str], int]:
    return {
        (qid, docno): best
        for qid, docno, best in pool.entries.values_list(
            "query__qid", "document__docno", "best_position"
        )
    }


@pytest.fixture
def pool(trial: Collection) -> Pool:
    pool, _ = services.pool_build(collection=trial, name="main", depth=1)
    return pool


# --- the service ------------------------------------------------------------------------


def test_adds_only_pairs_not_yet_in_the_pool_with_their_best_position(
    trial: Collection, pool: Pool
) -> None:
    before = set(pool.entries.values_list("id", "query__qid", "document__docno", "best_position"))
    unjudged = query_unjudged_top(query=q1(trial), k=5)
    assert len(unjudged) == 6

    added = services.pool_add_pairs(
        pool=pool, query=q1(trial), document_ids=unjudged, added_by=user("olga")
    )

    assert added == 4
    assert before <= set(
        pool.entries.values_list("id", "query__qid", "document__docno", "best_position")
    )
    q1_pairs = {doc: best for (qid, doc), best in pairs_of(pool).items() if qid == "q1"}
    assert q1_pairs == {"d1": 1, "d2": 2, "d3": 2, "d4": 4, "d5": 4, "d6": 1}


def test_a_second_call_adds_nothing(trial: Collection, pool: Pool) -> None:
    unjudged = query_unjudged_top(query=q1(trial), k=5)
    services.pool_add_pairs(
        pool=pool, query=q1(trial), document_ids=unjudged, added_by=user("olga")
    )
    size = pool.entries.count()
    again = services.pool_add_pairs(
        pool=pool, query=q1(trial), document_ids=unjudged, added_by=user("olga")
    )
    assert again == 0
    assert pool.entries.count() == size


def test_a_document_no_run_retrieved_sorts_last(trial: Collection, pool: Pool) -> None:
    q2 = trial.queries.get(qid="q2")
    added = services.pool_add_pairs(
        pool=pool, query=q2, document_ids=ids(trial, "d2"), added_by=user("olga")
    )
    assert added == 1
    assert pairs_of(pool)[("q2", "d2")] == UNRANKED_POSITION


def test_a_query_or_document_of_another_collection_is_refused(
    trial: Collection, pool: Pool
) -> None:
    other = CollectionFactory(slug="other")
    foreign_query = QueryFactory(collection=other, qid="q1")
    foreign_document = DocumentFactory(collection=other, docno="d1")
    size = pool.entries.count()
    with pytest.raises(ValidationError):
        services.pool_add_pairs(
            pool=pool, query=foreign_query, document_ids=ids(trial, "d2"), added_by=user("olga")
        )
    with pytest.raises(ValidationError):
        services.pool_add_pairs(
            pool=pool,
            query=q1(trial),
            document_ids=[foreign_document.id],
            added_by=user("olga"),
        )
    assert pool.entries.count() == size


def test_only_an_organiser_may_add_pairs(trial: Collection, pool: Pool) -> None:
    size = pool.entries.count()
    for name in ("alice", "eve"):
        with pytest.raises(PermissionDenied):
            services.pool_add_pairs(
                pool=pool, query=q1(trial), document_ids=ids(trial, "d2"), added_by=user(name)
            )
    assert pool.entries.count() == size


def test_existing_assignments_stay_and_the_new_pairs_become_assignable(
    trial: Collection, pool: Pool
) -> None:
    [(assignment, first)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    services.assignment_item_grade(
        item=assignment.items.get(position=1), assessor=user("alice"), grade=3
    )
    before = list(assignment.items.values_list("id", "entry_id", "position", "skipped"))

    added = services.pool_add_pairs(
        pool=pool,
        query=q1(trial),
        document_ids=query_unjudged_top(query=q1(trial), k=5),
        added_by=user("olga"),
    )

    assert list(assignment.items.values_list("id", "entry_id", "position", "skipped")) == before
    [(_, more)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    assert more == added > 0
    positions = list(assignment.items.values_list("position", flat=True))
    assert positions == list(range(1, first + added + 1))


def test_a_pool_limited_to_some_queries_takes_the_query_into_its_limit(
    trial: Collection,
) -> None:
    q2 = trial.queries.get(qid="q2")
    limited, _ = services.pool_build(collection=trial, name="q2 only", depth=1, queries=[q2])
    services.pool_add_pairs(
        pool=limited, query=q1(trial), document_ids=ids(trial, "d2"), added_by=user("olga")
    )
    assert set(limited.queries.values_list("qid", flat=True)) == {"q1", "q2"}


# --- the button on the query page --------------------------------------------------------


def as_user(name: str | None) -> Client:
    client = Client()
    if name:
        client.force_login(user(name))
    return client


def test_organiser_sees_the_form_and_sending_adds_the_pairs(trial: Collection, pool: Pool) -> None:
    client = as_user("olga")
    html = client.get(f"{QUERY_PAGE}?k=5").content.decode()
    assert 'id="to-pool"' in html and "csrfmiddlewaretoken" in html
    assert "Send the 6 unjudged documents of the top 5 to pool" in html
    assert f'<option value="{pool.id}">main</option>' in html

    response = client.post(TO_POOL, {"pool": pool.id, "k": 5})

    assert response.status_code == 302
    assert response["Location"] == f"{QUERY_PAGE}?k=5"
    assert ("q1", "d2") in pairs_of(pool)
    page = client.get(response["Location"]).content.decode()
    assert "Added 4 pairs to pool main (2 already in it)." in page


def test_the_pages_unjudged_count_follows_a_judgement(trial: Collection, pool: Pool) -> None:
    # The count is kept under the scores stamp, which a judgement moves.
    client = as_user("olga")
    assert "Send the 6 unjudged documents" in client.get(f"{QUERY_PAGE}?k=5").content.decode()
    services.judgement_record(
        query=q1(trial),
        document=trial.documents.get(docno="d2"),
        assessor=user("olga"),
        grade=1,
        source="api",
    )
    assert "Send the 5 unjudged documents" in client.get(f"{QUERY_PAGE}?k=5").content.decode()


def test_without_a_pool_the_page_links_to_the_pools_page(trial: Collection) -> None:
    html = as_user("olga").get(QUERY_PAGE).content.decode()
    assert 'id="to-pool"' not in html
    assert 'href="/collections/trial/pools/"' in html


def test_an_unknown_pool_is_an_error_message_not_a_change(trial: Collection, pool: Pool) -> None:
    theirs = Pool.objects.create(collection=CollectionFactory(slug="elsewhere"), name="x", depth=1)
    size = pool.entries.count()
    client = as_user("olga")
    for value in ("", "nope", "999999", str(theirs.id)):
        response = client.post(TO_POOL, {"pool": value, "k": 5}, follow=True)
        assert "Choose one of the collection&#x27;s pools." in response.content.decode()
    assert pool.entries.count() == size
    assert not theirs.entries.exists()


def test_assessors_do_not_see_the_form_and_may_not_send(trial: Collection, pool: Pool) -> None:
    client = as_user("alice")
    html = client.get(QUERY_PAGE).content.decode()
    assert 'id="to-pool"' not in html and "to-pool" not in html
    size = pool.entries.count()
    assert client.post(TO_POOL, {"pool": pool.id, "k": 5}).status_code == 403
    assert as_user("eve").post(TO_POOL, {"pool": pool.id, "k": 5}).status_code == 404
    assert as_user(None).post(TO_POOL, {"pool": pool.id, "k": 5}).status_code == 302
    assert pool.entries.count() == size


def test_the_to_pool_address_only_takes_posts(trial: Collection, pool: Pool) -> None:
    assert as_user("olga").get(TO_POOL).status_code == 405


def test_an_unknown_query_is_not_found(trial: Collection, pool: Pool) -> None:
    response = as_user("olga").post("/collections/trial/queries/q9/to-pool/", {"pool": pool.id})
    assert response.status_code == 404
