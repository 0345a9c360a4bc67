"""The app's pages, the API docs included, load under the Content-Security-Policy without a
single violation in a real browser (the `page` fixture fails a test on any violation)."""

from typing import Any

import pytest

from annotations.models import Collection, Membership
from tests.factories import UserFactory


@pytest.mark.browser
def test_pages_and_api_docs_render_with_no_csp_violation(  # type: ignore[no-untyped-def]
    worked_example: Collection, page, login, settings: Any
) -> None:
    from playwright.sync_api import expect

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    organiser = UserFactory(username="cora")
    Membership.objects.create(collection=worked_example, user=organiser, role="organiser")
    login("cora")
    slug = worked_example.slug
    for path in (
        "/",
        f"/collections/{slug}/",
        f"/collections/{slug}/leaderboard/",
        f"/collections/{slug}/runs/example/",
        f"/collections/{slug}/queries/q1/",
        f"/collections/{slug}/pools/",
        "/judging/",
    ):
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("load")
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui")).to_be_visible()  # its start-up script ran
