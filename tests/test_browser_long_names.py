"""Pages at a phone's width for an organiser whose username is 150 characters long (the
longest Django allows): the top bar and every collection page wrap it, nothing overflows."""

from __future__ import annotations

import pytest

from annotations import services
from annotations.models import Collection
from tests.factories import MembershipFactory, UserFactory
from tests.test_browser_accessibility import PHONE

pytestmark = pytest.mark.browser

LONG = "organiser-" + "x" * 140
# The elements reaching past the viewport outside a scrolling region: what overflows.
WIDEST = """[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right
 > innerWidth && !e.closest('.scroll')).slice(0, 4).map(e => e.tagName + '#' + e.id + '.' +
 e.className)"""


def test_a_150_character_username_fits_every_page_at_390_px(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from tests.conftest import browser_page

    MembershipFactory(collection=trial, user=UserFactory(username=LONG), role="organiser")
    services.pool_build(collection=trial, name="main", depth=2)
    c = "/collections/trial"
    paths = [
        "/", "/judging/", f"{c}/", f"{c}/dashboard/", f"{c}/leaderboard/", f"{c}/runs/",
        f"{c}/queries/", f"{c}/pools/", f"{c}/agreement/", f"{c}/versions/", f"{c}/import/",
        f"{c}/members/", f"{c}/exports/", f"{c}/settings/", f"{c}/webhooks/", f"{c}/judges/",
    ]  # fmt: skip
    wide = []
    with browser_page(browser, live_server, viewport=PHONE) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", LONG)
        page.fill("#id_password", "pass-word-123")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        for path in paths:
            response = page.goto(path)
            assert response is not None and response.status == 200, path
            assert page.locator("header.top .who").inner_text() == LONG
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > PHONE["width"]:
                culprits = page.evaluate(WIDEST)
                wide.append(f"{path}: {width} px ({culprits})")
    assert not wide, wide
