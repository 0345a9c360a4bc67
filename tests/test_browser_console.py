"""The organiser console in a real browser: a collection with a custom scale, an assessor
account that sets its password through the one-time link, a run deleted after confirming."""

from __future__ import annotations

import pytest

from annotations.models import Collection, GradeLevel, Membership, Run

pytestmark = pytest.mark.browser


def test_an_organiser_creates_a_collection_with_a_custom_scale(  # type: ignore[no-untyped-def]
    trial: Collection, page, login
) -> None:
    login("olga")
    page.click("#new-collection")
    page.fill("#id_slug", "robust")
    page.fill("#id_name", "Robust track")
    page.check("#id_gain_1")  # exponential
    page.fill("#id_cutoffs", "10, 20")
    page.check("#id_assessors_see_leaderboard")
    # The default 0-3 rows are there; drop grade 3, relabel 2, add a level with the script.
    page.check("#id_grades-3-DELETE")
    page.fill("#id_grades-2-label", "Key")
    page.fill("#id_grades-2-definition", "The document answers the query on its own.")
    page.click("#add-level")
    assert page.evaluate("document.activeElement.id") == "id_grades-6-value"
    page.keyboard.type("-1")
    page.fill("#id_grades-6-label", "Spam")
    with page.expect_navigation():
        page.click("#collection-form button[type=submit]")
    assert page.url.endswith("/collections/robust/")
    assert "Collection robust created." in page.inner_text("ul.messages")
    scale = page.inner_text("dl.grades")
    assert "-1 · Spam" in scale and "2 · Key" in scale and "3 ·" not in scale
    collection = Collection.objects.get(slug="robust")
    assert (collection.gain, collection.cutoffs) == ("exponential", [10, 20])
    assert collection.assessors_see_leaderboard
    values = GradeLevel.objects.filter(collection=collection).values_list("value", flat=True)
    assert list(values) == [-1, 0, 1, 2]

    # A refused edit shows the problem inline and changes nothing.
    page.click("nav.collection-menu >> text=Settings")
    page.fill("#id_cutoffs", "10, x")
    with page.expect_navigation():
        page.click("#collection-form button[type=submit]")
    assert "write whole numbers" in page.inner_text(".error-summary")
    assert "write whole numbers" in page.inner_text(".field.invalid")


def test_an_assessor_account_is_created_and_its_owner_sets_a_password(  # type: ignore[no-untyped-def]
    trial: Collection, page, login, browser
) -> None:
    login("olga")
    page.goto("/collections/trial/")
    page.click("nav.collection-menu >> text=Members")
    page.fill("#account-create #id_username", "nina")
    page.select_option("#account-create #id_role", "assessor")
    with page.expect_navigation():
        page.click("#account-create button[type=submit]")
    link = page.input_value("#password-link-url")
    assert "/accounts/reset/" in link
    assert page.locator("#members tr[data-member='nina'][data-role='assessor']").count() == 1

    # nina opens the link in her own browser, sets a password and logs in with it.
    context = browser.new_context(base_url=page.base_url)
    nina = context.new_page()
    nina.goto(link)
    assert "Set your password" in nina.inner_text("h1")
    nina.fill("#id_new_password1", "nina-grades-carefully-7")
    nina.fill("#id_new_password2", "nina-grades-carefully-7")
    with nina.expect_navigation():
        nina.click("#password-set button[type=submit]")
    assert "Password set" in nina.inner_text("h1")
    assert "logged in as nina" in nina.inner_text("main")  # no second login
    nina.goto("/collections/trial/")
    menu = nina.inner_text("nav.collection-menu")
    assert "My judging" in menu and "Leaderboard" not in menu and "Runs" not in menu
    nina.goto(link)  # the link worked once
    assert "no longer works" in nina.inner_text("h1")
    context.close()
    assert Membership.objects.filter(user__username="nina", role="assessor").exists()


def test_a_run_is_deleted_after_confirming(  # type: ignore[no-untyped-def]
    trial: Collection, page, login
) -> None:
    login("olga")
    page.goto("/collections/trial/")
    page.click("nav.collection-menu >> text=Runs")
    row = page.locator("#runs tr[data-run='dense']")
    assert "7" in row.inner_text()  # 4 + 3 results
    with page.expect_navigation():
        row.locator("text=Delete").click()
    assert "removes its 7 results for 2 queries" in page.inner_text(".card.danger")
    assert Run.objects.filter(collection=trial, name="dense").exists()  # not before confirming
    with page.expect_navigation():
        page.click("#run-delete button[type=submit]")
    assert "Run dense deleted" in page.inner_text("ul.messages")
    assert page.locator("#runs tr[data-run='dense']").count() == 0
    assert not Run.objects.filter(collection=trial, name="dense").exists()


# What sticks out past 390 px, to name the culprit when the page is too wide.
WIDE_ELEMENTS = """[...document.querySelectorAll("body *")]
    .filter((e) => e.getBoundingClientRect().right > 391).slice(0, 8)
    .map((e) => `${e.tagName}#${e.id}: ${Math.round(e.getBoundingClientRect().right)}`)"""


def test_console_pages_fit_a_phone(trial: Collection, page, login) -> None:  # type: ignore[no-untyped-def]
    """No console page is wider than a 390 px phone: wide tables scroll in their own box."""
    page.set_viewport_size({"width": 390, "height": 800})
    login("olga")
    for path in (
        "/collections/trial/",
        "/collections/trial/runs/",
        "/collections/trial/members/",
        "/collections/trial/settings/",
        "/collections/trial/exports/",
        "/create-collection/",
        "/collections/trial/runs/bm25/delete/",
        "/accounts/password/",
    ):
        page.goto(path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (path, width, page.evaluate(WIDE_ELEMENTS))
