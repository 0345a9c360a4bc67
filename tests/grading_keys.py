"""Grading by keyboard in the browser tests: a key press, then the grade committed and the
next pair shown in place (the page's events), or the page that follows the last pair."""

from __future__ import annotations

from typing import Any

# Counts the grading page's events on every document the page opens (set before its scripts).
WATCH = """
window.__saved = 0; window.__shown = 0; window.__refused = 0; window.__held = 0;
window.__mostHeld = 0; window.__heldTarget = 0; window.__mostHeldChars = 0;
window.__loaded = Date.now();
document.addEventListener('grading:saved', function () { window.__saved += 1; });
document.addEventListener('grading:shown', function () { window.__shown += 1; });
document.addEventListener('grading:refused', function () { window.__refused += 1; });
document.addEventListener('grading:held', function (e) {
  window.__held = e.detail.held;
  window.__heldTarget = e.detail.target;
  window.__mostHeld = Math.max(window.__mostHeld, e.detail.held);
  window.__mostHeldChars = Math.max(window.__mostHeldChars, e.detail.chars);
});
"""


def watch(page: Any) -> None:
    """Count the grading page's events from now on (every later document included)."""
    page.add_init_script(WATCH)


def counts(page: Any) -> tuple[int, int]:
    return page.evaluate("[window.__saved, window.__shown]")


def grade(page: Any, key: str, saved: int = 1) -> None:
    """Press a key that grades the pair: wait for the next pair in place and the grade(s)
    committed, without a page load."""
    loaded = page.evaluate("window.__loaded")
    before_saved, before_shown = counts(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "([saved, shown]) => window.__saved >= saved && window.__shown >= shown",
        arg=[before_saved + saved, before_shown + 1],
    )
    assert page.evaluate("window.__loaded") == loaded  # the same document: no page load


def move(page: Any, key: str) -> None:
    """Press a key that opens another pair in place (j, k)."""
    before_shown = counts(page)[1]
    page.keyboard.press(key)
    page.wait_for_function("(shown) => window.__shown >= shown", arg=before_shown + 1)


def grade_last(page: Any, key: str) -> None:
    """Press the key that grades the last pair: the page goes to the assignment once the
    grades are committed."""
    with page.expect_navigation():
        page.keyboard.press(key)
