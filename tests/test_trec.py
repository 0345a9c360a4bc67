"""Tests for the TREC readers and writers: conventions, line-numbered errors, round trips."""

from __future__ import annotations

import io
import itertools
import math
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.formats.trec import (
    DocumentRecord,
    QrelLine,
    RunLine,
    Topic,
    TrecFormatError,
    read_documents,
    read_qrels,
    read_run,
    read_topics,
    write_qrels,
    write_run,
)
from annotations.formats.trec import lines as trec_lines

Reader = Callable[..., Iterator[Any]]
READERS: list[Reader] = [read_qrels, read_run, read_topics, read_documents]


def make_file(tmp_path: Path, content: str | bytes, name: str = "data.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def error_of(reader: Reader, path: Path, **options: Any) -> TrecFormatError:
    with pytest.raises(TrecFormatError) as caught:
        list(reader(path, **options))
    return caught.value


def assert_error(
    error: TrecFormatError, path: Path, line: int | None, field: str | None, *fragments: str
) -> None:
    assert (error.path, error.line, error.field) == (str(path), line, field)
    where = str(path) if line is None else f"{path}:{line}"
    expected_start = f"{where}: {field}: " if field is not None else f"{where}: "
    assert str(error).startswith(expected_start), str(error)
    for fragment in fragments:
        assert fragment in error.problem, error.problem


# TrecFormatError -------------------------------------------------------------------------


def test_error_message_reads_path_line_field_problem() -> None:
    error = TrecFormatError("runs/bm25.txt", 17, "score", "'abc' is not a number")
    assert str(error) == "runs/bm25.txt:17: score: 'abc' is not a number"
    assert isinstance(error, ValueError)


def test_error_message_omits_missing_line_and_field() -> None:
    assert str(TrecFormatError("qrels.txt", None, None, "file is empty")) == (
        "qrels.txt: file is empty"
    )


def test_error_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(TrecFormatError("q.txt", 3, "grade", "bad")))
    assert (error.path, error.line, error.field, error.problem) == ("q.txt", 3, "grade", "bad")
    assert str(error) == "q.txt:3: grade: bad"


# Line source shared by every reader ------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("content", [b"", b"\n", b"  \n\t\n\r\n"])
def test_empty_file_is_an_error(tmp_path: Path, reader: Reader, content: bytes) -> None:
    path = make_file(tmp_path, content)
    error = error_of(reader, path)
    assert_error(error, path, None, None)
    assert str(error) == f"{path}: file is empty"


@pytest.mark.parametrize("reader", READERS)
def test_invalid_utf8_names_line_byte_and_column(tmp_path: Path, reader: Reader) -> None:
    # One valid line of each layout is not needed: decoding fails before any parsing.
    path = make_file(tmp_path, b"\n\n1\t\xc3\xa9t\xe9\n")
    error = error_of(reader, path)
    assert_error(error, path, 3, None)
    assert error.problem == "not valid UTF-8 (byte 0xe9 at column 5)"


def test_invalid_utf8_is_raised_only_when_its_line_is_reached(tmp_path: Path) -> None:
    path = make_file(tmp_path, b"1 0 d1 1\n1 0 d\xff 1\n")
    qrels = read_qrels(path)
    assert next(qrels).docno == "d1"
    with pytest.raises(TrecFormatError) as caught:
        next(qrels)
    assert caught.value.line == 2


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    path = make_file(tmp_path, "\ufeff301 0 d1 1\n")
    assert [line.qid for line in read_qrels(path)] == ["301"]


def test_utf8_bom_is_stripped_before_format_detection(tmp_path: Path) -> None:
    path = make_file(tmp_path, '\ufeff{"qid": "1", "title": "cats"}\n')
    assert list(read_topics(path)) == [Topic("1", "cats", "", "", 1)]


def test_bom_after_the_first_line_is_data(tmp_path: Path) -> None:
    path = make_file(tmp_path, "1\tcats\n\ufeff2\tdogs\n")
    assert [topic.qid for topic in read_topics(path)] == ["1", "\ufeff2"]


def test_crlf_line_endings_and_non_ascii_ids(tmp_path: Path) -> None:
    path = make_file(tmp_path, "q\u00e9 Q0 d\u00f6c 1 2.5 run\r\n")
    assert list(read_run(path)) == [RunLine("q\u00e9", "d\u00f6c", 1, 2.5, "run", 1)]


def test_accepts_str_path_and_reports_it(tmp_path: Path) -> None:
    path = make_file(tmp_path, "1 0 d1 x\n")
    error = error_of(read_qrels, str(path))  # type: ignore[arg-type]
    assert error.path == str(path)


