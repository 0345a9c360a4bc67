"""Query-term highlighting: escaped untrusted text, whole words, plurals, no stopwords."""

from annotations.formats.highlighting import highlight, query_terms


def test_query_terms_drop_stopwords_short_words_and_repeats() -> None:
    assert query_terms("The storage of solar energy", "solar a x") == ["storage", "solar", "energy"]


def test_terms_are_marked_as_whole_words_ignoring_case_and_plurals() -> None:
    assert (
        highlight("Rivers flood; a riverbed.", ["river"])
        == "<mark>Rivers</mark> flood; a riverbed."
    )


def test_markup_in_the_text_is_escaped_matched_or_not() -> None:
    text = "<script>alert('solar')</script> & <b>solar</b>"
    assert highlight(text, ["solar", "script"]) == (
        "&lt;<mark>script</mark>&gt;alert(&#x27;<mark>solar</mark>&#x27;)&lt;/<mark>script</mark>&gt;"
        " &amp; &lt;b&gt;<mark>solar</mark>&lt;/b&gt;"
    )


def test_no_terms_still_escapes() -> None:
    assert highlight('"quoted" <i>', []) == "&quot;quoted&quot; &lt;i&gt;"


def test_regex_characters_in_terms_are_literal() -> None:
    assert highlight("c++ and c", ["c++"]) == "c++ and c"
