"""Prompts for machine judges and the strict reading of their answers (no framework).

The default prompt is UMBRELA's (Upadhyay et al., 2024: an open reproduction of Bing's
relevance assessor, Thomas et al., 2023) adapted to the collection's grade scale and to the
query's title, description and narrative. A template names its fields in braces:
{scale}, {title}, {description}, {narrative}, {document}, {low}, {high}; `{{` and `}}`
are literal braces. An answer counts only when it names one grade of the scale after
`##final score:`; anything else is a failure, never turned into a grade.
"""

from __future__ import annotations

import hashlib
import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

FIELDS = ("scale", "title", "description", "narrative", "document", "low", "high")
MAX_DOCUMENT_CHARS = 20_000
MAX_EXCERPT_CHARS = 500

UMBRELA = """Given a query and a passage, you must provide a score on an integer scale of \
{low} to {high} with the following meanings:
{scale}
Important Instruction: Assign the lowest category if the passage has nothing to do with the \
topic, a middle category if the passage is somewhat related to the topic but not completely \
or also has extra information, and the highest category only if the passage only and \
entirely refers to the topic.

Query: {title}
Description: {description}
Narrative: {narrative}

Passage: {document}

Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final \
score (O). Final score must be an integer value only.
Do not provide any code in result. Provide each score in the format of: ##final score: \
score without providing any reasoning."""

_FINAL = re.compile(r"##\s*final\s+score\s*:\s*(-?\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Level:
    value: int
    label: str
    definition: str = ""


def template_problem(template: str) -> str | None:
    """Why the template cannot be used (unknown field, unbalanced braces), or None."""
    if not template.strip():
        return "The prompt is empty."
    try:
        fields = [
            (name, spec or "", conversion or "")
            for _, name, spec, conversion in string.Formatter().parse(template)
            if name is not None
        ]
    except ValueError as error:
        return f"The prompt's braces do not pair up ({error}); write a literal brace as {{{{."
    names = [name for name, _, _ in fields]
    formatted = sorted({name for name, spec, conversion in fields if spec or conversion})
    if formatted:
        # A width such as {document:>999999999} would build a string that wide per prompt.
        return (
            f"Write fields plainly, without a format or conversion: "
            f"{', '.join('{' + name + '}' for name in formatted)}."
        )
    unknown = sorted({name for name in names if name not in FIELDS})
    if unknown:
        return (
            f"Unknown fields {', '.join('{' + name + '}' for name in unknown)}; "
            f"the prompt may use {', '.join('{' + name + '}' for name in FIELDS)}."
        )
    if "document" not in names:
        return "The prompt must show the document: put {document} in it."
    return None


def scale_text(levels: Sequence[Level]) -> str:
    """One line per level: `value = label: definition`."""
    return "\n".join(
        f"{level.value} = {level.label}" + (f": {level.definition}" if level.definition else "")
        for level in levels
    )


def render(
    template: str,
    *,
    levels: Sequence[Level],
    title: str,
    description: str,
    narrative: str,
    document: str,
) -> str:
    """The prompt for one pair (the document cut at MAX_DOCUMENT_CHARS characters). Each
    field is put in as it is, whatever format spec the template gives it: the prompt is never
    longer than the template and the fields, even for a template saved before specs were
    refused."""
    values = [level.value for level in levels]
    fields = {
        "scale": scale_text(levels),
        "title": title,
        "description": description or "(none)",
        "narrative": narrative or "(none)",
        "document": document[:MAX_DOCUMENT_CHARS],
        "low": str(min(values)),
        "high": str(max(values)),
    }
    parts = []
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(literal)
        if name is not None:
            parts.append(fields[name])
    return "".join(parts)


@dataclass(frozen=True)
class Reading:
    """A grade on the scale, or why the answer gives none."""

    grade: int | None
    failure: str = ""


def read_answer(answer: str, values: Sequence[int]) -> Reading:
    """The grade the answer names after `##final score:`, strictly: every such mark must
    name the same grade, and it must be on the scale."""
    found = {int(match) for match in _FINAL.findall(answer)}
    if not found:
        return Reading(None, "the answer names no '##final score: N'")
    if len(found) > 1:
        return Reading(None, f"the answer names several final scores ({sorted(found)})")
    grade = found.pop()
    if grade not in values:
        return Reading(None, f"the answer's final score {grade} is not on the scale {list(values)}")
    return Reading(grade)


# One token of an answer as the endpoint gave it: its text and its top alternatives
# (text, log-probability), the token itself among them.
Token = tuple[str, Sequence[tuple[str, float]]]


def grade_probabilities(
    tokens: Sequence[Token], grade: int, values: Sequence[int]
) -> dict[int, float] | None:
    """How sure the answer was of its grade: the probabilities of the scale's grades at the
    token that names the final score, from that token's top alternatives (those that are a
    grade of the scale, renormalised). None when the tokens are not the answer's text, the
    final score is not one token, or no alternative names a grade."""
    text = "".join(token for token, _ in tokens)
    marks = list(_FINAL.finditer(text))
    if not marks or int(marks[-1].group(1)) != grade:
        return None
    start, end = marks[-1].span(1)
    offset = 0
    for token, alternatives in tokens:
        if offset <= start < offset + len(token):
            if offset + len(token) < end or token.strip() != str(grade):
                return None  # the digits are split over tokens, or share one with text
            found: dict[int, float] = {}
            for alternative, logprob in alternatives:
                name = alternative.strip()
                if name.lstrip("-").isdigit() and int(name) in values and int(name) not in found:
                    found[int(name)] = math.exp(logprob)
            total = sum(found.values())
            if not found or total <= 0:
                return None
            return {value: found.get(value, 0.0) / total for value in sorted(values)}
        offset += len(token)
    return None


def excerpt(answer: str) -> str:
    """The stored part of an answer: its first MAX_EXCERPT_CHARS characters."""
    return answer if len(answer) <= MAX_EXCERPT_CHARS else answer[: MAX_EXCERPT_CHARS - 1] + "…"


def provenance(
    *,
    model: str,
    prompt_version: int,
    prompt_tokens: int,
    completion_tokens: int,
    seconds: float,
    excerpt: str,
) -> str:
    """What a machine grade is stored with (its judgement's note, in the history like any
    assessor's note): the model, the prompt's version, tokens, time and the answer's
    excerpt, e.g. ``gpt-4o, prompt v2, 812+9 tokens, 1.4 s: ##final score: 2``."""
    head = f"{model}, prompt v{prompt_version}, {prompt_tokens}+{completion_tokens} tokens"
    return f"{head}, {seconds:.1f} s: {excerpt}"


def cache_key(*, model: str, prompt_version: int, query_text: str, document_hash: str) -> str:
    """What an answer depends on: the model, the prompt's version, the query as the prompt
    shows it, and the document's content (a changed document is asked again)."""
    material = "\x1f".join([model, str(prompt_version), query_text, document_hash])
    return hashlib.sha256(material.encode()).hexdigest()
