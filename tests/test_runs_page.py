"""The runs page: list, download, describe, replace by upload, delete; organisers and owners."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotations import services
from annotations.models import Collection, Membership, Run
from tests.factories import UserFactory

RUNS = "/collections/trial/runs/"


def as_user(username: str | None) -> Client:
    client = Client()
    if username:
        client.force_login(get_user_model().objects.get(username=username))
    return client


@pytest.fixture
def owned(trial: Collection) -> Collection:
    """sam owns bm25; dense has no owner."""
    sam = UserFactory(username="sam")
    Membership.objects.create(collection=trial, user=sam, role="owner")
    Run.objects.filter(collection=trial, name="bm25").update(owner=sam)
    return trial


def _body(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


def test_the_list_shows_each_run_with_its_size_and_actions_by_role(owned: Collection) -> None:
    html = as_user("olga").get(RUNS).content.decode()
    assert 'data-run="bm25"' in html and 'data-run="dense"' in html
    assert "<td>sam</td>" in html and '<td class="num">7</td>' in html  # bm25: 4 + 3 results
    assert html.count(">Delete</a>") == 2
    assert "/collections/trial/import/" in html  # organisers add runs on the import page
    assert 'id="runs-zip" href="/collections/trial/exports/runs.zip"' in html
    assert "Download all 2 runs as one zip" in html
    owner = as_user("sam").get(RUNS).content.decode()
    assert owner.count(">Delete</a>") == 1 and "/runs/bm25/delete/" in owner
    assert "/runs/dense/delete/" not in owner
    assert "/import/" not in owner and "runs-zip" not in owner  # both are organisers' pages
    assert as_user("alice").get(RUNS).status_code == 404  # assessors are blinded
    assert as_user("eve").get(RUNS).status_code == 404


def test_download_gives_the_run_as_trec_text(owned: Collection) -> None:
    response = as_user("sam").get(f"{RUNS}bm25/download/")
    assert response["Content-Disposition"] == 'attachment; filename="bm25.run"'
    lines = _body(response).splitlines()
    assert lines[0] == "q1 Q0 d1 1 4.0 bm25" and len(lines) == 7
    assert as_user("sam").get(f"{RUNS}dense/download/").status_code == 404  # not sam's


def test_describing_a_run(owned: Collection) -> None:
    response = as_user("sam").post(f"{RUNS}bm25/describe/", {"description": "BM25, k1=0.9"})
    assert response.status_code == 302
    assert Run.objects.get(name="bm25").description == "BM25, k1=0.9"
    bad = as_user("sam").post(f"{RUNS}bm25/describe/", {"description": "bell \x07"})
    assert bad.status_code == 400 and "control character U+0007" in bad.content.decode()
    assert as_user("sam").post(f"{RUNS}dense/describe/", {"description": "x"}).status_code == 404


def test_replacing_a_run_by_upload(
    owned: Collection, django_capture_on_commit_callbacks: Any
) -> None:
    upload = SimpleUploadedFile("new.run", b"q1 Q0 d2 1 2.0 other-tag\nq1 Q0 d6 2 1.0 other-tag\n")
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user("sam").post(f"{RUNS}bm25/replace/", {"file": upload})
    assert response.status_code == 302
    run = Run.objects.get(collection=owned, name="bm25")  # the name is kept, not the tag
    assert [r.size for r in run.rankings.all()] == [2] and run.owner.username == "sam"
    assert run.scored_at is not None


def test_a_malformed_file_names_its_line_and_changes_nothing(owned: Collection) -> None:
    upload = SimpleUploadedFile("bad.run", b"q1 Q0 d2 1 2.0 t\nq1 Q0 d6 2 high t\n")
    response = as_user("olga").post(f"{RUNS}bm25/replace/", {"file": upload})
    html = response.content.decode()
    assert response.status_code == 400
    assert "bad.run:2: score:" in html and "(nothing was imported)" in html
    assert sum(r.size for r in Run.objects.get(name="bm25").rankings.all()) == 7


def test_deleting_a_run_confirms_first(owned: Collection) -> None:
    confirm = as_user("sam").get(f"{RUNS}bm25/delete/").content.decode()
    assert "removes its 7 results for 2 queries" in confirm
    assert Run.objects.filter(name="bm25").exists()
    response = as_user("sam").post(f"{RUNS}bm25/delete/")
    assert response.status_code == 302 and not Run.objects.filter(name="bm25").exists()
    assert as_user("sam").post(f"{RUNS}dense/delete/").status_code == 404
    assert Run.objects.filter(name="dense").exists()


def test_the_api_and_the_page_share_the_services(owned: Collection) -> None:
    services.run_describe(run=Run.objects.get(name="dense"), description="dense retriever")
    assert "dense retriever" in as_user("olga").get(RUNS).content.decode()
