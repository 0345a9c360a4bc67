"""Run files as trec_eval reads them: informational ranks and files holding several tags, from
the command line and the API alike (one parser, one summary, all or nothing)."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import selectors, services
from annotations.models import Collection, Membership, QueryScore, Run
from tests.factories import UserFactory

WriteFile = Callable[[str, "str | bytes"], Path]

QRELS = "q1 0 d1 3\nq1 0 d2 1\nq1 0 d3 2\nq2 0 d4 2\nq2 0 d5 0\nq3 0 d6 1\n"
# Three systems in one file, lines interleaved, as a track's merged submissions are: a
# comment, text after a tag, ranks that are not integers, a docno shared by two tags.
SEVERAL_TAGS = """\
# merged runs of the track
q1 Q0 d1 1 3.0 bm25
q1 Q0 d2 1 9.0 dense
q1 Q0 d3 2 2.0 bm25 trailing words
q1 Q0 d1 2 8.5 dense
q2 Q0 d4 1 1.0 bm25
q2 Q0 d5 first 4.0 dense
q1 Q0 d9 1 7.0 sparse
q2 Q0 d4 2.5 3.0 dense
q3 Q0 d6 1 0.5 sparse
"""
TAGS = ("bm25", "dense", "sparse")


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def track(collection: Collection, write_file: WriteFile) -> Collection:
    services.judgements_import(
        collection=collection,
        source=write_file("track.qrels", QRELS),
        assessor=UserFactory(username="nist"),
    )
    return collection


def run_command(*args: object) -> str:
    out = StringIO()
    call_command("import_run", *[str(arg) for arg in args], stdout=out, stderr=StringIO())
    return out.getvalue()


def command_error(*args: object) -> str:
    with pytest.raises(CommandError) as caught:
        run_command(*args)
    return str(caught.value)


def client_of(collection: Collection, username: str, role: str = "owner") -> APIClient:
    user = UserFactory(username=username)
    Membership.objects.create(collection=collection, user=user, role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def upload(client: APIClient, content: str, filename: str = "track.run", **fields: Any) -> Any:
    data = {"file": SimpleUploadedFile(filename, content.encode()), **fields}
    return client.post("/api/v1/collections/demo/runs/", data, format="multipart")


def stored(run: Run) -> dict[str, list[tuple[str, int, float]]]:
    """A run as stored: {qid: [(docno, rank, score)]} in trec_eval's order."""
    rows: dict[str, list[tuple[str, int, float]]] = {}
    for qid, docno, rank, score, _ in selectors.run_rows(run=run):
        rows.setdefault(qid, []).append((docno, rank, score))
    return rows


def snapshot() -> list[tuple[object, ...]]:
    return sorted(
        (run.name, run.description, run.owner_id, tuple(sorted(stored(run).items())))
        for run in Run.objects.all()
    )


def trec_eval_ndcg(text: str, tag: str, k: int) -> dict[str, float]:
    """trec_eval's ndcg_cut (pytrec_eval, -c: judged queries the run missed count 0) of the
    lines of one tag."""
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    ranking: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        columns = line.split()
        if columns[0].startswith("#") or columns[5] != tag:
            continue
        ranking.setdefault(columns[0], {})[columns[2]] = float(columns[4])
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"})
    result = evaluator.evaluate(ranking)
    return {qid: result[qid][f"ndcg_cut_{k}"] if qid in result else 0.0 for qid in qrels}


# --- the rank column ----------------------------------------------------------------------


def test_ranks_that_are_not_integers_are_ignored_and_counted_in_the_summary(
    track: Collection, write_file: WriteFile
) -> None:
    path = write_file(
        "odd.run",
        "q1 Q0 d1 1 1.0 odd\nq1 Q0 d2 x 3.0 odd\nq1 Q0 d3 2.0 2.0 odd\nq2 Q0 d4 7 1.0 odd\n",
    )
    out = run_command("demo", path)
    assert out == (
        "run: odd, 4 results; rank ignored on 2 lines (not a 32-bit integer; results are "
        f"ordered by score), first {path}:2\n"
    )
    # trec_eval's order (score descending); an ignored rank is stored as the place in it
    assert stored(Run.objects.get(name="odd")) == {
        "q1": [("d2", 1, 3.0), ("d3", 2, 2.0), ("d1", 1, 1.0)],
        "q2": [("d4", 7, 1.0)],
    }


