"""Answers given outside DRF's views: unknown API paths, server errors, NUL in a request."""

from typing import Any

import pytest
from django.test import Client
from django.urls import path

from tests.factories import CollectionFactory, UserFactory


def _boom(request: Any) -> Any:
    raise RuntimeError("a bug")


# A urlconf with a failing view, using the project's handler.
urlpatterns = [
    path("api/v1/boom/", _boom),
    path("page/boom/", _boom),
]
handler500 = "annotations.api_errors.server_error"


@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_api_path_is_a_json_404(db: None, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    response = Client().post("/api/v1/no/such/path/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "not_found"


def test_an_unknown_page_is_the_sites_404_page(db: None) -> None:
    response = Client().get("/no/such/page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_a_server_error_under_api_answers_the_json_error_shape(settings: Any) -> None:
    settings.ROOT_URLCONF = __name__
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    response = client.get("/api/v1/boom/")
    assert response.status_code == 500
    assert response.json()["error"] == {
        "status": 500,
        "code": "server_error",
        "detail": "The server failed; the error is logged.",
        "fields": {},
    }
    page = client.get("/page/boom/")  # the site's 500 page, even with none of its URLs
    assert page["Content-Type"].startswith("text/html")
    assert "Something went wrong on the server" in page.content.decode()


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/collections/nul/judgements/?assessor=a%00b",
        "/api/v1/collections/nul/compare/?a=x%00&b=y",
        "/api/v1/collections/nul/runs/a%00b/",
        "/api/v1/collections/nul/judgements/?qid%00=1",
    ],
)
def test_a_nul_in_the_path_or_a_parameter_is_a_400_in_the_error_shape(db: None, url: str) -> None:
    CollectionFactory(slug="nul")
    client = Client()
    client.force_login(UserFactory(is_staff=True))
    response = client.get(url)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"


def test_a_nul_in_a_page_parameter_is_a_plain_400(db: None) -> None:
    assert Client().get("/collections/x/leaderboard/?k=1%00").status_code == 400


@pytest.fixture
def organiser_api(db: None) -> Any:
    from rest_framework.test import APIClient

    from annotations.models import Membership

    collection = CollectionFactory(slug="edges")
    user = UserFactory()
    Membership.objects.create(collection=collection, user=user, role="organiser")
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize(
    "query",
    [
        f"offset={2**64}",
        "limit=5&offset=99999999999999999999999",
        "updated_after=2026-01-01T00:00:00%2B16:00",
        "updated_after=2026-01-01T00:00:00-23:59",
    ],
)
def test_list_parameters_at_the_edges_answer_200_not_a_database_error(
    organiser_api: Any, query: str
) -> None:
    response = organiser_api.get(f"/api/v1/collections/edges/judgements/?{query}")
    assert response.status_code == 200, response.content
    assert response.json()["results"] == []


@pytest.mark.parametrize(
    ("at", "status"),
    [
        ("2026-01-01T00:00:00%2B18:00", 200),
        ("2026-01-01T00:00:00-23:59", 200),
        ("0001-01-01T00:00:00%2B18:00", 400),
        ("9999-12-31T23:59:59-23:59", 400),
    ],
)
def test_an_as_of_time_with_any_utc_offset_answers_without_a_database_error(
    organiser_api: Any, at: str, status: int
) -> None:
    response = organiser_api.get(f"/api/v1/collections/edges/as-of/qrels/?at={at}")
    assert response.status_code == status, response.content


def test_a_json_run_rank_beyond_32_bits_is_a_400_naming_the_field(organiser_api: Any) -> None:
    body = {"results": [{"qid": "q1", "docno": "d1", "score": 1, "rank": 2**31}]}
    response = organiser_api.put("/api/v1/collections/edges/runs/big/results/", body, format="json")
    assert response.status_code == 400
    assert "results[0].rank" in response.json()["error"]["fields"]


def test_json_nested_too_deeply_is_a_400_parse_error(organiser_api: Any) -> None:
    body = "[" * 100_000 + "]" * 100_000
    response = organiser_api.generic(
        "POST", "/api/v1/collections/edges/queries/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


def test_a_form_encoded_body_where_json_is_expected_is_a_415(organiser_api: Any) -> None:
    response = organiser_api.post(
        "/api/v1/collections/edges/queries/", {"qid": "q1"}, format="multipart"
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
