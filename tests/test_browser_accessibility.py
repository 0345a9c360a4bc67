"""Every app page in a real browser at a phone's width: axe-core finds no serious or critical
violation, and no page is wider than the 390 px viewport (wide tables scroll by themselves)."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from annotations import services
from annotations.models import AssignmentItem, Collection, Document, Membership
from annotations.services import versions

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def page_problems(page: Any, path: str) -> list[str]:  # type: ignore[no-untyped-def]
    from axe_playwright_python.sync_playwright import Axe

    response = page.goto(path)
    assert response is not None and response.status < 500, (path, response and response.status)
    page.wait_for_load_state("load")
    found = []
    for violation in Axe().run(page).response["violations"]:
        if violation["impact"] in ("serious", "critical"):
            targets = [" ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{path}: {violation['id']} ({violation['impact']}) {targets}")
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > PHONE["width"]:
        found.append(f"{path}: {width} px wide at a {PHONE['width']} px viewport")
    return found


@pytest.fixture
def campaign(trial: Collection) -> Collection:
    users = get_user_model().objects
    alice, bob, olga = (users.get(username=name) for name in ("alice", "bob", "olga"))
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    services.assignment_create(pool=pool, assessors=[alice, bob], overlap=2)
    for assessor, grade in ((alice, 3), (bob, 0)):
        item = AssignmentItem.objects.filter(assignment__assessor=assessor).order_by("position")[0]
        services.assignment_item_grade(item=item, assessor=assessor, grade=grade, note="a note")
    versions.qrels_version_tag(collection=trial, name="v1", note="first", created_by=olga)
    # Documents longer than a screen: the grading page's text scrolls in its own region.
    Document.objects.filter(collection=trial).update(text="A long line of the document.\n" * 400)
    return trial


def test_every_page_passes_axe_and_fits_a_phone(  # type: ignore[no-untyped-def]
    campaign: Collection, browser, live_server
) -> None:
    from tests.conftest import browser_page

    pool = campaign.pools.get()
    membership = Membership.objects.get(collection=campaign, user__username="bob")
    assignment = AssignmentItem.objects.filter(assignment__assessor__username="alice")[0]
    c = "/collections/trial"
    organiser_pages = [
        "/",
        "/create-collection/",
        f"{c}/",
        f"{c}/dashboard/",
        f"{c}/leaderboard/",
        f"{c}/runs/",
        f"{c}/runs/bm25/",
        f"{c}/runs/bm25/describe/",
        f"{c}/runs/bm25/replace/",
        f"{c}/runs/bm25/delete/",
        f"{c}/compare/",
        f"{c}/compare/?a=bm25&b=dense",
        f"{c}/queries/",
        f"{c}/queries/q1/",
        f"{c}/documents/d1/",
        f"{c}/pools/",
        f"{c}/pools/{pool.id}/",
        f"{c}/agreement/",
        f"{c}/disagreements/?min=1",
        f"{c}/versions/",
        f"{c}/versions/v1/",
        f"{c}/import/",
        f"{c}/members/",
        f"{c}/members/{membership.id}/remove/",
        f"{c}/settings/",
        f"{c}/exports/",
        f"{c}/judges/",
        f"{c}/webhooks/",
        "/accounts/password/",
        "/judging/",
        f"{c}/no-such-page/",
    ]
    assessor_pages = [
        f"{c}/",
        "/judging/",
        f"/judging/assignments/{assignment.assignment_id}/",
        f"/judging/assignments/{assignment.assignment_id}/pairs/1/",
        "/accounts/password/",
    ]
    problems: list[str] = []
    for username, paths in (("olga", organiser_pages), ("alice", assessor_pages)):
        with browser_page(browser, live_server, viewport=PHONE) as page:
            page.goto("/accounts/login/")
            problems += page_problems(page, "/accounts/login/")
            page.fill("#id_username", username)
            page.fill("#id_password", "pass-word-123")
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: "/accounts/login/" not in url)
            for path in paths:
                problems += page_problems(page, path)
    assert not problems, "\n".join(problems)
