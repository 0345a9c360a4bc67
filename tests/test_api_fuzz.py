"""Schemathesis over every operation of the served schema, in process against the WSGI app:
no server error, no undocumented status, content type or response body. Bounded here;
`make fuzz` runs it longer (NDCG_FUZZ_EXAMPLES, NDCG_FUZZ_ROLES)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
import schemathesis
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotations import services
from annotations.models import Membership
from tests.factories import UserFactory

EXAMPLES = int(os.environ.get("NDCG_FUZZ_EXAMPLES", "10"))
ROLES = os.environ.get("NDCG_FUZZ_ROLES", "organiser,assessor").split(",")
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Ids that exist, so that generated requests reach past the 404s as well.
KNOWN = {"slug": ["fz"], "name": ["r1", "r2"], "qid": ["q1", "q2"], "docno": ["d1", "d2"]}
Capture = Callable[..., AbstractContextManager[Any]]

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())


@pytest.fixture
def _connection_kept() -> Iterator[None]:
    """The WSGI app closes the database connection after each request; in a test that is
    the test's transaction, so (as Django's test client does) it is kept open."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def tokens(db: None, _connection_kept: None, settings: Any) -> Iterator[dict[str, str | None]]:
    """A small collection with runs and judgements, and a token per role."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()  # throttle counters live in the cache
    collection = services.collection_create(slug="fz", cutoffs=[5, 10])
    services.queries_store(
        collection=collection,
        queries=[services.QueryFields("q1", "one"), services.QueryFields("q2", "two")],
    )
    services.documents_store(
        collection=collection,
        documents=[services.DocumentFields(f"d{i}", f"doc {i}") for i in (1, 2, 3)],
    )
    keys: dict[str, str | None] = {"anonymous": None}
    for role in ("organiser", "assessor", "owner"):
        user = UserFactory(username=role)
        Membership.objects.create(collection=collection, user=user, role=role)
        keys[role] = Token.objects.create(user=user).key
    for name, order in (("r1", ("d1", "d2", "d3")), ("r2", ("d3", "d1"))):
        services.run_store(
            collection=collection,
            run_name=name,
            results={qid: [(d, None, i + 1) for i, d in enumerate(order)] for qid in ("q1", "q2")},
        )
    assessor = Membership.objects.get(role="assessor").user
    for qid, docno, grade in (("q1", "d1", 2), ("q1", "d3", 0), ("q2", "d2", 1)):
        services.judgement_upsert(
            query=collection.queries.get(qid=qid),
            document=collection.documents.get(docno=docno),
            assessor=assessor,
            grade=grade,
            source="api",
        )
    yield keys
    cache.clear()


@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@schema.given(known=st.booleans(), pick=st.integers(min_value=0, max_value=1))
@hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 10,  # the suite's bounded run is the same every time
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_a_server_error_or_off_schema(
    case: Any,
    known: bool,
    pick: int,
    role: str,
    tokens: dict[str, str | None],
    django_capture_on_commit_callbacks: Capture,
) -> None:
    if known:  # half the cases address what exists: the collection, a run, a judged pair
        for name, values in KNOWN.items():
            if case.path_parameters and name in case.path_parameters:
                case.path_parameters[name] = values[pick % len(values)]
    token = tokens[role]
    headers = {"Authorization": f"Token {token}"} if token else {}
    with django_capture_on_commit_callbacks(execute=True):  # scores follow writes, as served
        case.call_and_validate(headers=headers, checks=CHECKS)
