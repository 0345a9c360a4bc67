"""URL path converter for ids: every qid, docno and run name the platform accepts is one
addressable path segment, slashes and dot segments included."""

from __future__ import annotations

import re

from django.urls import register_converter

from annotations.formats import trec

# What a path segment cannot carry as itself, even percent-encoded: servers decode %2F into a
# separator before routing, and browsers resolve "." and ".." segments (also as %2E). Those
# are written with "~" and two hex digits, and "~" itself as "~7E"; everything else is left
# to the percent-encoding `reverse()` applies.
_ESCAPES = {"~": "~7E", "/": "~2F"}
_CODE = re.compile(r"~(7E|2F|2E)", re.IGNORECASE)
_CODES = {"7E": "~", "2F": "/", "2E": "."}


def id_to_segment(value: str) -> str:
    """The path segment of an id (before percent-encoding): reversible, never "." or ".."."""
    segment = "".join(_ESCAPES.get(character, character) for character in value)
    if segment in {".", ".."}:
        segment = segment.replace(".", "~2E")
    return segment


def segment_to_id(segment: str) -> str:
    """The id a segment names (a "~" not starting an escape stands for itself, so hand-typed
    URLs of ids with "~" work); ValueError, a 404, for an id the platform never stores."""
    value = _CODE.sub(lambda match: _CODES[match.group(1).upper()], segment)
    if trec.id_problem(value) is not None:
        raise ValueError("not an id the platform stores")
    return value


class IdConverter:
    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return segment_to_id(value)

    def to_url(self, value: str) -> str:
        return id_to_segment(value)


register_converter(IdConverter, "id")
