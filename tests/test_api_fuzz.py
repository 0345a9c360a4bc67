"""Schemathesis over every operation of the served schema, in process against the WSGI app,
with every check it has: no server error; no undocumented status, content type, header or
body; valid requests accepted and invalid ones refused; unsupported methods answered 405 with
Allow; authentication enforced where the schema asks for it. The coverage phase (every
boundary of every parameter and field, missing ones, undeclared methods) runs as organiser,
the role that reaches every operation's validation; random requests run as each role.
Bounded here; `make fuzz` runs it longer (TEST_FUZZ_EXAMPLES, TEST_FUZZ_ROLES)."""

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
from schemathesis.checks import CHECKS as REGISTERED
from schemathesis.checks import load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation

from annotations import services
from annotations.models import Membership
from tests.factories import UserFactory

EXAMPLES = int(os.environ.get("TEST_FUZZ_EXAMPLES", "10"))
ROLES = os.environ.get("TEST_FUZZ_ROLES", "organiser,assessor,anonymous").split(",")
COVERAGE_ROLE = "organiser"
load_all_checks()
# Every registered check (max_response_time is a setting, not one of them).
CHECKS = [check for check in REGISTERED.get_all() if not isinstance(check, type)]
# Ids that exist, so that generated requests reach past the 404s as well.
KNOWN = {"slug": ["fz"], "name": ["r1", "r2"], "qid": ["q1", "q2"], "docno": ["d1", "d2"]}
Capture = Callable[..., AbstractContextManager[Any]]

# Answers right to give to requests the schema finds valid: schemathesis' own list (5xx is
# not_a_server_error's to judge), 414 for a request target longer than the server reads,
# and 422 for an Idempotency-Key the caller already used for another request.
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "414", "422", "429", "5xx"]
# Refusals of invalid requests: schemathesis' own list and 414 (a server error is
# not_a_server_error's to report).
REFUSED = ["400", "401", "403", "404", "405", "406", "409", "414", "415", "422", "428", "429"]
# Operations whose valid requests the server refuses with a 400 for what no schema can
# state, because it depends on what the collection holds or on the whole body at once.
STATE_400 = {
    "GET /api/v1/collections/{slug}/leaderboard/": "k not among the collection's cutoffs",
    "GET /api/v1/collections/{slug}/runs/{name}/scores/": "k not among the cutoffs",
    "GET /api/v1/collections/{slug}/compare/": "k not among the cutoffs; a or b names no run",
    "GET /api/v1/collections/{slug}/sensitivity/": "k not among the cutoffs",
    "GET /api/v1/collections/{slug}/machine-grades/": "k not among the cutoffs",
    "GET /api/v1/collections/{slug}/versions/{name}/leaderboard/": "k not among the cutoffs",
    "GET /api/v1/collections/{slug}/versions-diff/": "k not among the cutoffs",
    "GET /api/v1/collections/{slug}/as-of/leaderboard/": "k not among the cutoffs; a time "
    "outside years 1 to 9999 in UTC",
    "GET /api/v1/collections/{slug}/as-of/qrels/": "a time outside years 1 to 9999 in UTC",
    "POST /api/v1/collections/": "the slug is taken; a grade value listed twice",
    "POST /api/v1/collections/{slug}/queries/": "a qid listed twice",
    "POST /api/v1/collections/{slug}/documents/": "a docno listed twice",
    "POST /api/v1/collections/{slug}/judgements/": "a grade off the collection's scale; an "
    "assessor's qid or docno the collection lacks",
    "POST /api/v1/collections/{slug}/versions/": "the version name is taken",
    "POST /api/v1/collections/{slug}/runs/": "the file is no TREC run; the run exists",
    "PUT /api/v1/collections/{slug}/runs/{name}/": "the file is no TREC run; split_tags=true "
    "(a PUT names one run)",
    "PUT /api/v1/collections/{slug}/runs/{name}/results/": "scores given for some results "
    "only; a (qid, docno) pair twice",
    "POST /api/v1/collections/{slug}/imports/topics/": "the file is no topic file",
    "POST /api/v1/collections/{slug}/imports/documents/": "the file is no document file",
    "POST /api/v1/collections/{slug}/imports/qrels/": "the file is no qrels file; no such assessor",
    "POST /api/v1/collections/{slug}/import-jobs/": "the file is empty or not text; no such "
    "assessor",
    "POST /api/v1/collections/{slug}/imports/ir-datasets/": "a dataset ir_datasets does not "
    "know; a part the dataset lacks; no such assessor",
    "GET /api/v1/collections/{slug}/leaderboard/report/": "k not among the cutoffs",
    "POST /api/v1/collections/{slug}/webhooks/": "the URL's host does not resolve or is a "
    "private address; the collection has its 20 webhooks",
    "POST /api/v1/collections/{slug}/judges/": "the name is taken; the prompt names a field "
    "the platform does not fill; the endpoint's host does not resolve or is a private address",
    "PATCH /api/v1/collections/{slug}/judges/{name}/": "the prompt names a field the platform "
    "does not fill; the endpoint's host does not resolve or is a private address",
    "POST /api/v1/collections/{slug}/judges/{name}/try/": "no pool yet; the key's variable is "
    "unset; the endpoint refuses",
    "POST /api/v1/collections/{slug}/judges/{name}/runs/": "no such pool; the key's variable "
    "is unset; a run is active",
    "POST /api/v1/collections/{slug}/systems/": "the name is taken; a template that is no "
    "http(s) URL or no JSON, or names a field the platform does not fill; a header without a "
    "name; the host does not resolve or is a private address",
    "PATCH /api/v1/collections/{slug}/systems/{name}/": "a template that is no http(s) URL or "
    "no JSON, or names a field the platform does not fill; a header without a name",
    # The judging campaign.
    "POST /api/v1/collections/{slug}/pools/": "the pool name is taken; a run or qid the "
    "collection lacks; a budget without order=impact",
    "POST /api/v1/collections/{slug}/pools/{pool_id}/extend/": "a run or qid the collection lacks",
    "POST /api/v1/collections/{slug}/pools/{pool_id}/assign/": "an unknown account; an overlap "
    "above the number of assessors",
    "POST /api/v1/collections/{slug}/assignments/{assignment_id}/release/": "an unknown "
    "account; the assessor who holds the assignment",
    "POST /api/v1/collections/{slug}/members/": "an account that cannot be added; a role held",
    "POST /api/v1/collections/{slug}/accounts/": "the username is taken or not a username",
    "PATCH /api/v1/collections/{slug}/members/{membership_id}/": "the last organiser",
    "DELETE /api/v1/collections/{slug}/members/{membership_id}/": "the last organiser",
    "POST /api/v1/collections/{slug}/members/{membership_id}/password-link/": "an account "
    "no link may be issued for",
    "POST /api/v1/collections/{slug}/adjudications/": "a pair nobody judged; a grade off the "
    "scale; a qid or docno the collection lacks",
    "GET /api/v1/collections/{slug}/scores/export/trec/": "k not among the cutoffs; no such run",
    "GET /api/v1/collections/{slug}/scores/export/csv/": "k not among the cutoffs; no such run",
    "GET /api/v1/collections/{slug}/scores/export/json/": "k not among the cutoffs; no such run",
    "GET /api/v1/collections/{slug}/history/": "a time outside years 1 to 9999 in UTC",
}