def test_accepts_open_binary_file_with_display_name() -> None:
    stream = io.BytesIO(b"1 0 d1 1\n1 0 d2 x\n")
    with pytest.raises(TrecFormatError) as caught:
        list(read_qrels(stream, name="upload/qrels.txt"))
    assert str(caught.value) == "upload/qrels.txt:2: grade: 'x' is not an integer"
    assert not stream.closed  # the caller owns the stream


def test_open_file_without_name_uses_its_name_attribute(tmp_path: Path) -> None:
    path = make_file(tmp_path, "")
    with path.open("rb") as stream:
        assert error_of(read_qrels, stream).path == str(path)  # type: ignore[arg-type]
    with pytest.raises(TrecFormatError, match=r"^<stream>: file is empty$"):
        list(read_qrels(io.BytesIO(b"")))


def test_text_mode_file_is_rejected() -> None:
    with pytest.raises(TypeError, match="binary mode"):
        list(read_qrels(io.StringIO("1 0 d1 1\n")))  # type: ignore[arg-type]


def test_missing_file_raises_when_iteration_starts(tmp_path: Path) -> None:
    lines = read_run(tmp_path / "missing.txt")  # nothing is opened yet
    with pytest.raises(FileNotFoundError):
        next(lines)


def test_overlong_line_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trec_lines, "MAX_LINE_BYTES", 16)
    path = make_file(tmp_path, "1 0 d1 1\n1 0 d-with-a-long-name 1\n")
    error = error_of(read_qrels, path)
    assert_error(error, path, 2, None, "longer than 16 bytes")


class CountingStream(io.BytesIO):
    """A binary stream that records how far it has been read."""

    furthest = 0

    def readline(self, size: int | None = -1, /) -> bytes:
        line = super().readline(size)
        self.furthest = max(self.furthest, self.tell())
        return line


def test_readers_stream_records_before_reading_the_rest() -> None:
    body = b"".join(b"1 Q0 d%d %d 1.0 run\n" % (i, i) for i in range(1000)) + b"bad line\n"
    stream = CountingStream(body)
    run = read_run(stream, name="run.txt")
    first = next(run)
    assert first == RunLine("1", "d0", 0, 1.0, "run", 1)
    assert stream.furthest < 100  # only the first line has been read
    for _ in range(999):
        next(run)
    with pytest.raises(TrecFormatError) as caught:
        next(run)
    assert caught.value.line == 1001


# Qrels -----------------------------------------------------------------------------------