def test_the_api_upload_gives_the_same_summary_as_the_command(
    track: Collection, write_file: WriteFile
) -> None:
    content = "q1 Q0 d1 one 1.0 odd\nq1 Q0 d2 2 3.0 odd\n"
    path = write_file("odd.run", content)
    response = upload(client_of(track, "sys"), content, filename="odd.run")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["ignored_ranks"], body["first_ignored_rank_line"]) == (1, 1)
    Run.objects.get(name="odd").delete()
    out = run_command("demo", path)
    assert out.rstrip("\n") == body["summary"].replace("odd.run", str(path))
    clean = upload(client_of(track, "sys2"), "q1 Q0 d1 1 1.0 plain\n").json()
    assert (clean["ignored_ranks"], clean["first_ignored_rank_line"]) == (0, None)
    assert clean["summary"] == "run: plain, 1 results"
    assert [item["summary"] for item in clean["runs"]] == [clean["summary"]]


# --- several tags -------------------------------------------------------------------------


def test_a_file_of_several_tags_is_refused_with_how_to_import_it(
    track: Collection, write_file: WriteFile
) -> None:
    path = write_file("track.run", SEVERAL_TAGS)
    message = command_error("demo", path)
    assert message.startswith(f"{path}:3: tag: 'dense' differs from 'bm25' on line 2; ")
    assert (
        "import it with --split-tags (API: split_tags=true; import page: 'One run per tag')"
        in message
    )
    assert message.endswith("(nothing was imported)")
    assert not Run.objects.exists()
    response = upload(client_of(track, "sys"), SEVERAL_TAGS)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["location"] == {"file": "track.run", "line": 3, "field": "tag"}
    assert "split_tags=true" in error["detail"]
    assert not Run.objects.exists()


def test_split_tags_makes_one_run_per_tag_scored_as_trec_eval_scores_each(
    track: Collection, write_file: WriteFile
) -> None:
    out = run_command("demo", write_file("track.run", SEVERAL_TAGS), "--split-tags")
    assert out.splitlines()[0] == "run: bm25, 3 results"
    assert out.splitlines()[1].startswith("run: dense, 4 results; rank ignored on 2 lines")
    assert out.splitlines()[2] == "run: sparse, 2 results"
    runs = {run.name: run for run in Run.objects.all()}
    assert sorted(runs) == list(TAGS)
    assert stored(runs["dense"]) == {
        "q1": [("d2", 1, 9.0), ("d1", 2, 8.5)],
        "q2": [("d5", 1, 4.0), ("d4", 2, 3.0)],  # both ranks ignored: places in the order
    }
    assert stored(runs["sparse"])["q1"] == [("d9", 1, 7.0)]
    for tag in TAGS:
        expected = trec_eval_ndcg(SEVERAL_TAGS, tag, 10)
        for qid, value in expected.items():
            row = QueryScore.objects.filter(run=runs[tag], query__qid=qid).first()
            assert (0.0 if row is None else row.at(10).ndcg) == value, (tag, qid)


def test_the_api_splits_tags_too_and_answers_every_run(track: Collection) -> None:
    response = upload(client_of(track, "sys"), SEVERAL_TAGS, split_tags="true")
    assert response.status_code == 201, response.content
    body = response.json()
    runs = body["runs"]
    assert body["run"]["name"] == "bm25" and body["summary"] == runs[0]["summary"]
    assert [item["run"]["name"] for item in runs] == list(TAGS)
    assert [item["results"] for item in runs] == [3, 4, 2]
    assert runs[1]["ignored_ranks"] == 2 and runs[1]["first_ignored_rank_line"] == 7
    assert all(item["run"]["owner"] == "sys" for item in runs)
    assert set(Run.objects.values_list("name", flat=True)) == set(TAGS)


def test_a_split_is_all_or_nothing(track: Collection, write_file: WriteFile) -> None:
    bad = SEVERAL_TAGS + "q3 Q0 d7 1 high sparse\n"
    message = command_error("demo", write_file("bad.run", bad), "--split-tags")
    assert message.endswith(":11: score: 'high' is not a number (nothing was imported)")
    twice = SEVERAL_TAGS + "q1 Q0 d9 2 0.1 sparse\n"  # d9 twice for q1 within one tag
    message = command_error("demo", write_file("twice.run", twice), "--split-tags")
    assert "'d9' is retrieved twice for qid 'q1', first on line 8 (tag 'sparse')" in message
    response = upload(client_of(track, "sys"), bad, split_tags="true")
    assert response.status_code == 400
    assert response.json()["error"]["location"]["line"] == 11
    assert not Run.objects.exists()


