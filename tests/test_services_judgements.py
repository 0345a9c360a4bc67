"""judgement_upsert: created is decided on the locked or inserted row, even under a race."""

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from annotations import services
from annotations.models import Collection, Judgement, JudgementHistory
from tests.factories import CollectionFactory, UserFactory


@pytest.fixture
def collection(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    collection = CollectionFactory(slug="upsert", cutoffs=[2])
    services.run_import(collection=collection, source=write_file("r.run", "q1 Q0 d1 1 1 r\n"))
    return collection


def test_the_first_call_creates_and_the_same_call_again_does_not(collection: Collection) -> None:
    assessor = UserFactory()
    pair = {"query": collection.queries.get(), "document": collection.documents.get()}
    _, created = services.judgement_upsert(**pair, assessor=assessor, grade=2, source="api")
    _, again = services.judgement_upsert(**pair, assessor=assessor, grade=2, source="api")
    _, changed = services.judgement_upsert(**pair, assessor=assessor, grade=1, source="api")
    assert (created, again, changed) == (True, False, False)


def test_of_two_identical_concurrent_submits_exactly_one_created(collection: Collection) -> None:
    # On PostgreSQL the two submits race in two threads; SQLite serialises writers, so
    # there they run one after the other (the same outcome is required).
    concurrent = connection.vendor == "postgresql"
    assessor = UserFactory()
    query, document = collection.queries.get(), collection.documents.get()
    start = threading.Barrier(2 if concurrent else 1)
    results: list[bool] = []
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            start.wait(timeout=10)
            _, created = services.judgement_upsert(
                query=query, document=document, assessor=assessor, grade=3, source="api"
            )
            results.append(created)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)
        finally:
            if concurrent:
                connection.close()

    if concurrent:
        threads: list[Any] = [threading.Thread(target=submit) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    else:
        submit()
        submit()
    assert not errors, errors
    assert sorted(results) == [False, True]
    assert Judgement.objects.filter(assessor=assessor).count() == 1
    assert JudgementHistory.objects.filter(assessor=assessor).count() == 1