def test_read_qrels_yields_judgements_with_their_line_numbers(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 0 FT1 2\n\n301\t0\tFT2 0\n  302 Q0 FT1   -1  \n")
    assert list(read_qrels(path)) == [
        QrelLine("301", "0", "FT1", 2, 1),
        QrelLine("301", "0", "FT2", 0, 3),
        QrelLine("302", "Q0", "FT1", -1, 4),
    ]


@pytest.mark.parametrize("line", ["301 0 FT1", "301 0 FT1 2 extra", "301"])
def test_qrels_wrong_column_count(tmp_path: Path, line: str) -> None:
    path = make_file(tmp_path, f"301 0 FT0 1\n{line}\n")
    error = error_of(read_qrels, path)
    found = len(line.split())
    assert_error(error, path, 2, None, f"expected 4 columns (qid iter docno grade), found {found}")


def test_qrels_comment_lines_are_skipped_as_trec_eval_skips_them(tmp_path: Path) -> None:
    # trec_eval's own qrels.test.with-comments: '#' lines anywhere, with any column count
    path = make_file(tmp_path, "# qid iter docno grade\n301 0 FT1 1\n#301 0 FT2 2\n  # x\n")
    assert [(line.docno, line.grade, line.line) for line in read_qrels(path)] == [("FT1", 1, 2)]
    only = make_file(tmp_path, "# nothing but a comment\n", name="only.qrels")
    assert_error(error_of(read_qrels, only), only, None, None, "file is empty")


@pytest.mark.parametrize(("grade", "value"), [("1.0", 1), ("2.", 2), ("-1.00", -1), ("+3", 3)])
def test_qrels_integral_decimal_grades_read_as_integers(
    tmp_path: Path, grade: str, value: int
) -> None:
    path = make_file(tmp_path, f"301 0 FT1 {grade}\n")
    assert next(read_qrels(path)).grade == value


@pytest.mark.parametrize(
    ("grade", "problem"),
    [
        ("1.5", "'1.5' is not a whole number (grades are integers)"),
        ("1e2", "'1e2' is not a whole number (grades are integers)"),
        ("high", "'high' is not an integer"),
        ("0x1", "'0x1' is not an integer"),
        ("\u0661", "'\u0661' is not an integer"),
    ],
)
def test_qrels_grade_must_be_a_whole_number(tmp_path: Path, grade: str, problem: str) -> None:
    path = make_file(tmp_path, f"301 0 FT1 1\n301 0 FT2 {grade}\n")
    error = error_of(read_qrels, path)
    assert_error(error, path, 2, "grade", problem)


def test_qrels_grade_outside_the_scale_lists_the_allowed_levels(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 0 FT1 2\n301 0 FT2 3\n")
    error = error_of(read_qrels, path, grades=range(3))
    assert_error(error, path, 2, "grade", "3 is not one of the allowed levels 0, 1, 2")


def test_qrels_grades_on_the_scale_are_accepted(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 0 FT1 2\n301 0 FT2 -1\n")
    assert [line.grade for line in read_qrels(path, grades={-1, 0, 1, 2})] == [2, -1]


def test_qrels_duplicate_judgement_names_the_first_line(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 0 FT1 1\n302 0 FT1 1\n\n301 0 FT1 0\n")
    error = error_of(read_qrels, path)
    assert_error(error, path, 4, "docno", "'FT1' is judged twice for qid '301', first on line 1")


def test_qrels_duplicates_are_found_however_the_lines_are_ordered(tmp_path: Path) -> None:
    """Grouped by qid, interleaved, a qid coming back several times: every duplicate is the
    error at its line naming the first; a file without one reads whole."""
    lines = [f"q{q} 0 d{d} 1" for d in range(40) for q in range(3)]  # interleaved by docno
    assert len(list(read_qrels(make_file(tmp_path, "\n".join(lines)), name="i"))) == 120
    again = [*lines, "q1 0 d7 0"]  # q1's d7 was line 3 * 7 + 2
    error = error_of(read_qrels, make_file(tmp_path, "\n".join(again), name="again.txt"))
    assert_error(
        error,
        tmp_path / "again.txt",
        121,
        "docno",
        "'d7' is judged twice for qid 'q1', first on line 23",
    )
    grouped = [f"q{q} 0 d{d} 1" for q in range(3) for d in range(40)]
    twice = [*grouped[:50], "q0 0 d39 2", *grouped[50:]]  # q0's group ended on line 40
    error = error_of(read_qrels, make_file(tmp_path, "\n".join(twice), name="twice.txt"))
    assert_error(
        error,
        tmp_path / "twice.txt",
        51,
        "docno",
        "'d39' is judged twice for qid 'q0', first on line 40",
    )


def test_qrels_duplicate_check_holds_a_few_bytes_a_line(tmp_path: Path) -> None:
    """Judgements grouped by qid, read whole: the reader's peak Python allocations grow by
    under 40 bytes a judgement (a (qid, docno) -> line dict grew by about 250)."""
    import tracemalloc

    def peak(queries: int) -> int:
        text = "".join(
            f"{q} 0 doc-{q}-{d:06d} {d % 4}\n" for q in range(queries) for d in range(1000)
        )
        path = make_file(tmp_path, text, name=f"q{queries}.txt")
        tracemalloc.start()
        try:
            assert sum(1 for _ in read_qrels(path)) == queries * 1000
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(50), peak(250)
    assert (large - small) / 200_000 < 40, (small, large)


def test_qrels_id_longer_than_the_limit(tmp_path: Path) -> None:
    path = make_file(tmp_path, f"301 0 {'d' * 201} 1\n")
    assert_error(error_of(read_qrels, path), path, 1, "docno", "longer than 200 characters")
    path = make_file(tmp_path, f"301 0 {'d' * 200} 1\n")
    assert next(read_qrels(path)).docno == "d" * 200


# Runs ------------------------------------------------------------------------------------


def test_read_run_yields_lines(tmp_path: Path) -> None:
    path = make_file(
        tmp_path, "301 Q0 FT1 1 12.5 bm25\n301 Q0 FT2 2 -3e2 bm25\n302 0 FT1 0 7 bm25\n"
    )
    assert list(read_run(path)) == [
        RunLine("301", "FT1", 1, 12.5, "bm25", 1),
        RunLine("301", "FT2", 2, -300.0, "bm25", 2),
        RunLine("302", "FT1", 0, 7.0, "bm25", 3),
    ]


def test_run_text_after_the_tag_is_ignored_as_trec_eval_ignores_it(tmp_path: Path) -> None:
    # trec_eval's own results.trunc carries text after the run tag
    path = make_file(tmp_path, "301 Q0 FT1 1 2.0 bm25 trailing words\n301 Q0 FT2 2 1.0 bm25 x\n")
    assert [(line.docno, line.tag) for line in read_run(path)] == [("FT1", "bm25"), ("FT2", "bm25")]


@pytest.mark.parametrize("line", ["301 Q0 FT1 1 1.0", "301 Q0 FT1"])
def test_run_wrong_column_count(tmp_path: Path, line: str) -> None:
    path = make_file(tmp_path, f"301 Q0 FT0 1 2.0 bm25\n\n{line}\n")
    found = len(line.split())
    error = error_of(read_run, path)
    assert_error(
        error, path, 3, None, f"expected 6 columns (qid Q0 docno rank score tag), found {found}"
    )


@pytest.mark.parametrize(
    "rank", ["1.5", "first", "2147483648", "-2147483649", "99999999999999999999", "0x1"]
)
def test_a_run_rank_that_is_not_a_32_bit_integer_is_ignored(tmp_path: Path, rank: str) -> None:
    """The rank is informational (trec_eval orders by score): not an error, read as None."""
    path = make_file(tmp_path, f"301 Q0 FT1 {rank} 2.0 bm25\n301 Q0 FT2 -7 1.0 bm25\n")
    assert [(line.rank, line.line) for line in read_run(path)] == [(None, 1), (-7, 2)]


def test_32_bit_ranks_are_kept_as_written(tmp_path: Path) -> None:
    path = make_file(tmp_path, "1 Q0 a 2147483647 1 r\n1 Q0 b -2147483648 2 r\n1 Q0 c +07 3 r\n")
    assert [line.rank for line in read_run(path)] == [2**31 - 1, -(2**31), 7]


@pytest.mark.parametrize("score", ["abc", "1,5", "1_000", "0x1p3", "--1"])
def test_run_score_must_be_a_decimal_number(tmp_path: Path, score: str) -> None:
    path = make_file(tmp_path, f"301 Q0 FT1 1 2.0 bm25\n301 Q0 FT2 2 {score} bm25\n", "bm25.txt")
    error = error_of(read_run, path)
    assert_error(error, path, 2, "score", f"{score!r} is not a number")
    assert str(error) == f"{path}:2: score: {score!r} is not a number"


@pytest.mark.parametrize("score", ["nan", "NaN", "-nan", "inf", "-Infinity", "+inf"])
def test_run_score_must_be_finite(tmp_path: Path, score: str) -> None:
    path = make_file(tmp_path, f"301 Q0 FT1 1 {score} bm25\n")
    assert_error(error_of(read_run, path), path, 1, "score", f"{score!r} is not a finite number")


def test_run_score_overflowing_a_double_is_an_error(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 Q0 FT1 1 1e999 bm25\n")
    assert_error(error_of(read_run, path), path, 1, "score", "'1e999' is too large for a float")


def test_run_mixed_tags_name_the_line_and_both_tags(tmp_path: Path) -> None:
    path = make_file(
        tmp_path, "301 Q0 FT1 1 2.0 bm25\n301 Q0 FT2 2 1.0 bm25\n302 Q0 FT1 1 1.0 dph\n"
    )
    error = error_of(read_run, path)
    assert_error(error, path, 3, "tag", "'dph' differs from 'bm25' on line 1")


def test_run_duplicate_doc_in_a_query_names_the_first_line(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 Q0 FT1 1 2.0 r\n301 Q0 FT2 2 1.0 r\n301 Q0 FT1 3 0.5 r\n")
    error = error_of(read_run, path)
    assert_error(error, path, 3, "docno", "'FT1' is retrieved twice for qid '301', first on line 1")


def test_run_duplicate_is_found_when_a_query_reappears_later(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 Q0 FT1 1 2.0 r\n302 Q0 FT1 1 2.0 r\n301 Q0 FT1 2 1.0 r\n")
    assert_error(error_of(read_run, path), path, 3, "docno", "first on line 1")


def test_run_same_doc_under_different_queries_is_fine(tmp_path: Path) -> None:
    path = make_file(tmp_path, "301 Q0 FT1 1 2.0 r\n302 Q0 FT1 1 2.0 r\n301 Q0 FT2 2 1.0 r\n")
    assert [(line.qid, line.docno) for line in read_run(path)] == [
        ("301", "FT1"),
        ("302", "FT1"),
        ("301", "FT2"),
    ]


def test_run_comment_lines_are_skipped_as_trec_eval_skips_them(tmp_path: Path) -> None:
    path = make_file(tmp_path, "# a comment\n#1 Q0 FT1 1 2.0 r\n  #x\n301 Q0 FT1 1 2.0 r\n")
    assert [(line.qid, line.line) for line in read_run(path)] == [("301", 4)]


# Topics ----------------------------------------------------------------------------------

SGML_TOPICS = """\
<top>

<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in
international criminal activity.

<narr> Narrative:
A relevant document must as a minimum
identify the organization.

</top>

<top>
<head> Tipster Topic Description
<num> Number: 051
<dom> Domain: International Economics
<title> Topic: Airbus Subsidies
<desc> Description:
Document will discuss government assistance to Airbus Industrie.
</top>
<top><num>302</num><title>Poliomyelitis and Post-Polio</title></top>
"""


def test_topics_in_trec_sgml(tmp_path: Path) -> None:
    path = make_file(tmp_path, SGML_TOPICS)
    assert list(read_topics(path)) == [
        Topic(
            "301",
            "International Organized Crime",
            "Identify organizations that participate in international criminal activity.",
            "A relevant document must as a minimum identify the organization.",
            1,
        ),
        Topic(
            "051",
            "Airbus Subsidies",
            "Document will discuss government assistance to Airbus Industrie.",
            "",
            16,
        ),
        Topic("302", "Poliomyelitis and Post-Polio", "", "", 24),
    ]


def test_topics_in_jsonl(tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        '{"qid": "q1", "title": " cats ", "description": "About cats.", "lang": "en"}\n'
        "\n"
        '{"qid": 2, "narrative": "Dogs only.", "title": null}\n',
    )
    assert list(read_topics(path)) == [
        Topic("q1", "cats", "About cats.", "", 1),
        Topic("2", "", "", "Dogs only.", 3),
    ]


def test_topics_in_tsv_with_comments(tmp_path: Path) -> None:
    path = make_file(tmp_path, "# qid\ttitle\n301\tinternational crime\n# more\n302\t polio \n")
    assert list(read_topics(path)) == [
        Topic("301", "international crime", "", "", 2),
        Topic("302", "polio", "", "", 4),
    ]


@pytest.mark.parametrize("line", ["301", "301\tcrime\textra", "301 crime"])
def test_topics_tsv_wrong_column_count(tmp_path: Path, line: str) -> None:
    path = make_file(tmp_path, f"300\tok\n{line}\n")
    error = error_of(read_topics, path)
    found = line.count("\t") + 1
    assert_error(
        error, path, 2, None, f"expected 2 tab-separated columns (qid, title), found {found}"
    )


def test_topics_tsv_with_only_comments_is_empty(tmp_path: Path) -> None:
    path = make_file(tmp_path, "# nothing here\n")
    assert str(error_of(read_topics, path)) == f"{path}: file is empty"


def test_topics_invalid_json_names_line_and_json_error(tmp_path: Path) -> None:
    path = make_file(tmp_path, '{"qid": "1"}\n{"qid": "2",}\n')
    error = error_of(read_topics, path)
    assert_error(error, path, 2, None, "invalid JSON: Expecting property name enclosed in double")


def test_topics_json_line_must_be_an_object(tmp_path: Path) -> None:
    path = make_file(tmp_path, '{"qid": "1"}\n["2", "dogs"]\n')
    assert_error(
        error_of(read_topics, path), path, 2, None, "expected a JSON object, found an array"
    )


@pytest.mark.parametrize(
    ("record", "field", "fragment"),
    [
        ('{"title": "cats"}', "qid", "is required"),
        ('{"qid": null}', "qid", "is required"),
        ('{"qid": ""}', "qid", "must not be empty"),
        ('{"qid": "a b"}', "qid", "contains whitespace"),
        ('{"qid": true}', "qid", "must be a string or an integer, found a boolean"),
        ('{"qid": 1.5}', "qid", "must be a string or an integer, found a number"),
        ('{"qid": "1", "title": 5}', "title", "must be a string, found a number"),
        ('{"qid": "1", "narrative": ["x"]}', "narrative", "must be a string, found an array"),
    ],
)
def test_topics_json_field_errors(tmp_path: Path, record: str, field: str, fragment: str) -> None:
    path = make_file(tmp_path, f'{{"qid": "0"}}\n{record}\n')
    assert_error(error_of(read_topics, path), path, 2, field, fragment)


def test_topics_deeply_nested_json_is_a_format_error(tmp_path: Path) -> None:
    path = make_file(tmp_path, '{"qid": ' + "[" * 100_000 + "\n")
    assert_error(error_of(read_topics, path), path, 1, None, "invalid JSON")


@pytest.mark.parametrize(
    "content",
    [
        '{"qid": "7"}\n{"qid": "8"}\n{"qid": 7}\n',
        "7\ta\n8\tb\n7\tc\n",
        "<top><num>7</top>\n<top><num>8</top>\n<top><num>7</top>\n",
    ],
    ids=["jsonl", "tsv", "sgml"],
)
def test_topics_duplicate_qid_names_the_first_line(tmp_path: Path, content: str) -> None:
    path = make_file(tmp_path, content)
    assert_error(error_of(read_topics, path), path, 3, "qid", "duplicate '7', first on line 1")


def test_topics_sgml_duplicate_on_one_line_is_still_found(tmp_path: Path) -> None:
    path = make_file(tmp_path, "<top><num>7</top><top><num>7</top>\n")
    assert_error(error_of(read_topics, path), path, 1, "qid", "duplicate '7', first on line 1")


def test_topics_sgml_unclosed_top_names_its_line(tmp_path: Path) -> None:
    path = make_file(tmp_path, "<top>\n<num> 1\n</top>\n<top>\n<num> 2\n<title> x\n")
    topics = read_topics(path)
    assert next(topics).qid == "1"
    with pytest.raises(TrecFormatError) as caught:
        next(topics)
    assert_error(caught.value, path, 4, None, "<top> is never closed")


def test_topics_sgml_nested_top(tmp_path: Path) -> None:
    path = make_file(tmp_path, "<top>\n<num> 1\n<top>\n")
    assert_error(error_of(read_topics, path), path, 3, None, "opened on line 1 (missing </top>)")


def test_topics_sgml_missing_num(tmp_path: Path) -> None:
    path = make_file(tmp_path, "<top><num>1</top>\n\n<top>\n<title> cats\n</top>\n")
    assert_error(error_of(read_topics, path), path, 3, "num", "topic has no <num>")


def test_topics_sgml_empty_num(tmp_path: Path) -> None:
    path = make_file(tmp_path, "<top>\n<num> Number:\n<title> cats\n</top>\n")
    assert_error(error_of(read_topics, path), path, 2, "num", "must not be empty")


def test_topics_sgml_second_title(tmp_path: Path) -> None:
    path = make_file(tmp_path, "<top>\n<num> 1\n<title> cats\n<title> dogs\n</top>\n")
    assert_error(error_of(read_topics, path), path, 4, "title", "second <title>")


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("<top><num>1</top>\nstray text\n", 2, "text outside <top>: 'stray text'"),
        ("<top>\nstray\n<num>1</top>\n", 2, "text outside any field: 'stray'"),
        ("<num>1\n", 1, "<num> outside <top>"),
        ("<top><num>1</top>\n</top>\n", 2, "</top> outside <top>"),
    ],
)
def test_topics_sgml_structure_errors(
    tmp_path: Path, content: str, line: int, fragment: str
) -> None:
    path = make_file(tmp_path, content)
    assert_error(error_of(read_topics, path), path, line, None, fragment)


# Documents -------------------------------------------------------------------------------


def test_documents_in_jsonl(tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        '{"docno": "d1", "title": "Cats", "text": "Cats purr.", "url": "https://x.test/1"}\n'
        '{"docno": 2, "text": "Dogs bark.", "extra": [1]}\n',
    )
    assert list(read_documents(path)) == [
        DocumentRecord("d1", "Cats", "Cats purr.", "https://x.test/1", 1),
        DocumentRecord("2", "", "Dogs bark.", "", 2),
    ]


def test_documents_in_two_column_tsv(tmp_path: Path) -> None:
    path = make_file(tmp_path, "d1\tCats purr.\n\nd2\tDogs bark, {loudly}.\n")
    assert list(read_documents(path)) == [
        DocumentRecord("d1", "", "Cats purr.", "", 1),
        DocumentRecord("d2", "", "Dogs bark, {loudly}.", "", 3),
    ]


def test_documents_in_three_column_tsv(tmp_path: Path) -> None:
    path = make_file(tmp_path, "d1\tCats\tCats purr.\nd2\t\tUntitled.\n")
    assert list(read_documents(path)) == [
        DocumentRecord("d1", "Cats", "Cats purr.", "", 1),
        DocumentRecord("d2", "", "Untitled.", "", 2),
    ]


def test_documents_tsv_layout_must_not_change(tmp_path: Path) -> None:
    path = make_file(tmp_path, "d1\tCats\tCats purr.\nd2\tDogs bark.\n")
    error = error_of(read_documents, path)
    assert_error(
        error,
        path,
        2,
        None,
        "expected 3 tab-separated columns (docno, title, text), found 2, unlike line 1",
    )


@pytest.mark.parametrize("line", ["d1", "d1\ta\tb\tc"])
def test_documents_tsv_column_count(tmp_path: Path, line: str) -> None:
    path = make_file(tmp_path, f"\n{line}\n")
    error = error_of(read_documents, path)
    found = line.count("\t") + 1
    assert_error(error, path, 2, None, "expected 2 (docno, text) or 3 (docno, title, text)")
    assert error.problem.endswith(f"found {found}")


def test_documents_invalid_json_names_line_and_json_error(tmp_path: Path) -> None:
    path = make_file(tmp_path, '{"docno": "d1"}\n{"docno": "d2", "text": "unterminated}\n')
    error = error_of(read_documents, path)
    assert_error(error, path, 2, None, "invalid JSON: Unterminated string starting at")


@pytest.mark.parametrize(
    ("record", "field", "fragment"),
    [
        ('{"text": "no id"}', "docno", "is required"),
        ('{"docno": "d 2"}', "docno", "contains whitespace"),
        ('{"docno": "d2", "url": 3}', "url", "must be a string, found a number"),
        ('{"docno": "d2", "text": {"a": 1}}', "text", "must be a string, found an object"),
    ],
)
def test_documents_json_field_errors(
    tmp_path: Path, record: str, field: str, fragment: str
) -> None:
    path = make_file(tmp_path, f'{{"docno": "d1"}}\n{record}\n')
    assert_error(error_of(read_documents, path), path, 2, field, fragment)


@pytest.mark.parametrize(
    "content", ['{"docno": "d1"}\n{"docno": "d2"}\n{"docno": "d1"}\n', "d1\ta\nd2\tb\nd1\tc\n"]
)
def test_documents_duplicate_docno_names_the_first_line(tmp_path: Path, content: str) -> None:
    path = make_file(tmp_path, content)
    assert_error(
        error_of(read_documents, path), path, 3, "docno", "duplicate 'd1', first on line 1"
    )


# Writers and round trips -----------------------------------------------------------------

AWKWARD_SCORES = [
    1e-300,
    0.1 + 0.2,
    -0.0,
    0.0,
    123456789.123456789,
    5e-324,
    1.7976931348623157e308,
    1 / 3,
    -2.5e16,
    42.0,
]


def test_write_qrels_format(tmp_path: Path) -> None:
    out = io.StringIO()
    assert write_qrels([("301", "FT1", 2), ("301", "FT2", 0)], out) == 2
    assert out.getvalue() == "301 0 FT1 2\n301 0 FT2 0\n"


def test_write_run_format() -> None:
    out = io.StringIO()
    assert write_run([("301", "FT1", 1, 0.1 + 0.2, "bm25"), ("301", "FT2", 2, 3, "bm25")], out) == 2
    assert out.getvalue() == "301 Q0 FT1 1 0.30000000000000004 bm25\n301 Q0 FT2 2 3.0 bm25\n"


def test_qrels_round_trip(tmp_path: Path) -> None:
    rows = [("301", "FT1", 2), ("301", "FT2", 0), ("q\u00e9", "d-1", -1)]
    path = tmp_path / "qrels.txt"
    with path.open("w", encoding="utf-8") as out:
        write_qrels(rows, out)
    assert [(line.qid, line.docno, line.grade) for line in read_qrels(path)] == rows


def test_run_round_trip_preserves_every_bit_of_the_score(tmp_path: Path) -> None:
    rows = [("301", f"d{i}", i + 1, score, "bm25") for i, score in enumerate(AWKWARD_SCORES)]
    path = tmp_path / "run.txt"
    with path.open("w", encoding="utf-8") as out:
        write_run(rows, out)
    back = [(r.qid, r.docno, r.rank, r.score.hex(), r.tag) for r in read_run(path)]
    assert back == [(q, d, rank, score.hex(), tag) for q, d, rank, score, tag in rows]


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_run_round_trip_of_any_finite_float(score: float) -> None:
    out = io.StringIO()
    write_run([("1", "d", 1, score, "t")], out)
    [line] = read_run(io.BytesIO(out.getvalue().encode()))
    assert line.score.hex() == score.hex()


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        (("301", "FT1", 1, math.nan, "r"), "row 1: score: nan is not a finite number"),
        (("301", "FT1", 1, math.inf, "r"), "row 1: score: inf is not a finite number"),
        (("301", "FT1", 1, None, "r"), "row 1: score: None is not a number"),
        (("301", "FT1", 1, True, "r"), "row 1: score: True is not a number"),
        (("301", "FT1", 1.0, 1.0, "r"), "row 1: rank: 1.0 is not an integer"),
        (("3 01", "FT1", 1, 1.0, "r"), "row 1: qid: '3 01' contains whitespace"),
        (("301", "", 1, 1.0, "r"), "row 1: docno: must not be empty"),
        (("301", "FT1", 1, 1.0, "my run"), "row 1: tag: 'my run' contains whitespace"),
    ],
)
def test_write_run_rejects_rows_it_could_not_read_back(row: tuple[Any, ...], fragment: str) -> None:
    with pytest.raises(ValueError) as caught:
        write_run([row], io.StringIO())
    assert str(caught.value) == fragment


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("301", "FT1", True), "row 2: grade: True is not an integer"),
        (("301", "FT1", "1"), "row 2: grade: '1' is not an integer"),
        (("301", "F\tT1", 1), "row 2: docno: 'F\\tT1' contains whitespace"),
        ((301, "FT1", 1), "row 2: qid: 301 is not a string"),
    ],
)
def test_write_qrels_rejects_rows_it_could_not_read_back(
    row: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        write_qrels([("300", "FT0", 1), row], io.StringIO())
    assert str(caught.value) == message


def _decode_line_by_line(data: bytes, path: str) -> Iterator[tuple[int, str]]:
    """The reference: lines read one at a time, as `readline` gives them."""
    stream = io.BytesIO(data)
    for number in itertools.count(1):
        raw = stream.readline(trec_lines.MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > trec_lines.MAX_LINE_BYTES:
            problem = f"line longer than {trec_lines.MAX_LINE_BYTES} bytes"
            raise TrecFormatError(path, number, None, problem)
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        raw = raw.rstrip(b"\r\n")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            column = len(raw[: error.start].decode("utf-8")) + 1
            problem = f"not valid UTF-8 (byte 0x{raw[error.start]:02x} at column {column})"
            raise TrecFormatError(path, number, None, problem) from None
        yield number, text


def _outcome(lines: Iterator[tuple[int, str]]) -> tuple[list[tuple[int, str]], str | None]:
    """What a reader sees: the lines yielded, then the error (if any)."""
    seen: list[tuple[int, str]] = []
    try:
        for line in lines:
            seen.append(line)
    except TrecFormatError as error:
        return seen, str(error)
    return seen, None


PIECES = [b"a", b"b ", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b"\xc3", b"\xff", b"\xef\xbb\xbf"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=60),
    st.integers(min_value=1, max_value=9),
    st.integers(min_value=2, max_value=12),
)
def test_block_decoding_yields_and_fails_exactly_like_reading_line_by_line(
    pieces: list[bytes], block: int, longest: int
) -> None:
    """Lines are decoded a block at a time; what a reader sees (lines, then the first error
    with its line and column) is the same as reading and decoding one line at a time."""
    data = b"".join(pieces)
    saved = trec_lines._BLOCK_BYTES, trec_lines.MAX_LINE_BYTES
    trec_lines._BLOCK_BYTES, trec_lines.MAX_LINE_BYTES = block, longest
    try:
        blocks = _outcome(trec_lines.numbered_lines(io.BytesIO(data), "f.txt"))
        reference = _outcome(_decode_line_by_line(data, "f.txt"))
    finally:
        trec_lines._BLOCK_BYTES, trec_lines.MAX_LINE_BYTES = saved
    assert blocks == reference


# Several tags ----------------------------------------------------------------------------

_TAGGED_LINE = st.tuples(
    st.sampled_from(["q1", "q2", "10"]),
    st.sampled_from(["d1", "d2", "d3", "D1"]),
    st.sampled_from(["1", "2", "x", "2147483648"]),
    st.sampled_from(["1.5", "-0", "3", "2e1"]),
    st.sampled_from(["a", "b", "run.c"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TAGGED_LINE, min_size=1, max_size=12))
def test_splitting_tags_reads_each_tag_as_its_own_file_would_read(
    rows: list[tuple[str, str, str, str, str]],
) -> None:
    """A file read with split_tags gives, for each tag, exactly the lines the file of that
    tag's lines alone gives (the other lines blanked, so line numbers stay); its first error
    is the first error of one of those files, at the same line."""
    text = "".join(f"{q} Q0 {d} {r} {s} {t}\n" for q, d, r, s, t in rows)

    def outcome(data: str, split: bool) -> tuple[list[tuple[object, ...]], tuple[int, str] | None]:
        read: list[tuple[object, ...]] = []
        try:
            for line in read_run(io.BytesIO(data.encode()), name="f", split_tags=split):
                read.append((line.tag, line.qid, line.docno, line.rank, line.score, line.line))
        except TrecFormatError as error:
            assert error.line is not None
            return read, (error.line, error.problem.split(" (tag ")[0])
        return read, None

    split, error = outcome(text, True)
    alone = {
        tag: outcome(
            "".join(line if line.split()[5] == tag else "\n" for line in text.splitlines(True)),
            False,
        )
        for tag in {row[4] for row in rows}
    }
    if error is None:
        for tag, (lines, alone_error) in alone.items():
            assert alone_error is None
            assert [line for line in split if line[0] == tag] == lines
    else:
        assert error in [alone_error for _, alone_error in alone.values()]
        assert error[0] == min(e[0] for _, e in alone.values() if e is not None)
