"""Document files (JSONL or TSV) read into documents."""

from __future__ import annotations

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


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    docno: str
    title: str
    text: str
    url: str
    line: int


def read_documents(source: Source, *, name: str | None = None) -> Iterator[DocumentRecord]:
    """Yield the documents of a JSONL or TSV file, detected from its first data line.

    JSONL (first line starts with ``{``): "docno" (non-empty string or integer) is required;
    "title", "text", "url" are optional strings (null counts as absent); other keys are
    ignored. TSV, no header, ``#`` lines are data: either ``docno<TAB>text`` (2 columns) or
    ``docno<TAB>title<TAB>text`` (3 columns), decided by the first line and then required of
    every line. Absent fields are "", present ones are stripped. Duplicate docnos are errors;
    memory is one docno -> line entry per document (ids only, never the text).
    """
    path = display_name(source, name)
    documents = unique(
        _documents(source, path), path, "docno", lambda document: (document.docno, document.line)
    )
    return nonempty(documents, path)


def _documents(source: Source, path: str) -> Iterator[DocumentRecord]:
    start, lines = peek(data_lines(source, path))
    if start.startswith("{"):
        for number, text in lines:
            record = json_object(text, path, number)
            yield DocumentRecord(
                docno=json_id(record, "docno", path, number),
                title=json_text(record, "title", path, number),
                text=json_text(record, "text", path, number),
                url=json_text(record, "url", path, number),
                line=number,
            )
        return
    layout: tuple[tuple[str, ...], int] | None = None  # (column names, line that set them)
    for number, text in lines:
        columns = text.split("\t")
        if layout is None:
            if len(columns) not in (2, 3):
                problem = "expected 2 (docno, text) or 3 (docno, title, text) tab-separated"
                found = f"columns, found {len(columns)}"
                raise TrecFormatError(path, number, None, f"{problem} {found}")
            names = ("docno", "text") if len(columns) == 2 else ("docno", "title", "text")
            layout = (names, number)
        elif len(columns) != len(layout[0]):
            raise tsv_column_count(path, number, layout[0], len(columns), layout[1])
        docno = check_id(columns[0].strip(), "docno", path, number)
        title = columns[1].strip() if len(columns) == 3 else ""
        yield DocumentRecord(docno, title, columns[-1].strip(), "", number)
