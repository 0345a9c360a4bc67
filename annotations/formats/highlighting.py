"""Query-term highlighting over HTML-escaped, untrusted document text (pure, stdlib only)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
    }
)
WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(*texts: str) -> list[str]:
    """Distinct lower-cased words of the texts, without stopwords and one-letter words."""
    seen: dict[str, None] = {}
    for text in texts:
        for word in WORD.findall(text.lower()):
            if len(word) > 1 and word not in STOPWORDS:
                seen.setdefault(word, None)
    return list(seen)


def highlight(text: str, terms: Iterable[str]) -> str:
    """`text` escaped for HTML, each whole-word occurrence of a term wrapped in <mark>.

    Matching is case-insensitive and also takes a plain plural ("s"/"es"). Every character
    of `text` goes through `html.escape`, matched or not, so markup in the text is shown,
    never interpreted; the only tags in the result are the <mark> pairs added here.
    """
    words = sorted({term.lower() for term in terms if term}, key=len, reverse=True)
    if not words:
        return html.escape(text)
    pattern = re.compile(
        r"\b(?:" + "|".join(re.escape(word) for word in words) + r")(?:e?s)?\b", re.IGNORECASE
    )
    parts: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        parts.append(html.escape(text[last : match.start()]))
        parts.append(f"<mark>{html.escape(match.group(0))}</mark>")
        last = match.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)
