"""Tests for the columnar run reader: the same results as the line reader, or none at all."""

from __future__ import annotations

import io
import struct
from collections import defaultdict

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from annotations.formats import run_arrow, trec
from annotations.formats.run_arrow import read_run_columns, read_run_tag_columns
from annotations.metrics import ndcg

Results = dict[str, list[tuple[str, float, int | None]]]


def line_reader_results(data: bytes) -> Results | None:
    """What the line reader makes of a file, in effective order; None if it refuses it."""
    by_query: dict[str, list[tuple[str, float, int | None]]] = defaultdict(list)
    try:
        for line in trec.read_run(io.BytesIO(data), name="run.txt"):
            by_query[line.qid].append((line.docno, line.score, line.rank))
    except trec.TrecFormatError:
        return None
    return {qid: ndcg.order_results(rows) for qid, rows in by_query.items()}


def line_reader_tag_results(data: bytes) -> dict[str, Results] | None:
    """The line reader's runs with ``split_tags``: {tag: results}, tags in file order."""
    by_tag: dict[str, dict[str, list[tuple[str, float, int | None]]]] = {}
    try:
        for line in trec.read_run(io.BytesIO(data), name="run.txt", split_tags=True):
            by_tag.setdefault(line.tag, defaultdict(list))[line.qid].append(
                (line.docno, line.score, line.rank)
            )
    except trec.TrecFormatError:
        return None
    return {
        tag: {qid: ndcg.order_results(rows) for qid, rows in results.items()}
        for tag, results in by_tag.items()
    }


def columnar_tag_results(data: bytes) -> dict[str, Results] | None:
    runs = read_run_tag_columns(data)
    return None if runs is None else {run.tag: run.results() for run in runs}


def columnar_results(data: bytes) -> Results | None:
    columns = read_run_columns(data)
    return None if columns is None else columns.results()


def bits(results: Results) -> dict[str, list[tuple[str, bytes, int]]]:
    """Scores as their IEEE bytes: -0.0 and 0.0 differ, as they do once stored."""
    return {
        qid: [(docno, struct.pack("<d", score), rank) for docno, score, rank in rows]
        for qid, rows in results.items()
    }


def test_a_plain_file_is_read_into_effective_order_per_query() -> None:
    data = (
        b"q2 Q0 b 1 2.0 sys\n"
        b"q1 Q0 a 1 1.5 sys\n"
        b"q1 Q0 B 2 1.5 sys\n"  # tie on score: docno descending in byte order, "a" > "B"
        b"q1 Q0 aa 3 1.5 sys\n"
        b"q1 Q0 c 9 3 sys\n"
    )
    columns = read_run_columns(data)
    assert columns is not None
    assert (columns.tag, len(columns)) == ("sys", 5)
    assert columns.results() == {
        "q1": [("c", 3.0, 9), ("aa", 1.5, 3), ("a", 1.5, 1), ("B", 1.5, 2)],
        "q2": [("b", 2.0, 1)],
    }
    assert columns.results() == line_reader_results(data)


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbfq1 Q0 d1 1 1 sys\n",  # a byte order mark
        b"q1 Q0 d1 1 1 sys\r\nq1 Q0 d2 2 0.5 sys\r\n",  # Windows line ends
        b"\n\nq1 Q0 d1 1 1 sys\n\nq2 Q0 d1 1 1 sys",  # blank lines, no final newline
        b"q1 Q0 d1 +1 1. sys\nq1 Q0 d2 -2 .5 sys\nq1 Q0 d3 007 +1E-3 sys\n",  # number forms
        b"q1 Q0 d1 1 -0 sys\nq1 Q0 d2 2 0 sys\nq1 Q0 d3 3 0.0 sys\n",  # zero, signed and not
        b'q1 Q0 "d,1" 1 1 sys\nq1 Q0 d\\2 2 1 sys\n',  # quotes, commas, backslashes
        b"q1 Q0 d1 2147483647 1e308 sys\nq1 Q0 d2 -2147483648 4.9e-324 sys\n",  # the limits
    ],
)
def test_plain_variants_are_read_exactly_as_by_the_line_reader(data: bytes) -> None:
    expected = line_reader_results(data)
    assert expected is not None
    columnar = columnar_results(data)
    assert columnar is not None
    assert bits(columnar) == bits(expected)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n",
        b"q1\tQ0\td1\t1\t1\tsys\n",  # tabs: the line reader's job
        b"q1 Q0 d1  1 1 sys\n",  # doubled space
        b" q1 Q0 d1 1 1 sys\n",  # leading space
        b"q1 Q0 d1 1 1 sys \n",  # trailing space
        b"q1  d1 1 2.0 sys\n",  # five columns, a doubled space making a sixth, empty one
        b" q1 d1 1 2.0 sys\n",  # the same with a leading space
        b"q1 Q0 d1 1 2.0 \n",  # and with a trailing one
        b"q1 Q0 d1 1 1 sys\rq1 Q0 d2 2 1 sys\n",  # a carriage return alone
        b"q1 Q0 d\xc3\xa9 1 1 sys\n",  # not ASCII
        b"q1 Q0 d1 1 1\n",  # five columns
        b"q1 Q0 d1 1 1 sys extra\n",  # seven
        b"q1 Q0 d1 1 1 sys\nq1 Q0 d1 2 0.5 sys\n",  # a docno twice for one qid
        b"q1 Q0 d1 1 1 sys\nq2 Q0 d1 1 1 other\n",  # two tags
        b"q1 Q0 d1 1.0 1 sys\n",  # rank not an integer
        b"q1 Q0 d1 2147483648 1 sys\n",  # rank beyond 32 bits
        b"q1 Q0 d1 99999999999999999999 1 sys\n",  # and beyond 64
        b"q1 Q0 d1 1 nan sys\n",
        b"q1 Q0 d1 1 inf sys\n",
        b"q1 Q0 d1 1 1e400 sys\n",  # overflows a double
        b"q1 Q0 d1 1 0x1p3 sys\n",
        b"q1 Q0 d1 1 1_000 sys\n",  # Python's float() takes it, the format does not
        b"q1 Q0 " + b"d" * 201 + b" 1 1 sys\n",  # docno too long
        b"# Q0 d1 1 1 sys\nq1 Q0 d1 1 1 sys\n",  # a comment line (six columns, too)
        b"q1 Q0 d1 1 1 sys\n#c\n",
    ],
)
def test_files_the_columns_cannot_vouch_for_are_left_to_the_line_reader(data: bytes) -> None:
    assert read_run_columns(data) is None


