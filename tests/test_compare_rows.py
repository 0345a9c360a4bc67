"""The compare page's rows are joined in Python; their titles must read as the template's
``truncatechars`` would have cut them."""

from __future__ import annotations

from django.utils.text import Truncator
from hypothesis import given
from hypothesis import strategies as st

from annotations.templatetags.compare_rows import _short

# Combining marks (which truncatechars does not count) and text that composes under NFC.
TEXT = st.text(
    alphabet=st.sampled_from(["a", "é", "e", "\u0301", "\u0308", " ", "…", "语", "\u00a0"]),
    max_size=120,
) | st.text(max_size=120)


@given(TEXT, st.integers(min_value=1, max_value=100))
def test_titles_are_cut_as_truncatechars_cuts_them(text: str, length: int) -> None:
    assert _short(text, length) == Truncator(text).chars(length)


def test_a_long_title_ends_with_an_ellipsis_at_the_length() -> None:
    title = "x" * 150
    assert _short(title, 80) == "x" * 79 + "…"
    assert _short("short", 80) == "short"
