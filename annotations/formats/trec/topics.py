"""Topic files (JSONL, TSV or TREC SGML) read into queries."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from annotations.formats.trec.errors import TrecFormatError
from annotations.formats.trec.fields import (
    check_id,
    json_id,
    json_object,
    json_text,
    tsv_column_count,
)
from annotations.formats.trec.lines import Source, data_lines, display_name, nonempty, peek, unique

_SGML_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*)>")
_SGML_PREFIX = {
    "num": re.compile(r"\s*number\s*:", re.IGNORECASE),
    "title": re.compile(r"\s*topic\s*:", re.IGNORECASE),
    "desc": re.compile(r"\s*description\s*:", re.IGNORECASE),
    "narr": re.compile(r"\s*narrative\s*:", re.IGNORECASE),
}


@dataclass(frozen=True, slots=True)
class Topic:
    qid: str
    title: str
    description: str
    narrative: str
    line: int


def read_topics(source: Source, *, name: str | None = None) -> Iterator[Topic]:
    """Yield the topics of a JSONL, TSV or TREC SGML file, detected from its first data line.

    A first line starting with ``{`` means JSONL, one object per line: "qid" (non-empty
    string or integer) is required; "title", "description", "narrative" are optional strings
    (null counts as absent); other keys are ignored. ``<`` means SGML: ``<top>`` blocks with
    ``<num>``, ``<title>``, ``<desc>``, ``<narr>`` whose text may span lines, their
    "Number:", "Topic:", "Description:", "Narrative:" prefixes dropped and whitespace runs
    collapsed; other tags (``<dom>``, ``<con>``, ...) are ignored and closing tags optional.
    The qid is the ``<num>`` text verbatim (leading zeros kept, as qrels must match it).
    Anything else is TSV, ``qid<TAB>title`` with exactly two columns and no header; only here
    are lines starting with ``#`` comments. Absent texts are "", present ones are stripped.
    A topic's line is that of its JSON/TSV line or of its ``<top>``. Duplicate qids are
    errors; memory is one qid -> line entry per topic.
    """
    path = display_name(source, name)
    topics = unique(_topics(source, path), path, "qid", lambda topic: (topic.qid, topic.line))
    return nonempty(topics, path)


def _topics(source: Source, path: str) -> Iterator[Topic]:
    start, lines = peek(data_lines(source, path))
    if start.startswith("{"):
        for number, text in lines:
            record = json_object(text, path, number)
            yield Topic(
                qid=json_id(record, "qid", path, number),
                title=json_text(record, "title", path, number),
                description=json_text(record, "description", path, number),
                narrative=json_text(record, "narrative", path, number),
                line=number,
            )
    elif start.startswith("<"):
        yield from _sgml_topics(lines, path)
    else:
        for number, text in lines:
            if text.startswith("#"):
                continue
            columns = text.split("\t")
            if len(columns) != 2:
                raise tsv_column_count(path, number, ("qid", "title"), len(columns))
            qid = check_id(columns[0].strip(), "qid", path, number)
            yield Topic(qid, columns[1].strip(), "", "", number)


def _sgml_topics(lines: Iterator[tuple[int, str]], path: str) -> Iterator[Topic]:
    top: int | None = None  # line of the open <top>
    fields: dict[str, tuple[int, list[str]]] = {}  # tag -> (line of the tag, text pieces)
    current: str | None = None
    for number, text in lines:
        position = 0
        for match in [*_SGML_TAG.finditer(text), None]:
            chunk = text[position : len(text) if match is None else match.start()]
            if current is not None:
                fields[current][1].append(chunk)
            elif chunk.strip():
                where = "outside <top>" if top is None else "outside any field"
                raise TrecFormatError(path, number, None, f"text {where}: {chunk.strip()[:40]!r}")
            if match is None:
                break
            position = match.end()
            closing, tag = match.group(1) == "/", match.group(2).lower()
            if tag == "top" and not closing:
                if top is not None:
                    problem = f"<top> inside the topic opened on line {top} (missing </top>)"
                    raise TrecFormatError(path, number, None, problem)
                top, fields, current = number, {}, None
            elif top is None:
                raise TrecFormatError(path, number, None, f"{match.group(0)} outside <top>")
            elif tag == "top":
                yield _sgml_topic(fields, top, path)
                top, current = None, None
            elif closing:
                current = None
            elif tag in _SGML_PREFIX and tag in fields:
                problem = f"second <{tag}> in the topic opened on line {top}"
                raise TrecFormatError(path, number, tag, problem)
            else:
                fields[tag] = (number, [])
                current = tag
        if current is not None:
            fields[current][1].append("\n")
    if top is not None:
        raise TrecFormatError(path, top, None, "<top> is never closed (missing </top>)")


def _sgml_topic(fields: dict[str, tuple[int, list[str]]], top: int, path: str) -> Topic:
    def text(tag: str) -> str:
        pieces = fields.get(tag, (top, []))[1]
        return " ".join(_SGML_PREFIX[tag].sub("", "".join(pieces), count=1).split())

    if "num" not in fields:
        raise TrecFormatError(path, top, "num", "topic has no <num>")
    qid = check_id(text("num"), "num", path, fields["num"][0])
    return Topic(qid, text("title"), text("desc"), text("narr"), top)