def test_every_refused_problem_is_one_the_line_reader_names_or_reads_alike() -> None:
    tabs = b"q1\tQ0\td1\t1\t1\tsys\n"
    assert read_run_columns(tabs) is None
    assert line_reader_results(tabs) == {"q1": [("d1", 1.0, 1)]}  # read, just not here
    beyond = b"q1 Q0 d1 2147483648 1 sys\n"
    assert read_run_columns(beyond) is None
    assert line_reader_results(beyond) == {"q1": [("d1", 1.0, None)]}  # the rank ignored


_ID = st.text(alphabet="aAbB0z_-.#", min_size=1, max_size=8)
_RANK = st.integers(-5, 5).map(str)
_ODD_RANK = st.sampled_from(["+3", "007", "1.0", "x", "2147483648", "-2147483649"])
_SCORE = st.one_of(
    st.integers(-3, 3).map(str),
    st.sampled_from(["0.5", "-0", "0", ".5", "1.", "+2e0", "2"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_ODD_SCORE = st.sampled_from(["nan", "inf", "1e400", "1_0", "0x1p3"])
_ODD_SEPARATOR = st.sampled_from(["  ", "\t", " \t"])
_ODD_END = st.sampled_from([" \n", "\n\n", "\r", "\t\n"])


@st.composite
def run_files(draw: st.DrawFn, tags: tuple[str, ...] = ("sys",)) -> bytes:
    """Run files, half of them plain (single spaces, valid values, one of `tags` a line)
    but for rare slips, the rest with any of the irregularities the line reader alone
    handles."""
    odd = 2 if draw(st.booleans()) else 60  # the chance of each irregularity is ~1 in `odd`

    def pick(usual: st.SearchStrategy[str], unusual: st.SearchStrategy[str]) -> str:
        # A value inside the range: Hypothesis draws the ends of ranges more often.
        return draw(unusual if draw(st.integers(0, odd)) == odd // 2 else usual)

    end = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    for _ in range(draw(st.integers(0, 10))):
        columns = [draw(st.sampled_from(["q1", "q2", "Q1"])), "Q0", draw(_ID)]
        columns += [pick(_RANK, _ODD_RANK), pick(_SCORE, _ODD_SCORE)]
        tag = st.sampled_from(tags)
        columns.append(pick(tag, st.sampled_from(["other", "sys extra", ""])))
        text = columns[0]
        for column in columns[1:]:
            text += pick(st.just(" "), _ODD_SEPARATOR) + column
        lines.append(text.rstrip(" ") + pick(st.just(end), _ODD_END))
    return "".join(lines).encode()


@settings(max_examples=400, deadline=None)
@given(run_files())
@example(b"q1 Q0 a 1 -0 sys\nq1 Q0 b 2 0 sys\n")
def test_the_columns_agree_with_the_line_reader_or_leave_the_file_to_it(data: bytes) -> None:
    expected = line_reader_results(data)
    columnar = columnar_results(data)
    if columnar is not None:
        assert expected is not None, "read here but refused by the line reader"
        assert bits(columnar) == bits(expected)
    if expected is None:
        assert columnar is None


@settings(max_examples=400, deadline=None)
@given(run_files(tags=("sys", "b", "sys2")))
@example(b"q1 Q0 a 1 1 b\nq1 Q0 a 1 1 sys\nq2 Q0 c 1 2 b\n")  # a docno once per tag
@example(b"q1 Q0 a 1 1 b\nq1 Q0 a 1 1 sys\nq1 Q0 a 2 0 b\n")  # and twice in one
def test_runs_split_by_tag_agree_with_the_line_reader_or_leave_the_file_to_it(
    data: bytes,
) -> None:
    expected = line_reader_tag_results(data)
    columnar = columnar_tag_results(data)
    if columnar is not None:
        assert expected is not None, "read here but refused by the line reader"
        assert list(columnar) == list(expected)  # the tags in the order they first appear
        assert {tag: bits(runs) for tag, runs in columnar.items()} == {
            tag: bits(runs) for tag, runs in expected.items()
        }
    if expected is None:
        assert columnar is None


def test_several_tags_are_one_run_each_only_when_split() -> None:
    data = b"q1 Q0 a 1 1 b\nq1 Q0 a 1 1 sys\nq2 Q0 c 1 2 b\n"
    assert read_run_columns(data) is None  # one run per file: the line reader says why
    runs = read_run_tag_columns(data)
    assert runs is not None
    assert [(run.tag, run.results()) for run in runs] == [
        ("b", {"q1": [("a", 1.0, 1)], "q2": [("c", 2.0, 1)]}),
        ("sys", {"q1": [("a", 1.0, 1)]}),
    ]
    single = read_run_tag_columns(b"q1 Q0 a 1 1 sys\n")
    assert single is not None and [run.tag for run in single] == ["sys"]


@settings(max_examples=300, deadline=None)
@given(st.from_regex(trec.fields.DECIMAL, fullmatch=True).filter(lambda text: len(text) < 60))
def test_scores_are_parsed_to_the_same_double_as_python_float(text: str) -> None:
    columns = read_run_columns(f"q1 Q0 d1 1 {text} sys\n".encode())
    value = float(text)
    if value in (float("inf"), float("-inf")):
        assert columns is None
        return
    assert columns is not None
    assert struct.pack("<d", columns.scores[0]) == struct.pack("<d", value)


def test_plain_generated_files_take_the_columnar_path() -> None:
    lines = [f"q{q} Q0 d{d} {d} {1.0 / (d + 1)!r} run\n" for q in range(5) for d in range(50)]
    data = "".join(lines).encode()
    columns = read_run_columns(data)
    assert columns is not None
    assert columns.results() == line_reader_results(data)
    assert columns.qids == [f"q{q}" for q in range(5)]
    assert columns.bounds.tolist() == list(range(0, 251, 50))


@pytest.mark.parametrize("streamed", [False, True], ids=["parsed whole", "block by block"])
def test_a_file_parsed_in_many_blocks_reads_as_in_one(
    monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    """Arrow returns one chunk per block: the docno and qid codes must agree across them,
    whether the file is parsed at once or (a large one) block after block."""
    lines = [f"q{(d * 7) % 5} Q0 d{d % 97} {d} {(d * 37) % 11 / 4!r} run\n" for d in range(400)]
    data = "".join(lines).encode()
    monkeypatch.setattr(run_arrow, "_BLOCK_BYTES", 256)
    monkeypatch.setattr(run_arrow, "_WHOLE_PARSE_BYTES", 0 if streamed else len(data))
    monkeypatch.setattr(run_arrow, "_PARTS_PER_RELEASE", 3)
    rows = run_arrow._rows(data, split_tags=False)
    assert rows is not None and rows.docnos.num_chunks > 10
    columns = read_run_columns(data)
    assert columns is not None
    assert bits(columns.results()) == bits(line_reader_results(data) or {})
    for late in (b"q1 Q0 dx 1 1\n", b"q1 Q0 dx 1 nan run\n", b"q1 Q0 d1 9 1 run\n"):
        monkeypatch.setattr(run_arrow, "_WHOLE_PARSE_BYTES", 0 if streamed else len(data) + 99)
        assert read_run_columns(data + late) is None  # a problem in the last block


@pytest.mark.parametrize("streamed", [False, True], ids=["parsed whole", "block by block"])
def test_runs_of_a_file_parsed_in_many_blocks_read_as_in_one(
    monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    """Tags interleaved across blocks: each run gathers its rows from every chunk."""
    lines = [
        f"q{(d * 7) % 5} Q0 d{d % 97} {d} {(d * 37) % 11 / 4!r} t{(d // 3) % 4}\n"
        for d in range(600)
    ]
    data = "".join(lines).encode()
    monkeypatch.setattr(run_arrow, "_BLOCK_BYTES", 256)
    monkeypatch.setattr(run_arrow, "_WHOLE_PARSE_BYTES", 0 if streamed else len(data))
    rows = run_arrow._rows(data, split_tags=True)
    assert rows is not None and rows.qids.num_chunks > 10
    runs = columnar_tag_results(data)
    expected = line_reader_tag_results(data)
    assert runs is not None and expected is not None
    assert list(runs) == ["t0", "t1", "t2", "t3"] == list(expected)
    assert {tag: bits(r) for tag, r in runs.items()} == {
        tag: bits(r) for tag, r in expected.items()
    }
