"""Every answer under /api/ is JSON in the one error shape: a method a resource lacks is a
405 with Allow for every caller, an unknown path a 404, the schema's own errors too."""

import re
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from annotations import services
from annotations.models import Membership
from tests.factories import UserFactory

METHODS = ("get", "post", "put", "patch", "delete")
VALUES = {
    "slug": "m",
    "name": "r",
    "qid": "q1",
    "docno": "d1",
    "pool_id": "1",
    "assignment_id": "1",
    "membership_id": "1",
    "job_id": "1",
    "webhook_id": "1",
    "run_id": "1",
}


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()["error"]
    assert body["status"] == status and body["detail"] and body["fields"] == {}
    return body


@pytest.fixture
def organiser(db: None) -> Any:
    cache.clear()
    collection = services.collection_create(slug="m", cutoffs=[5])
    user = UserFactory(username="org")
    Membership.objects.create(collection=collection, user=user, role="organiser")
    services.run_store(collection=collection, run_name="r", results={"q1": [("d1", 1.0, 1)]})
    return user


def test_a_method_no_operation_documents_is_a_json_405_with_allow(organiser: Any) -> None:
    schema = APIClient().get("/api/schema/?format=json").json()
    checked = 0
    for template, item in schema["paths"].items():
        path = re.sub(r"\{(\w+)\}", lambda match: VALUES[match.group(1)], template)
        documented = {method for method in item if method in METHODS}
        for user in (organiser, None):
            client = APIClient()
            if user is not None:
                client.force_authenticate(user)
            for method in (*sorted(set(METHODS) - documented), "FOO"):
                response = client.generic(method.upper(), path)
                assert _error(response, 405)["code"] == "method_not_allowed", (method, path)
                allowed = {name.strip().lower() for name in response["Allow"].split(",")}
                assert allowed - {"head", "options"} == documented, (path, response["Allow"])
                checked += 1
    assert checked > 50


def test_unknown_paths_and_the_schemas_own_errors_are_json(db: None) -> None:
    client = APIClient(enforce_csrf_checks=True)  # as a real client: no CSRF failure page
    client.cookies["sessionid"] = "stale"
    for method in (*METHODS, "FOO"):
        assert (
            _error(client.generic(method.upper(), "/api/v2/nothing/"), 404)["code"] == "not_found"
        )
        assert _error(client.generic(method.upper(), "/api/"), 404)
    for path in ("/api/schema/", "/api/docs/"):
        _error(client.post(path), 405)
        _error(client.get(path, {"format": "nonsense"}), 404)
    _error(client.get("/api/schema/", HTTP_ACCEPT="text/csv"), 406)
    # What succeeds is served as before: the schema (YAML by default) and the docs page.
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/")["Content-Type"].startswith("text/html")
