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


# --- run names: 105 runs, three of them with 150-character names ------------------------------

LONG_RUNS = [
    "a" + "x" * 149,  # no place to break at all
    "b-" + "-".join(["bm25_rm3_tuned"] * 9) + "-" + "y" * 13,  # hyphens a browser breaks at
    "c" + "W" * 149,  # the widest letters
]
DESKTOP = {"width": 1366, "height": 900}
# The page's own width, and what sticks out past the viewport outside a scrolling region.
OVERFLOW = """() => ({width: document.documentElement.scrollWidth, wide: [
 ...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right
 > innerWidth + 1 && !e.closest('.scroll'))
 .slice(0, 3).map(e => e.tagName + '.' + e.className)})"""


@pytest.fixture
def many_runs(trial: Collection, write_file) -> Collection:  # type: ignore[no-untyped-def]
    """The trial collection with 105 runs (the three LONG_RUNS rank first: they return the
    relevant documents), a judged pool and a qrels version."""
    from django.contrib.auth import get_user_model

    from annotations.services import versions

    olga = get_user_model().objects.get(username="olga")
    qrels = "".join(f"{q} 0 {d} {3 if d in ('d1', 'd6') else 0}\n" for q in ("q1", "q2")
                    for d in ("d1", "d2", "d3", "d4", "d5", "d6"))  # fmt: skip
    services.judgements_import(collection=trial, source=write_file("q.txt", qrels), assessor=olga)
    for position, name in enumerate([*LONG_RUNS, *(f"run{i:03d}" for i in range(100))]):
        top = ["d1", "d6", "d2"] if position < len(LONG_RUNS) else ["d4", "d5", "d3"]
        services.run_store(
            collection=trial,
            run_name=name,
            results={q: [(d, 3.0 - i, i + 1) for i, d in enumerate(top)] for q in ("q1", "q2")},
        )
    services.pool_build(collection=trial, name="main", depth=2)
    versions.qrels_version_tag(collection=trial, name="v1", note="", created_by=olga)
    return trial


def _run_pages(collection: Collection) -> dict[str, str | None]:
    """Each page showing run names -> the first score column's header (None: no scores)."""
    from urllib.parse import quote

    pool = collection.pools.get()
    c = f"/collections/{collection.slug}"
    a, b = (quote(name) for name in LONG_RUNS[:2])
    return {
        f"{c}/leaderboard/": "#leaderboard td.ndcg",
        f"{c}/runs/{a}/": "#per-query thead th:nth-of-type(3)",
        f"{c}/compare/?a={a}&b={b}": "#compare-summary thead th:nth-of-type(2)",
        f"{c}/queries/q1/?a={a}&b={b}": "#query-runs thead th:nth-of-type(2)",
        f"{c}/runs/": "#runs thead th:nth-of-type(3)",
        f"{c}/": "#leaderboard thead th:nth-of-type(3)",
        f"{c}/versions/v1/": "#version-leaderboard thead th:nth-of-type(3)",
        f"{c}/pools/": None, f"{c}/pools/{pool.id}/": None,
        f"{c}/dashboard/": None, f"{c}/versions/": None,
        f"{c}/exports/": None, f"{c}/agreement/": None, f"{c}/leaderboard/significance/": None,
    }  # fmt: skip


def test_long_run_names_keep_every_score_in_view(  # type: ignore[no-untyped-def]
    many_runs: Collection, browser, live_server
) -> None:
    """At 1366 x 900 and 390 x 844 no page is wider than the window outside its scrolling
    regions, the first score column starts inside the window, and axe finds nothing serious."""
    from tests.conftest import browser_page, log_in
    from tests.test_browser_accessibility import page_problems

    problems: list[str] = []
    for viewport in (DESKTOP, PHONE):
        with browser_page(browser, live_server, viewport=viewport) as page:
            log_in(page, "olga")
            for path, score in _run_pages(many_runs).items():
                if viewport is PHONE:  # axe at the phone's width; widths measured below
                    problems += [p for p in page_problems(page, path) if " px wide " not in p]
                else:
                    response = page.goto(path)
                    assert response is not None and response.status == 200, path
                found = page.evaluate(OVERFLOW)
                if found["width"] > viewport["width"] or found["wide"]:
                    problems.append(
                        f"{viewport['width']}: {path[:70]} is {found['width']} px ({found['wide']})"
                    )
                if score is not None:
                    box = page.locator(score).first.bounding_box()
                    assert box is not None, (path, score)
                    if box["x"] >= viewport["width"]:
                        problems.append(
                            f"{viewport['width']}: {path[:70]}: scores start at x = {box['x']:.0f}"
                        )
    assert not problems, "\n".join(problems)


# Whether an element shows its whole text: nothing cut off on either axis.
WHOLE = "e => e.scrollWidth <= e.clientWidth && e.scrollHeight <= e.clientHeight"


def test_a_cut_run_name_shows_whole_on_keyboard_focus(  # type: ignore[no-untyped-def]
    many_runs: Collection, browser, live_server
) -> None:
    """The leaderboard cuts a 150-character name to one line with an ellipsis, its title
    holds it whole, and tabbing to its link shows it whole; so does an unlinked name."""
    from tests.conftest import browser_page, log_in

    name = LONG_RUNS[0]
    with browser_page(browser, live_server, viewport=DESKTOP) as page:
        log_in(page, "olga")
        page.goto("/collections/trial/leaderboard/")
        link = page.locator(f'#leaderboard tr[data-run="{name}"] a.cut')
        assert link.get_attribute("title") == name and link.inner_text() == name
        assert not link.evaluate(WHOLE)  # cut
        # The keyboard's way in: from the row's pick box, one Tab.
        page.locator(f'#leaderboard tr[data-run="{name}"] input.compare-pick').focus()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.title") == name
        assert link.evaluate("e => e.matches(':focus-visible')")
        assert link.evaluate(WHOLE)
        score = page.locator(f'#leaderboard tr[data-run="{name}"] td.ndcg').bounding_box()
        assert score is not None and score["x"] + score["width"] <= DESKTOP["width"]

        page.goto("/collections/trial/versions/v1/")
        text = page.locator(f'#version-leaderboard span.cut[title="{name}"]')
        assert text.get_attribute("tabindex") == "0" and not text.evaluate(WHOLE)
        text.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        assert text.evaluate("e => e === document.activeElement && e.matches(':focus-visible')")
        assert text.evaluate(WHOLE)
