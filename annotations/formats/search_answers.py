"""Search engines asked and read: a query's text put into a request, and an answer's hits."""

# The organiser writes the request and names where the answer keeps its hits; nothing they
# write is ever run as code or string-formatted with a query's text. Placeholders
# (`{{title}}`) are replaced in a URL by the text percent-encoded (it cannot change the host,
# the path's shape or add a parameter), and in a JSON body inside the parsed template's
# strings (the body is written by `json.dumps`, which escapes whatever the text holds).
# Answers are read as JSON through JMESPath expressions: the presets are those of
# Elasticsearch and OpenSearch `_search` and of Solr's `select` with `wt=json`.

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import quote, urlsplit

import jmespath
import jmespath.exceptions

from annotations.formats import trec

__all__ = [
    "ELASTICSEARCH",
    "FORMATS",
    "JMESPATH",
    "OPENSEARCH",
    "PLACEHOLDERS",
    "PRESETS",
    "SOLR",
    "AnswerProblem",
    "Hit",
    "Mapping",
    "body_problem",
    "mapping_for",
    "mapping_problems",
    "parse_answer",
    "render_body",
    "render_url",
    "url_problem",
]

ELASTICSEARCH, OPENSEARCH, SOLR, JMESPATH = "elasticsearch", "opensearch", "solr", "jmespath"
FORMATS = (ELASTICSEARCH, OPENSEARCH, SOLR, JMESPATH)
# What a template may name: the query's id and texts, and the depth asked for.
PLACEHOLDERS = ("qid", "title", "description", "depth")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]+)\s*\}\}")
# A text field of a hit given as several values (Solr's multi-valued fields, Elasticsearch's
# highlight fragments) is shown as one text, its values joined by this.
JOINER = " … "
# Control characters (tab, CR and LF aside) are dropped from a hit's texts: no text field of
# the platform holds them (`trec.text_problem`).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Mapping:
    """Where an answer keeps its hits (`hits`, from the answer's root) and, in each hit, the
    document id, the score and the texts an assessor sees (empty: none)."""

    hits: str
    id: str
    score: str = ""
    title: str = ""
    snippet: str = ""
    url: str = ""


_SEARCH_API = Mapping(
    hits="hits.hits",
    id="_id",
    score="_score",
    title="_source.title",
    snippet="_source.text",
    url="_source.url",
)
PRESETS: dict[str, Mapping] = {
    ELASTICSEARCH: _SEARCH_API,
    OPENSEARCH: _SEARCH_API,
    SOLR: Mapping(
        hits="response.docs", id="id", score="score", title="title", snippet="text", url="url"
    ),
    JMESPATH: Mapping(hits="", id=""),
}


def mapping_for(answer_format: str, given: MappingType[str, str]) -> Mapping:
    """The format's preset with the expressions given (a blank one keeps the preset's)."""
    preset = PRESETS[answer_format]
    chosen = {name: value.strip() for name, value in given.items() if value and value.strip()}
    return replace(preset, **chosen)


def mapping_problems(mapping: Mapping) -> dict[str, str]:
    """What is wrong with each expression of the mapping, by field (empty: nothing)."""
    problems: dict[str, str] = {}
    for field in fields(mapping):
        expression = getattr(mapping, field.name)
        if not expression:
            if field.name in {"hits", "id"}:
                problems[field.name] = "Give a JMESPath expression: the answer needs one."
            continue
        try:
            jmespath.compile(expression)
        except jmespath.exceptions.JMESPathError as error:
            problems[field.name] = f"Not a JMESPath expression: {error}"
    return problems


# --- requests ---------------------------------------------------------------------------


def _unknown(text: str) -> str | None:
    for match in _PLACEHOLDER.finditer(text):
        if match.group(1) not in PLACEHOLDERS:
            known = ", ".join("{{" + name + "}}" for name in PLACEHOLDERS)
            return f"{match.group(0)} is not a placeholder (give one of {known})."
    return None


def url_problem(template: str) -> str | None:
    """Why `template` cannot be a request's URL, or None: an http(s) URL whose scheme, host
    and port are written out (a placeholder there would let a query choose where to call)."""
    unknown = _unknown(template)
    if unknown is not None:
        return unknown
    parts = urlsplit(template)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        return "Give an http:// or https:// URL."
    if _PLACEHOLDER.search(parts.netloc) or "{" in parts.netloc:
        return "A placeholder may stand in the path or the query string, not in the host."
    return None


def render_url(template: str, values: MappingType[str, object]) -> str:
    """The URL with each placeholder replaced by its value percent-encoded whole (a `/`, `&`,
    `#` or `=` of a query's text is data, never structure)."""
    return _PLACEHOLDER.sub(lambda match: quote(str(values[match.group(1)]), safe=""), template)


def body_problem(template: str) -> str | None:
    """Why `template` cannot be a JSON body, or None (an empty template: no body)."""
    if not template.strip():
        return None
    try:
        json.loads(template)
    except ValueError as error:
        return f'Not JSON: {error}. Write placeholders inside strings: "{{{{title}}}}".'
    return _unknown(template)


def _filled(value: Any, values: MappingType[str, object]) -> Any:
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole is not None and whole.group(1) == "depth":
            return values["depth"]  # "size": "{{depth}}" asks for a number
        return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), value)
    if isinstance(value, list):
        return [_filled(item, values) for item in value]
    if isinstance(value, dict):
        return {key: _filled(item, values) for key, item in value.items()}
    return value