def _config(phase: str) -> SchemathesisConfig:
    phases = {name: {"enabled": name == phase} for name in ("examples", "coverage", "fuzzing")}
    return SchemathesisConfig.from_dict(
        {
            "phases": {**phases, "stateful": {"enabled": False}},
            "checks": {
                "positive_data_acceptance": {"expected-statuses": ACCEPTED},
                "negative_data_rejection": {"expected-statuses": REFUSED},
            },
            "operations": [
                {
                    "include-name": label,
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}
                    },
                }
                for label in STATE_400
            ],
        }
    )


app = get_wsgi_application()
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app, config=_config("fuzzing"))
boundaries = schemathesis.openapi.from_wsgi(
    "/api/schema/?format=json", app, config=_config("coverage")
)


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


def _call(case: Any, token: str | None, pick: int | None, capture: Capture) -> None:
    """Send the case with the role's token and run every check on the answer. With `pick`,
    path ids are replaced by ones that exist, unless the case is about an invalid path."""
    invalid_path = case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)
    if pick is not None and case.path_parameters and not invalid_path:
        for name, values in KNOWN.items():
            if name in case.path_parameters:
                case.path_parameters[name] = values[pick % len(values)]
    headers = {"Authorization": f"Token {token}"} if token else {}
    with capture(execute=True):  # scores follow writes, as served
        case.call_and_validate(headers=headers, checks=CHECKS)


def test_every_operation_listed_as_refusing_valid_requests_is_served() -> None:
    served = {result.ok().label for result in schema.get_all_operations()}
    assert set(STATE_400) <= served, sorted(set(STATE_400) - served)


@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@schema.given(known=st.booleans(), pick=st.integers(min_value=0, max_value=1))
@hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 10,  # the suite's bounded run is the same every time
    suppress_health_check=list(HealthCheck),
)
def test_random_requests_get_answers_the_schema_promises(
    case: Any,
    known: bool,
    pick: int,
    role: str,
    tokens: dict[str, str | None],
    django_capture_on_commit_callbacks: Capture,
) -> None:
    # Half the cases address what exists: the collection, a run, a judged pair.
    _call(case, tokens[role], pick if known else None, django_capture_on_commit_callbacks)


@pytest.mark.parametrize("role", [COVERAGE_ROLE])
@boundaries.parametrize()
@hypothesis_settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_every_boundary_of_every_operation_gets_the_answer_the_schema_promises(
    case: Any,
    role: str,
    tokens: dict[str, str | None],
    django_capture_on_commit_callbacks: Capture,
) -> None:
    # Boundaries of the parameters and fields, not of the ids: those address what exists.
    _call(case, tokens[role], 0, django_capture_on_commit_callbacks)
