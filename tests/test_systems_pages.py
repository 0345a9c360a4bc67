"""The search systems' pages: an organiser describes a system, tries it and fetches a run
from a real engine; assessors and system owners never reach them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotations import services
from annotations.models import Collection, ImportJob, Membership, Run, SearchSystem
from annotations.services.imports import QueryFields, queries_store
from tests.factories import CollectionFactory, UserFactory
from tests.search_engine import search_engine


@pytest.fixture
def trial(transactional_db: None) -> Collection:
    collection = CollectionFactory(slug="trial")
    queries_store(
        collection=collection,
        queries=[QueryFields("q1", "cats"), QueryFields("q2", "tea"), QueryFields("q3", "x")],
    )
    return collection


def _client(collection: Collection, username: str, role: str) -> Client:
    user = UserFactory(username=username)
    services.membership_grant(collection=collection, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def test_an_organiser_describes_tries_and_fetches_from_the_page(trial: Collection) -> None:
    client = _client(trial, "olga", Membership.ORGANISER)
    with search_engine() as engine:
        form: dict[str, Any] = {
            "name": "bm25", "method": "GET", "answer_format": "solr", "depth": "5",
            "url_template": f"{engine.url}/solr/docs/select?q={{{{title}}}}&rows={{{{depth}}}}",
            "headers": "[]", "timeout_seconds": "5", "attempts": "2", "concurrency": "2",
            "requests_per_minute": "600",
        }  # fmt: skip
        bad = client.post("/collections/trial/systems/", {**form, "id_path": "a["})
        assert bad.status_code == 200
        assert "Not a JMESPath expression" in bad.content.decode()
        added = client.post("/collections/trial/systems/", form)
        assert added.status_code == 302
        assert added["Location"] == "/collections/trial/systems/bm25/"
        tried = client.post("/collections/trial/systems/bm25/", {"try": "1"})
        page = tried.content.decode()
        assert tried.status_code == 200
        assert "Cats are small carnivorous felines" in page  # the text read from the hit
        assert "responseHeader" not in page  # never the answer itself
        assert not Run.objects.exists()
        fetched = client.post("/collections/trial/systems/bm25/fetch/", {"label": "first"})
        job = ImportJob.objects.get(system__name="bm25")
        assert fetched["Location"] == f"/collections/trial/systems/bm25/fetches/{job.id}/"
    detail = client.get(fetched["Location"]).content.decode()
    assert "done" in detail and "/collections/trial/runs/first/" in detail
    assert Run.objects.filter(collection=trial, name="first").exists()
    listing = client.get("/collections/trial/systems/").content.decode()
    assert "Search systems" in listing and "first" in listing


@pytest.mark.parametrize("role", [Membership.ASSESSOR, Membership.OWNER])
def test_assessors_and_system_owners_never_see_systems(trial: Collection, role: str) -> None:
    SearchSystem.objects.create(
        collection=trial, name="bm25", url_template="http://127.0.0.1:9/?q={{title}}"
    )
    client = _client(trial, "someone", role)
    for path in ("/collections/trial/systems/", "/collections/trial/systems/bm25/"):
        assert client.get(path).status_code == 403
    assert client.post("/collections/trial/systems/bm25/fetch/", {}).status_code == 403
    assert client.get("/api/v1/collections/trial/systems/bm25/").status_code == 403
    assert "Search systems" not in client.get("/collections/trial/").content.decode()