def render_body(template: str, values: MappingType[str, object]) -> bytes:
    """The JSON body: the template parsed, each placeholder replaced inside its strings (a
    string that is only `{{depth}}` becomes the number), written back as JSON."""
    return json.dumps(_filled(json.loads(template), values), ensure_ascii=False).encode()


# --- answers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    docno: str
    score: float
    title: str = ""
    snippet: str = ""
    url: str = ""


class AnswerProblem(Exception):
    """An answer that cannot be read: `path` names where (a JMESPath into the answer, with
    the hit's index), the message says what was found there, never the answer's content."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


# A JMESPath expression that only names fields (`_source.title`) is read by dictionary
# lookups, which give what JMESPath gives (a missing field, or a field of a non-object, is
# null) without its interpreter: it runs once per field of every hit, a thousand deep.
_FIELDS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
Getter = Callable[[object], object]


def _field_getter(names: tuple[str, ...]) -> Getter:
    if len(names) == 1:  # `_id`, `score`: the usual case, without the loop
        (only,) = names
        return lambda value: value.get(only) if isinstance(value, dict) else None

    def get(value: object) -> object:
        for name in names:
            if not isinstance(value, dict):
                return None
            value = value.get(name)
        return value

    return get


@functools.lru_cache(maxsize=256)
def _getter(expression: str) -> Getter:
    """A function reading `expression` from a value as `jmespath.search` does (compiled
    once; a JMESPathError where the search would raise one)."""
    if _FIELDS.match(expression):
        return _field_getter(tuple(expression.split(".")))
    return jmespath.compile(expression).search


class _Unusable(Exception):
    """A value of a hit that cannot be used; the caller names where it was."""


def _read(expression: str, value: object) -> object:
    try:
        return _getter(expression)(value)
    except jmespath.exceptions.JMESPathError as error:
        raise _Unusable(f"the expression failed ({type(error).__name__})") from None


def _optional(expression: str) -> Getter | None:
    return _getter(expression) if expression else None


def _docno(value: object) -> str:
    if type(value) is str and trec.id_problem(value) is None:
        return value
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Unusable(f"the document id is {_kind(value)}, not a string")
    docno = str(value)
    problem = trec.id_problem(docno)
    if problem is not None:
        raise _Unusable(f"not a usable document id ({problem})")
    return docno


def _score(value: object) -> float | None:
    if type(value) is float and math.isfinite(value):
        return value
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Unusable(f"the score is {_kind(value)}, not a number")
    score = float(value)
    if not math.isfinite(score):
        raise _Unusable("the score is not a finite number")
    return score


def _text(value: object) -> str:
    if type(value) is str:
        return value if value.isprintable() else _CONTROL.sub("", value)
    if value is None:
        return ""
    if isinstance(value, list):
        return JOINER.join(_text(item) for item in value if item is not None)
    if isinstance(value, bool | dict):
        raise _Unusable(f"the text is {_kind(value)}, not a string")
    return _CONTROL.sub("", str(value))


def _loaded(body: bytes | str) -> object:
    try:
        return json.loads(body)
    except UnicodeDecodeError:
        raise AnswerProblem("", "the answer is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise AnswerProblem("", f"the answer is not JSON ({where})") from None


def parse_answer(body: bytes | str, mapping: Mapping, depth: int) -> list[Hit]:
    """The answer's first `depth` hits in the engine's order, each document once (its first
    place). Scores: as the answer gives them; when it gives none for any hit (no score
    expression, or Elasticsearch sorting by a field), the engine's order as descending
    scores (depth, depth - 1, ...), so that the run ranks as the engine did. AnswerProblem
    for an answer that is not JSON, hits that are not a list, a hit without a usable id,
    some hits with scores and others without."""
    answer = _loaded(body)
    try:
        found = _read(mapping.hits, answer)
    except _Unusable as problem:
        raise AnswerProblem(mapping.hits, str(problem)) from None
    if found is None:
        raise AnswerProblem(mapping.hits, "not found in the answer")
    if not isinstance(found, list):
        raise AnswerProblem(mapping.hits, f"the hits are {_kind(found)}, not a list")
    read_id, read_score = _getter(mapping.id), _optional(mapping.score)
    read_title, read_snippet = _optional(mapping.title), _optional(mapping.snippet)
    read_url = _optional(mapping.url)
    hits: list[Hit] = []
    without_score: list[int] = []  # the index in the answer of each hit without a score
    seen: set[str] = set()
    for index, item in enumerate(found):
        if len(hits) >= depth:
            break
        expression = mapping.id
        try:
            docno = _docno(read_id(item))
            if docno in seen:
                continue
            seen.add(docno)
            expression = mapping.score
            score = _score(read_score(item)) if read_score else None
            expression = mapping.title
            title = _text(read_title(item)) if read_title else ""
            expression = mapping.snippet
            snippet = _text(read_snippet(item)) if read_snippet else ""
            expression = mapping.url
            url = _text(read_url(item)) if read_url else ""
        except _Unusable as problem:
            raise AnswerProblem(f"{mapping.hits}[{index}].{expression}", str(problem)) from None
        except jmespath.exceptions.JMESPathError as error:
            raise AnswerProblem(
                f"{mapping.hits}[{index}].{expression}",
                f"the expression failed ({type(error).__name__})",
            ) from None
        if score is None:
            without_score.append(index)
        hits.append(Hit(docno, 0.0 if score is None else score, title, snippet, url))
    if not without_score:
        return hits
    if len(without_score) < len(hits):
        raise AnswerProblem(
            f"{mapping.hits}[{without_score[0]}].{mapping.score}",
            "no score for this hit while others have one",
        )
    return [replace(hit, score=float(len(hits) - place)) for place, hit in enumerate(hits)]
