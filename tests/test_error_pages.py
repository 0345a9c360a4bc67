"""403, 404 and 500 pages in the site's look with a way back; the API keeps its JSON errors."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from annotations import api_errors
from tests.factories import UserFactory


@pytest.mark.django_db
def test_a_missing_page_is_the_sites_404_with_a_way_back() -> None:
    client = Client()
    client.force_login(UserFactory(username="nina"))
    response = client.get("/collections/no-such-thing/")
    html = response.content.decode()
    assert response.status_code == 404
    assert 'class="brand"' in html and "Page not found" in html
    assert 'href="/">Back to the collections</a>' in html
    assert "/static/annotations/favicon.svg" in html


@pytest.mark.django_db
def test_an_api_404_stays_json() -> None:
    response = Client().get("/api/v1/no-such-path/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_an_organiser_page_answers_the_sites_403_to_other_members() -> None:
    from annotations import services
    from annotations.models import Membership

    collection = services.collection_create(slug="c403")
    user = UserFactory(username="amy")
    Membership.objects.create(collection=collection, user=user, role="assessor")
    client = Client()
    client.force_login(user)
    response = client.get("/collections/c403/members/")
    html = response.content.decode()
    assert response.status_code == 403
    assert "Not allowed" in html and "organisers" in html and 'class="brand"' in html


def test_the_500_page_renders_without_a_request_context() -> None:
    response = api_errors.server_error(RequestFactory().get("/collections/x/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on the server" in html and 'href="/"' in html
    api = api_errors.server_error(RequestFactory().get("/api/v1/collections/"))
    assert api["Content-Type"].startswith("application/json")
