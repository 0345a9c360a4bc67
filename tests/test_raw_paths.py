"""A percent-encoded `/` (%2F) in a path reaches the same object as the `~2F` escape, under
gunicorn (RAW_URI), servers passing REQUEST_URI and the development server; and a client
generated from the schema addresses run "manual/v1" as it is."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.servers.basehttp import ThreadedWSGIServer
from django.db import connections
from django.test.testcases import LiveServerThread
from rest_framework.authtoken.models import Token

from annotations import services
from annotations.middleware import raw_path_info
from annotations.models import Membership
from ndcg_platform.devserver.management.commands.runserver import RawTargetRequestHandler
from tests.factories import UserFactory
from tests.test_generated_client import PACKAGE, generated  # noqa: F401  (the fixture)

RUN = "/api/v1/collections/demo/runs"


@pytest.fixture
def organiser(db: None) -> Any:
    collection = services.collection_create(slug="demo", cutoffs=[5])
    user = UserFactory(username="organiser")
    Membership.objects.create(collection=collection, user=user, role="organiser")
    for name in ("manual/v1", "manual", "a~b/c/d"):
        services.run_store(
            collection=collection, run_name=name, results={"q1": [("d1", None, 1)]}, owner=user
        )
    return user


@pytest.mark.parametrize("key", ["RAW_URI", "REQUEST_URI"])
@pytest.mark.parametrize(
    ("raw", "name"),
    [("manual%2Fv1", "manual/v1"), ("manual%2fv1", "manual/v1"), ("a~b%2Fc%2Fd", "a~b/c/d")],
)
def test_a_raw_target_with_an_encoded_slash_reaches_the_run(
    client: Any, organiser: Any, key: str, raw: str, name: str
) -> None:
    client.force_login(organiser)
    decoded = raw.replace("%2F", "/").replace("%2f", "/")
    response = client.get(f"{RUN}/{decoded}/", **{key: f"{RUN}/{raw}/?x=1"})
    assert response.status_code == 200, response.content
    assert response.json()["name"] == name
    # Without the raw target the server's decoding stands: two segments, no such route.
    assert client.get(f"{RUN}/{decoded}/").status_code == 404
    # The platform's own escape keeps working, with or without a raw target.
    escaped = decoded.replace("/", "~2F")
    assert client.get(f"{RUN}/{escaped}/", **{key: f"{RUN}/{escaped}/"}).json()["name"] == name
    assert client.get(f"{RUN}/{escaped}/").json()["name"] == name


def test_the_raw_path_is_read_segment_by_segment_below_the_script_name() -> None:
    meta = {"RAW_URI": "/ndcg/api/v1/collections/demo/runs/a%2Fb%20c/", "SCRIPT_NAME": "/ndcg"}
    assert raw_path_info(meta) == "/api/v1/collections/demo/runs/a~2Fb c/"
    assert raw_path_info({"RAW_URI": "/api/v1/x/"}) is None  # nothing to re-read
    assert raw_path_info({"REQUEST_URI": "/x/%2F/%FF/"}) is None  # not UTF-8: as served
    assert raw_path_info({"RAW_URI": "http://host/a%2Fb/"}) is None  # absolute form
    assert raw_path_info({}) is None


class _RawTargetServer(ThreadedWSGIServer):
    """The test server with the development server's request handler (REQUEST_URI)."""

    def __init__(self, address: Any, handler: Any, **kwargs: Any) -> None:
        super().__init__(address, RawTargetRequestHandler, **kwargs)


class _RawTargetThread(LiveServerThread):
    server_class = _RawTargetServer


@pytest.fixture
def dev_server(transactional_db: None) -> Iterator[str]:
    shared = {
        conn.alias: conn
        for conn in connections.all()
        if conn.vendor == "sqlite" and conn.is_in_memory_db()
    }
    thread = _RawTargetThread("localhost", StaticFilesHandler, shared, port=0)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield f"http://localhost:{thread.port}"
    thread.terminate()


@pytest.mark.django_db(transaction=True)
def test_a_generated_client_addresses_manual_v1_as_it_is(
    generated: ModuleType,  # noqa: F811
    dev_server: str,
) -> None:
    collection = services.collection_create(slug="demo", cutoffs=[5])
    user = UserFactory(username="organiser")
    Membership.objects.create(collection=collection, user=user, role="organiser")
    services.run_store(
        collection=collection, run_name="manual/v1", results={"q1": [("d1", None, 1)]}
    )
    client = generated.AuthenticatedClient(
        base_url=dev_server, token=Token.objects.create(user=user).key, prefix="Token"
    )
    retrieve = importlib.import_module(f"{PACKAGE}.api.collections.collections_runs_retrieve")
    response = retrieve.sync_detailed("demo", "manual/v1", client=client)  # sent as %2F
    assert response.status_code == 200, response.content
    assert response.parsed.name == "manual/v1"
    response = retrieve.sync_detailed("demo", "manual~2Fv1", client=client)  # the escape
    assert response.status_code == 200 and response.parsed.name == "manual/v1"


@pytest.fixture
def gunicorn_server(transactional_db: None) -> Iterator[int]:
    """The production server as `make serve` runs it, on the test database."""
    from tests.workers import database_url, gunicorn_serving

    with gunicorn_serving(database_url()) as port:
        yield port


def test_under_gunicorn_a_percent_encoded_slash_reaches_the_run(
    organiser: Any, gunicorn_server: int
) -> None:
    import http.client

    token = Token.objects.create(user=organiser).key

    def get(path: str) -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", gunicorn_server, timeout=30)
        try:
            connection.request("GET", path, headers={"Authorization": f"Token {token}"})
            response = connection.getresponse()
            body = response.read()
            return response.status, body
        finally:
            connection.close()

    for raw, name in [
        ("manual%2Fv1", "manual/v1"),
        ("a~b%2Fc%2Fd", "a~b/c/d"),
        ("manual", "manual"),
    ]:
        status, body = get(f"{RUN}/{raw}/")
        assert status == 200, body[:300]
        assert json.loads(body)["name"] == name
        assert json.loads(get(f"{RUN}/{raw.replace('%2F', '~2F')}/")[1])["name"] == name
    status, _ = get(f"{RUN}/manual%2Fv2/")
    assert status == 404  # an encoded slash names one segment: no such run, not a 5xx
