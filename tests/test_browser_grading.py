"""Grading in the background in a real browser: no page loads, saves committed once, failures
shown and retried, history navigation, and the plain form without JavaScript."""

import time

import pytest
from django.contrib.auth import get_user_model

from annotations import services
from annotations.models import Assignment, Collection, Document, Judgement, JudgementHistory
from tests.conftest import browser_page
from tests.grading_keys import grade, move, watch

pytestmark = pytest.mark.browser


def _assignment(trial: Collection, depth: int = 2) -> Assignment:
    """Alice's assignment over both topics (q1: d1 d2 d3 d6, then q2's pairs), 0-3 scale."""
    alice = get_user_model().objects.get(username="alice")
    pool, _ = services.pool_build(collection=trial, name="main", depth=depth)
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[alice])
    return assignment


def _pair_url(assignment: Assignment, position: int) -> str:
    return f"/judging/assignments/{assignment.id}/pairs/{position}/"


def _grades(assignment: Assignment) -> dict[int, int]:
    """position -> alice's grade of that item's pair."""
    found = {}
    for item in assignment.items.select_related("entry"):
        judgement = Judgement.objects.filter(
            query_id=item.entry.query_id, document_id=item.entry.document_id
        ).first()
        if judgement is not None:
            found[item.position] = judgement.grade
    return found


def _shown_docno(page) -> str:  # type: ignore[no-untyped-def]
    return str(page.inner_text("#document-title").split()[0])


def _docno_at(assignment: Assignment, position: int) -> str:
    return str(assignment.items.get(position=position).entry.document.docno)