def test_a_split_replaces_runs_only_as_single_imports_do(
    track: Collection, write_file: WriteFile
) -> None:
    path = write_file("track.run", SEVERAL_TAGS)
    run_command("demo", write_file("dense.run", "q1 Q0 d3 1 1.0 dense\n"))
    before = snapshot()
    assert "run 'dense' already exists in demo" in command_error("demo", path, "--split-tags")
    assert snapshot() == before  # bm25, read before dense, was not kept either
    owner = client_of(track, "sys")
    response = upload(owner, SEVERAL_TAGS, split_tags="true")
    assert response.status_code == 400 and "'dense' already exists" in response.content.decode()
    assert snapshot() == before
    run_command("demo", path, "--split-tags", "--replace")
    assert stored(Run.objects.get(name="dense"))["q1"] == [("d2", 1, 9.0), ("d1", 2, 8.5)]


def test_split_tags_names_no_single_run(track: Collection, write_file: WriteFile) -> None:
    path = write_file("track.run", SEVERAL_TAGS)
    assert "each tag names its run" in command_error("demo", path, "--split-tags", "--name", "x")
    owner = client_of(track, "sys")
    response = upload(owner, SEVERAL_TAGS, split_tags="true", name="x")
    assert response.status_code == 400 and "each tag names its run" in response.content.decode()
    put = owner.put(
        "/api/v1/collections/demo/runs/x/",
        {"file": SimpleUploadedFile("t.run", SEVERAL_TAGS.encode()), "split_tags": "true"},
        format="multipart",
    )
    assert put.status_code == 400 and "split_tags" in put.json()["error"]["fields"]
    assert not Run.objects.exists()


def test_a_plain_file_of_several_tags_is_split_in_columns_as_by_the_line_reader(
    track: Collection, write_file: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Comments and odd ranks aside, the merged file is plain: it is read into columns and
    split there, with the runs, results and scores the line reader gives the same lines."""
    from annotations.formats import run_arrow
    from annotations.services import run_files

    plain = "".join(
        " ".join([*line.split()[:3], str(rank), *line.split()[4:6]]) + "\n"
        for rank, line in enumerate(SEVERAL_TAGS.splitlines()[1:], start=1)
    )
    runs_read: list[list[str]] = []
    real = run_arrow.read_run_tag_columns

    def spy(data: bytes) -> Any:
        runs = real(data)
        runs_read.append([run.tag for run in runs or []])
        return runs

    monkeypatch.setattr(run_arrow, "read_run_tag_columns", spy)
    monkeypatch.setattr(run_files, "_results_read", None)  # the line reader is not used
    out = run_command("demo", write_file("plain.run", plain), "--split-tags")
    assert runs_read == [list(TAGS)]
    assert out.splitlines() == [
        "run: bm25, 3 results",
        "run: dense, 4 results",
        "run: sparse, 2 results",
    ]
    columnar = snapshot()
    monkeypatch.undo()
    Run.objects.all().delete()
    tabbed = plain.replace(" ", "\t")  # the same lines, for the line reader alone
    run_command("demo", write_file("tabbed.run", tabbed), "--split-tags")
    assert snapshot() == columnar
    for tag in TAGS:
        run = Run.objects.get(name=tag)
        for qid, value in trec_eval_ndcg(plain, tag, 10).items():
            row = QueryScore.objects.filter(run=run, query__qid=qid).first()
            assert (0.0 if row is None else row.at(10).ndcg) == value, (tag, qid)


def test_one_tag_split_is_one_run(track: Collection, write_file: WriteFile) -> None:
    out = run_command("demo", write_file("one.run", "q1 Q0 d1 1 1 solo\n"), "--split-tags")
    assert out == "run: solo, 1 results\n"


# --- runs without results -----------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n# and another\n"])
def test_a_run_file_without_results_is_refused_everywhere(
    track: Collection, write_file: WriteFile, content: str
) -> None:
    path = write_file("empty.run", content)
    assert command_error("demo", path) == f"{path}: file is empty (nothing was imported)"
    response = upload(client_of(track, "sys"), content, filename="empty.run")
    assert response.status_code == 400
    detail = response.json()["error"]["detail"]  # zero bytes: the upload field refuses them
    assert "empty.run: file is empty" in detail if content else "file is empty" in detail
    assert not Run.objects.exists()


def test_a_run_without_results_is_refused_by_the_service_and_the_json_api(
    track: Collection,
) -> None:
    with pytest.raises(ValidationError, match="at least one result"):
        services.run_store(collection=track, run_name="none", results={})
    response = client_of(track, "sys").put(
        "/api/v1/collections/demo/runs/none/results/", {"results": []}, format="json"
    )
    assert response.status_code == 400
    assert "results" in response.json()["error"]["fields"]
    assert not Run.objects.exists()
