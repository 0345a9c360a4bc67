"""Field checks shared by the readers and writers: ids, texts, integers, grades, scores, JSON."""

from __future__ import annotations

import json
import math
import operator
import re
from typing import SupportsIndex

from annotations.formats.trec.errors import TrecFormatError

MAX_ID_LENGTH = 200
# A submitted rank is informational (trec_eval ranks by score) and is kept as 32 bits.
RANK_RANGE = (-(2**31), 2**31 - 1)

_CONTROL_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
INTEGER = re.compile(r"[+-]?[0-9]+")
_INTEGRAL_DECIMAL = re.compile(r"[+-]?[0-9]+\.0*")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def id_problem(value: str) -> str | None:
    """Why `value` cannot be an id (qid, docno, run name), or None: ids are 1 to
    MAX_ID_LENGTH characters of printable UTF-8, with no whitespace and no control character
    (what TREC files hold; anything else is refused at the door by every path)."""
    # The common case at C speed: printable text holds no control character and no
    # whitespace but the space.
    if 0 < len(value) <= MAX_ID_LENGTH and value.isprintable() and " " not in value:
        return None
    if not value:
        return "must not be empty"
    # split() is the fast whitespace test: a single piece means none inside (imports check
    # hundreds of thousands of ids per file).
    if len(value.split()) != 1 or value.strip() != value:
        return f"{value!r} contains whitespace"
    if len(value) > MAX_ID_LENGTH:
        return f"{value[:20]!r}... is longer than {MAX_ID_LENGTH} characters"
    if _CONTROL_TEXT.search(value) is not None:
        return f"{value!r} holds a control character"
    return None


def qid_problem(value: str) -> str | None:
    """Why `value` cannot be a qid, or None: an id (`id_problem`) that does not start with
    '#'. A qid leads its qrels and run lines, and trec_eval (and our readers) take a line
    starting with '#' for a comment: such a qid would vanish from every export."""
    problem = id_problem(value)
    if problem is None and value.startswith("#"):
        return f"{value!r} starts with '#', which TREC files read as a comment line"
    return problem


# The fields that hold a qid in the files the readers take ("num" of a TREC topic).
_QID_FIELDS = frozenset({"qid", "num"})


def _problem(value: str, field: str) -> str | None:
    return qid_problem(value) if field in _QID_FIELDS else id_problem(value)


def text_problem(value: str) -> str | None:
    """Why `value` cannot be a text field (title, text, note), or None: no control character
    but tab, CR and LF."""
    found = _CONTROL_TEXT.search(value)
    if found is None:
        return None
    return f"holds the control character U+{ord(found.group()):04X}"


def check_id(value: str, field: str, path: str, line: int) -> str:
    problem = _problem(value, field)
    if problem is not None:
        raise TrecFormatError(path, line, field, problem)
    return value


def require_id(value: object, field: str, row: int) -> None:
    problem = _problem(value, field) if isinstance(value, str) else f"{value!r} is not a string"
    if problem is not None:
        raise ValueError(f"row {row}: {field}: {problem}")


def require_int(value: object, field: str, row: int) -> int:
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise ValueError(f"row {row}: {field}: {value!r} is not an integer")
    return operator.index(value)


def parse_grade(text: str, path: str, line: int) -> int:
    """A grade: an integer, or an integral decimal such as ``1.0`` (trec_eval reads grades
    with atol, so ``1.0`` is 1); ``1.5`` is refused rather than silently cut to 1."""
    if INTEGER.fullmatch(text):
        return int(text)
    if _INTEGRAL_DECIMAL.fullmatch(text):
        return int(text.split(".", 1)[0])
    if DECIMAL.fullmatch(text):
        problem = f"{text!r} is not a whole number (grades are integers)"
        raise TrecFormatError(path, line, "grade", problem)
    raise TrecFormatError(path, line, "grade", f"{text!r} is not an integer")


def parse_score(text: str, path: str, line: int) -> float:
    if not DECIMAL.fullmatch(text):
        if _NON_FINITE.fullmatch(text):
            raise TrecFormatError(path, line, "score", f"{text!r} is not a finite number")
        raise TrecFormatError(path, line, "score", f"{text!r} is not a number")
    value = float(text)
    if math.isinf(value):
        raise TrecFormatError(path, line, "score", f"{text!r} is too large for a float")
    return value


def column_count(path: str, line: int, layout: str, found: int) -> TrecFormatError:
    expected = len(layout.split())
    return TrecFormatError(
        path, line, None, f"expected {expected} columns ({layout}), found {found}"
    )


def json_object(text: str, path: str, line: int) -> dict[str, object]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        problem = f"invalid JSON: {error.msg} (column {error.colno})"
        raise TrecFormatError(path, line, None, problem) from None
    except RecursionError:
        raise TrecFormatError(path, line, None, "invalid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise TrecFormatError(
            path, line, None, f"expected a JSON object, found {_json_type(value)}"
        )
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPES.get(type(value), "a number")


def json_id(record: dict[str, object], key: str, path: str, line: int) -> str:
    value = record.get(key)
    if value is None:
        raise TrecFormatError(path, line, key, "is required")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        problem = f"must be a string or an integer, found {_json_type(value)}"
        raise TrecFormatError(path, line, key, problem)
    return check_id(value, key, path, line)


def json_text(record: dict[str, object], key: str, path: str, line: int) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TrecFormatError(path, line, key, f"must be a string, found {_json_type(value)}")
    problem = text_problem(value)
    if problem is not None:
        raise TrecFormatError(path, line, key, problem)
    return value.strip()


def tsv_column_count(
    path: str, line: int, names: tuple[str, ...], found: int, layout_line: int | None = None
) -> TrecFormatError:
    problem = f"expected {len(names)} tab-separated columns ({', '.join(names)}), found {found}"
    if layout_line is not None:
        problem += f", unlike line {layout_line}"
    return TrecFormatError(path, line, None, problem)
