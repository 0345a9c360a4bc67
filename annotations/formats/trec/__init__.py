"""PURE: streaming, line-numbered readers and writers for TREC qrels, runs, topics and documents.

One module per format (`qrels`, `runs`, `topics`, `documents`) over the shared line source
(`lines`), field checks (`fields`) and error (`errors`); everything public is importable from
here, as `from annotations.formats.trec import read_run`.
"""

from annotations.formats.trec.documents import DocumentRecord, read_documents
from annotations.formats.trec.errors import TrecFormatError
from annotations.formats.trec.fields import (
    MAX_ID_LENGTH,
    RANK_RANGE,
    id_problem,
    qid_problem,
    text_problem,
)
from annotations.formats.trec.lines import MAX_LINE_BYTES, Source, TextSink, display_name
from annotations.formats.trec.qrels import QrelLine, qrels_text, read_qrels, write_qrels
from annotations.formats.trec.runs import RunLine, RunRow, read_run, read_run_blocks, write_run
from annotations.formats.trec.topics import Topic, read_topics

__all__ = [
    "MAX_ID_LENGTH",
    "MAX_LINE_BYTES",
    "RANK_RANGE",
    "DocumentRecord",
    "QrelLine",
    "RunLine",
    "RunRow",
    "Source",
    "TextSink",
    "Topic",
    "TrecFormatError",
    "display_name",
    "id_problem",
    "qid_problem",
    "qrels_text",
    "read_documents",
    "read_qrels",
    "read_run",
    "read_run_blocks",
    "read_topics",
    "text_problem",
    "write_qrels",
    "write_run",
]