def _slow_fetches(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Each fetch of the next pairs takes `seconds` on the server."""
    from annotations.selectors import judging

    real = judging.pending_items_after

    def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(judging, "pending_items_after", slow)


def _grade_quickly(page, keys: str) -> None:  # type: ignore[no-untyped-def]
    """Grade a pair per key as soon as the next one is shown: an assessor faster than the
    fetches."""
    for key in keys:
        shown = page.evaluate("window.__shown")
        page.keyboard.press(key)
        page.wait_for_function("(shown) => window.__shown > shown", arg=shown)


def _counts_asked(urls: list[str]) -> list[int]:
    return [int(url.split("count=")[1].split("&")[0]) for url in urls]


def test_grades_are_saved_in_the_background_each_exactly_once_with_their_dwell(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    Document.objects.filter(collection=trial).update(text="A long line of the document.\n" * 3000)
    assignment = _assignment(trial)
    watch(page)
    login("alice")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    for key, position in (("2", 1), ("0", 2), ("3", 3)):
        assert _shown_docno(page) == _docno_at(assignment, position)
        grade(page, key)
        assert page.url.endswith(_pair_url(assignment, position + 1))  # its URL pushed
    assert "Saved grade 3 for q1 / d3" in page.inner_text("#save-status")
    assert "3 / " in page.inner_text("#grading-progress")
    assert len(posts) == 3  # one request per grade
    assert _grades(assignment) == {1: 2, 2: 0, 3: 3}
    history = list(JudgementHistory.objects.order_by("id").values_list("new_grade", "dwell_ms"))
    assert [grade for grade, _ in history] == [2, 0, 3]  # each committed once
    assert all(dwell is not None and 0 <= dwell < 600_000 for _, dwell in history)


def test_undo_waits_for_the_grades_on_their_way_and_takes_back_the_last(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment(trial)
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    grade(page, "1")
    page.keyboard.press("2")  # and at once, before it is committed:
    with page.expect_navigation():
        page.keyboard.press("u")
    assert "Took back your last grade" in page.inner_text("main")
    assert page.url.endswith(_pair_url(assignment, 2))
    assert "Not graded yet" in page.inner_text("#current-grade")
    assert _grades(assignment) == {1: 1}
    sources = list(JudgementHistory.objects.order_by("id").values_list("source", flat=True))
    assert sources == ["form", "form", "undo"]


def test_a_failed_save_is_shown_retried_and_lands_on_its_own_pair(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment(trial)
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    server = {"down": True}  # refuses every save until the test brings it back

    def server_down(route) -> None:  # type: ignore[no-untyped-def]
        if route.request.method == "POST" and server["down"]:
            route.fulfill(status=503, body="Service Unavailable")
        else:
            route.continue_()

    page.route("**/pairs/*/", server_down)
    page.keyboard.press("3")  # pair 1: refused by the "stopped" server, and retried
    page.wait_for_selector("#save-error:not([hidden])", timeout=30_000)
    assert "Not saved yet: grade 3 for q1 / d1" in page.inner_text("#save-error")
    assert "503" in page.inner_text("#save-error")
    assert not Judgement.objects.exists()  # shown as not saved, and it is not
    page.wait_for_function("() => window.__shown >= 1")  # the next pair may still be loading
    assert _shown_docno(page) == _docno_at(assignment, 2)  # grading goes on meanwhile
    page.keyboard.press("1")  # pair 2, queued behind pair 1
    assert page.is_visible("#save-error")  # still not saved while the server is down
    server["down"] = False
    page.click("#save-retry")
    page.wait_for_function("() => window.__saved >= 2")
    assert page.locator("#save-error").is_hidden()
    assert _grades(assignment) == {1: 3, 2: 1}
    assert JudgementHistory.objects.count() == 2


def test_a_save_whose_answer_is_lost_is_retried_and_applied_once(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment(trial)
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    lost = {"left": 1}

    def answer_lost(route) -> None:  # type: ignore[no-untyped-def]
        if route.request.method == "POST" and lost["left"] > 0:
            lost["left"] -= 1
            route.fetch()  # the server commits the grade; its answer never arrives
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/pairs/*/", answer_lost)
    page.keyboard.press("2")
    page.wait_for_selector("#save-error:not([hidden])")
    page.click("#save-retry")
    page.wait_for_function("() => window.__saved >= 1")
    assert _grades(assignment) == {1: 2}
    assert JudgementHistory.objects.count() == 1  # the retry was answered, not applied again


def test_a_refused_grade_is_shown_with_its_pair_and_nothing_is_misplaced(
    trial: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment(trial)
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    # The organiser narrows the scale while the page is open: 3 is no longer a grade.
    services.collection_grades_set(
        collection=trial, grades=[(0, "not", ""), (1, "some", ""), (2, "yes", "")]
    )
    page.keyboard.press("3")
    page.wait_for_function("() => window.__refused >= 1")
    error = page.inner_text("#save-error")
    assert "Not saved: grade 3 for q1 / d1" in error and "3 is not one of the" in error
    assert page.locator("#save-error a").get_attribute("href") == _pair_url(assignment, 1)
    page.wait_for_function("() => window.__shown >= 1")  # the next pair may still be loading
    grade(page, "2")  # pair 2 is graded as usual
    assert _grades(assignment) == {2: 2}


IN_FLIGHT = """
window.__inFlight = 0; window.__mostInFlight = 0; window.__fetchedWhileSaving = 0;
window.__readsInFlight = 0;
var plainFetch = window.fetch;
window.fetch = function (url, options) {
  if (!options || options.method !== "POST") {
    if (window.__inFlight > 0) { window.__fetchedWhileSaving += 1; }
    window.__readsInFlight += 1;
    var read = plainFetch.apply(this, arguments);
    var answered = function () { window.__readsInFlight -= 1; };
    read.then(answered, answered);
    return read;
  }
  window.__inFlight += 1;
  window.__mostInFlight = Math.max(window.__mostInFlight, window.__inFlight);
  var done = function () { window.__inFlight -= 1; };
  var sent = plainFetch.apply(this, arguments);
  sent.then(done, done);
  return sent;
};
"""


def test_on_a_slow_server_the_next_grade_does_not_wait_for_the_last_ones_answer(
    trial: Collection, page, login, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from annotations.views import grading

    # Ten pairs of 450,000 characters: four are held at most, so some are always left to
    # fetch.
    Document.objects.filter(collection=trial).update(text="A line of the document.\n" * 19_000)
    assignment = _assignment(trial, depth=4)
    real = grading._grade_or_skip

    def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.6)  # a busy server: each save takes a while to be answered
        return real(*args, **kwargs)

    monkeypatch.setattr(grading, "_grade_or_skip", slow)
    watch(page)
    page.add_init_script(IN_FLIGHT)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    page.wait_for_selector(".pair")
    page.keyboard.press("2")  # pair 1
    page.wait_for_function("() => window.__shown >= 1")  # pair 2, held ready
    page.keyboard.press("0")  # before pair 1's answer
    page.wait_for_function("() => window.__saved >= 2", timeout=20_000)
    assert page.evaluate("window.__mostInFlight") == 2  # both on their way at once
    assert _grades(assignment) == {1: 2, 2: 0}  # each on its own pair
    assert JudgementHistory.objects.count() == 2  # each committed once
    assert "2 / " in page.inner_text("#grading-progress")  # the later answer's progress
    # The server is busy now: with a pair still held but fewer than the page holds, it
    # fetches the next at once, not after the grade's answer.
    page.evaluate("window.__held = 0")
    move(page, "j")  # another pair in place: the held ones are fetched again ...
    page.wait_for_function("() => window.__held >= 2 && window.__readsInFlight === 0")
    page.evaluate("window.__fetchedWhileSaving = 0")
    keys = "1" * (page.evaluate("window.__held") - 1)  # down to one held: fewer than two
    _grade_quickly(page, keys)
    page.wait_for_function("(saved) => window.__saved >= saved", arg=2 + len(keys))
    assert page.evaluate("window.__fetchedWhileSaving") >= 1
    assert len(_grades(assignment)) == 2 + len(keys)


def test_the_page_holds_more_pairs_when_fetches_are_slow_for_the_assessors_pace(
    trial: Collection, page, login, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment(trial, depth=4)  # ten pairs
    _slow_fetches(monkeypatch, 1.0)
    asked: list[str] = []
    watch(page)
    login("alice")
    page.on("request", lambda r: asked.append(r.url) if "/next/" in r.url else None)
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    page.wait_for_function("() => window.__held >= 2")  # before the pace is known: two
    assert max(_counts_asked(asked)) == 2
    _grade_quickly(page, "123")
    # A fetch takes several of this assessor's grades: the page holds more pairs than the
    # two (or three) of a fast server, and asks for them in one fetch.
    page.wait_for_function("() => window.__heldTarget > 3 && window.__held > 3", timeout=20_000)
    assert max(_counts_asked(asked)) > 3
    page.wait_for_function("() => window.__saved >= 3")
    _grade_quickly(page, "012")  # from those held, each on its own pair
    page.wait_for_function("() => window.__saved >= 6")
    assert _grades(assignment) == {1: 1, 2: 2, 3: 3, 4: 0, 5: 1, 6: 2}
    assert JudgementHistory.objects.count() == 6


def test_the_pairs_held_stay_within_their_size_however_many_the_pace_asks_for(
    trial: Collection, page, login, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # Documents of 400,000 characters: the 2,000,000 characters of HTML held are four pairs.
    Document.objects.filter(collection=trial).update(text="A line of the document.\n" * 16_000)
    assignment = _assignment(trial, depth=4)
    _slow_fetches(monkeypatch, 1.0)
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    page.wait_for_function("() => window.__held >= 2")
    _grade_quickly(page, "123")
    # The pace asks for more pairs than fit: the first fetch after it holds those that do.
    page.wait_for_function("() => window.__heldTarget > 5 && window.__held >= 3", timeout=20_000)
    assert page.evaluate("window.__mostHeldChars") <= 2_000_000
    assert page.evaluate("window.__mostHeld") <= 5 < page.evaluate("window.__heldTarget")
    _grade_quickly(page, "0")
    page.wait_for_function("() => window.__saved >= 4")
    assert _grades(assignment) == {1: 1, 2: 2, 3: 3, 4: 0}


def test_reload_and_back_land_on_the_right_pair(trial: Collection, page, login) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment(trial)
    watch(page)
    login("alice")
    page.goto(f"/judging/assignments/{assignment.id}/continue/")
    grade(page, "1")
    grade(page, "2")
    page.reload()
    assert page.url.endswith(_pair_url(assignment, 3))
    assert _shown_docno(page) == _docno_at(assignment, 3)
    page.go_back()
    page.wait_for_function("() => window.__shown >= 1")
    assert page.url.endswith(_pair_url(assignment, 2))
    assert _shown_docno(page) == _docno_at(assignment, 2)
    assert "Your grade: 2" in page.inner_text("#current-grade")
    page.go_back()
    page.wait_for_function("() => window.__shown >= 2")
    assert _shown_docno(page) == _docno_at(assignment, 1)
    assert "Your grade: 1" in page.inner_text("#current-grade")
    page.go_forward()
    page.wait_for_function("() => window.__shown >= 3")
    assert page.url.endswith(_pair_url(assignment, 2))
    assert _shown_docno(page) == _docno_at(assignment, 2)
    move(page, "j")  # next, in place, with its URL
    assert page.url.endswith(_pair_url(assignment, 3))
    assert _shown_docno(page) == _docno_at(assignment, 3)


def test_without_javascript_the_plain_form_still_grades(
    trial: Collection, browser, live_server
) -> None:  # type: ignore[no-untyped-def]
    assignment = _assignment(trial)
    with browser_page(browser, live_server, java_script_enabled=False) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pass-word-123")
        with page.expect_navigation():
            page.click("button[type=submit]")
        page.goto(f"/judging/assignments/{assignment.id}/continue/")
        assert _shown_docno(page) == _docno_at(assignment, 1)
        with page.expect_navigation():
            page.click("button[data-key='2']")
        assert page.url.endswith(_pair_url(assignment, 2))
        page.fill("#id_note", "not sure")
        with page.expect_navigation():
            page.click("#skip")
        assert page.url.endswith(_pair_url(assignment, 3))
    assert _grades(assignment) == {1: 2}
    history = JudgementHistory.objects.get()
    assert (history.new_grade, history.dwell_ms) == (2, None)  # no script, no dwell
    assert assignment.items.get(position=2).skipped
