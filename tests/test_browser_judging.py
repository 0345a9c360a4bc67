"""Judging in a real browser: keyboard-only grading, revisiting, agreement and adjudication."""

import math

import pytest
from django.contrib.auth import get_user_model

from annotations import services
from annotations.models import (
    Assignment,
    Collection,
    Judgement,
    JudgementHistory,
    Pool,
)
from tests.grading_keys import grade, grade_last, move, watch
from tests.stored import query_score, run_score

pytestmark = pytest.mark.browser


def user(name: str):  # type: ignore[no-untyped-def]
    return get_user_model().objects.get(username=name)


def test_assessor_grades_a_whole_assignment_by_keyboard_and_revisits_one(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    q1 = trial.queries.get(qid="q1")
    bm25 = trial.runs.get(name="bm25")
    pool, _ = services.pool_build(collection=trial, name="main", depth=3, runs=[bm25], queries=[q1])
    [(assignment, size)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    assert size == 3  # d1, d2, d6 in docno order

    watch(page)
    login("alice")
    page.goto("/judging/")
    assert "0 / 3 (0%)" in page.inner_text("#queue")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    assert "solar energy storage" in page.inner_text("#query-title")
    assert page.locator("#document-text mark").first.inner_text() == "Solar"

    page.keyboard.press("?")
    assert page.locator("#shortcuts").get_attribute("open") is not None
    page.keyboard.press("?")

    grade(page, "2")  # d1
    assert "1 / 3" in page.inner_text("#grading-progress")
    grade(page, "0")  # d2
    move(page, "k")  # back to d2 from d6
    assert "Your grade: 0" in page.inner_text("#current-grade")
    grade(page, "1")  # d2 changed 0 -> 1; on to the next ungraded pair, d6
    assert "d6" in page.inner_text("#document-title")
    grade_last(page, "3")  # d6: the last one
    assert page.url.endswith(f"/judging/assignments/{assignment.id}/")
    assert "3 / 3 (100%)" in page.inner_text("#assignment-progress")

    grades = dict(
        Judgement.objects.filter(assessor__username="alice").values_list("document__docno", "grade")
    )
    assert grades == {"d1": 2, "d2": 1, "d6": 3}
    history = list(
        JudgementHistory.objects.order_by("id").values_list(
            "document__docno", "old_grade", "new_grade", "source", "changed_by__username"
        )
    )
    assert history == [
        ("d1", None, 2, "form", "alice"),
        ("d2", None, 0, "form", "alice"),
        ("d2", 0, 1, "form", "alice"),
        ("d6", None, 3, "form", "alice"),
    ]
    # bm25 ranks d1 d2 d6 d4: DCG@5 = 2 + 1/log2 3 + 3/2; the ideal list is 3 2 1.
    log3 = math.log2(3)
    expected = (2 + 1 / log3 + 3 / 2) / (3 + 2 / log3 + 1 / 2)
    assert query_score(run=bm25, query=q1, k=5).ndcg == pytest.approx(expected)
    assert run_score(run=bm25, k=5).ndcg == pytest.approx(expected)


def grade_by_keyboard(page, assignment: Assignment, keys: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    watch(page)
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    for n in range(len(keys)):
        docno = page.inner_text("#document-title").split()[0]
        (grade_last if n == len(keys) - 1 else grade)(page, keys[docno])
    assert "100%" in page.inner_text("#assignment-progress")


def log_out(page) -> None:  # type: ignore[no-untyped-def]
    with page.expect_navigation():
        page.click("text=Log out")


def test_done_when_two_assessors_overlap_and_the_organiser_adjudicates(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    login("olga")
    page.goto("/collections/trial/pools/")
    page.fill("#id_name", "main")
    page.fill("#id_depth", "1")
    page.fill("#id_queries", "q1")
    with page.expect_navigation():
        page.click("#pool-build button[type=submit]")
    assert "2 pairs" in page.content()
    page.check("#pool-assign >> text=alice")
    page.check("#pool-assign >> text=bob")
    page.fill("#id_overlap", "2")
    with page.expect_navigation():
        page.click("#pool-assign button[type=submit]")
    assert "alice +2, bob +2" in page.content()
    log_out(page)

    pool = Pool.objects.get(name="main")
    for name, keys in (("alice", {"d1": "3", "d6": "1"}), ("bob", {"d1": "1", "d6": "3"})):
        login(name)
        grade_by_keyboard(page, pool.assignments.get(assessor__username=name), keys)
        log_out(page)

    login("olga")
    page.goto("/collections/trial/agreement/")
    assert "alice and bob" in page.inner_text("main")
    page.goto("/collections/trial/disagreements/")
    row = page.locator('tr[data-pair="q1/d1"]')
    row.locator("select[name=grade]").select_option("3")
    row.locator("input[name=note]").fill("on topic")
    with page.expect_navigation():
        row.locator("button").click()
    assert "(adjudicated)" in page.locator('tr[data-pair="q1/d1"]').inner_text()

    log3 = math.log2(3)
    ideal = 3 + 1 / log3  # d1 adjudicated 3, d6 at the lower median 1
    bm25 = query_score(run__name="bm25", query__qid="q1", k=5).ndcg
    assert bm25 == pytest.approx((3 + 1 / 2) / ideal)
    assert run_score(run__name="dense", k=5).ndcg == pytest.approx((1 + 3 / 2) / ideal)
    sources = list(
        JudgementHistory.objects.filter(document__docno="d1").values_list("source", flat=True)
    )
    assert sorted(sources) == ["adjudication", "form", "form"]


def test_space_and_page_down_scroll_a_long_document_from_the_page(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    from annotations.models import Document

    Document.objects.filter(collection=trial, docno="d1").update(
        text="\n".join(f"Line {n} about solar storage." for n in range(400))
    )
    q1 = trial.queries.get(qid="q1")
    pool, _ = services.pool_build(collection=trial, name="long", depth=1, queries=[q1])
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    text = page.locator("#document-text")
    assert text.evaluate("e => e.scrollTop") == 0
    page.keyboard.press("Space")
    first = text.evaluate("e => e.scrollTop")
    assert first > 0
    page.keyboard.press("PageDown")
    assert text.evaluate("e => e.scrollTop") > first
    page.keyboard.press("PageUp")
    assert text.evaluate("e => e.scrollTop") == first
    assert page.evaluate("window.scrollY") == 0  # the page itself stayed put
    assert "/pairs/1/" in page.url and not Judgement.objects.exists()  # nothing graded


def _assignment_on_scale(trial: Collection, values: list[int]) -> Assignment:
    services.collection_grades_set(
        collection=trial, grades=[(value, f"level {value}", "") for value in values]
    )
    q1 = trial.queries.get(qid="q1")
    pool, _ = services.pool_build(collection=trial, name="scaled", depth=3, queries=[q1])
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    return assignment


def _grades_in_order(assignment: Assignment) -> list[int]:
    return [
        Judgement.objects.get(query=item.entry.query, document=item.entry.document).grade
        for item in assignment.items.order_by("position")
        if Judgement.objects.filter(query=item.entry.query, document=item.entry.document)
    ]


def test_two_digit_grades_are_keyed_by_typing_them(trial: Collection, page, login) -> None:  # type: ignore[no-untyped-def]
    """On a 0-10 scale: "1" "0" saves 10 at once; "1" then Enter saves 1; "1" alone is saved
    after the pause; "7" (no other grade starts with it) at once."""
    assignment = _assignment_on_scale(trial, list(range(11)))
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    assert page.locator("button[data-key='10']").count() == 1  # every grade has its key
    page.keyboard.press("1")
    assert page.inner_text("#typed-grade") == "Grade 1…"
    grade(page, "0")  # in the background: no page load between the grades
    grade(page, "7")
    page.keyboard.press("1")
    grade(page, "Enter")
    assert assignment.items.count() == 4
    grade_last(page, "1")  # nothing more typed: saved after the pause
    assert _grades_in_order(assignment) == [10, 7, 1, 1]


def test_negative_grades_are_keyed_with_a_minus(trial: Collection, page, login) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment_on_scale(trial, [-1, 0, 1, 2, 3])
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    page.keyboard.press("-")
    assert page.inner_text("#typed-grade") == "Grade -…"
    grade(page, "1")
    grade(page, "2")
    grade(page, "1")  # 1 is also the start of nothing longer: saved at once
    assert _grades_in_order(assignment) == [-1, 2, 1]


def test_keys_that_make_no_grade_on_the_scale_save_nothing_and_say_so(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    """On a -1..10 scale "1" then "2" is 12, not on the scale: refused on screen, never read
    as 2; the next grade typed is saved as typed."""
    assignment = _assignment_on_scale(trial, list(range(-1, 11)))
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    page.keyboard.press("1")
    page.keyboard.press("2")
    assert "12 is not a grade on this scale" in page.inner_text("#save-status")
    assert page.inner_text("#typed-grade") == ""
    grade(page, "7")  # saved on the first pair: neither 12 nor 2 was
    assert _grades_in_order(assignment) == [7]


def test_u_takes_back_the_last_grade_and_the_help_opens_in_view(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment_on_scale(trial, [0, 1, 2, 3])
    watch(page)
    login("alice")
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    page.mouse.wheel(0, 2000)
    page.keyboard.press("?")
    box = page.locator("#shortcuts").bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 900  # in view
    page.keyboard.press("Escape")
    grade(page, "2")
    grade(page, "3")
    assert _grades_in_order(assignment) == [2, 3]
    with page.expect_navigation():
        page.keyboard.press("u")
    assert "Took back your last grade" in page.inner_text("main")
    assert "Not graded yet" in page.inner_text("#current-grade")  # the second pair, reopened
    assert _grades_in_order(assignment) == [2]


def test_the_grades_stay_in_view_and_a_long_document_shows_how_far_it_is_read(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    from annotations.models import Document

    Document.objects.filter(collection=trial).update(text="A line of the document.\n" * 400)
    assignment = _assignment_on_scale(trial, [0, 1, 2, 3])
    login("alice")
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    assert page.inner_text("#read-position").startswith("Read ")
    page.keyboard.press("PageDown")
    page.wait_for_function("document.getElementById('read-position').textContent.includes('%')")
    page.mouse.wheel(0, 3000)
    for selector in ("button[data-key='0']", "#skip"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 900, selector
