"""File imports through the API: the commands' parsers, errors and all-or-nothing, organisers
only."""

import io
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotations import services
from annotations.models import Document, Judgement, JudgementHistory, Membership, Query
from tests.factories import UserFactory

BASE = "/api/v1/collections/imp"
Capture = Callable[..., AbstractContextManager[Any]]


@pytest.fixture(autouse=True)
def _fresh_throttles() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def users(db: None) -> dict[str, Any]:
    collection = services.collection_create(
        slug="imp", cutoffs=[5, 10], grades=[(0, "no", ""), (1, "some", ""), (2, "yes", "")]
    )
    people = {name: UserFactory(username=name) for name in ("org", "ann", "sys", "nobody")}
    for name, role in (("org", "organiser"), ("ann", "assessor"), ("sys", "owner")):
        Membership.objects.create(collection=collection, user=people[name], role=role)
    return people


def _client(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def _post(user: Any, kind: str, content: bytes, name: str = "upload.txt", **extra: str) -> Any:
    body = {"file": SimpleUploadedFile(name, content, content_type="text/plain"), **extra}
    return _client(user).post(f"{BASE}/imports/{kind}/", body, format="multipart")


def test_topics_and_documents_files_import_as_the_commands_do(users: dict[str, Any]) -> None:
    response = _post(users["org"], "topics", b"q1\tcheap flights\nq2\tgreen tea\n", "t.tsv")
    assert response.status_code == 200, response.content
    assert response.json() == {"created": 2, "updated": 0, "unchanged": 0}
    trec_topics = b"<top>\n<num> Number: q2\n<title> green tea\n<desc> Description: iced\n</top>\n"
    response = _post(users["org"], "topics", trec_topics, "t.trec")
    assert response.json() == {"created": 0, "updated": 1, "unchanged": 0}
    assert Query.objects.get(qid="q2").description == "iced"

    docs = b'{"docno": "d1", "title": "Oslo", "text": "cheap flights", "url": "https://x.org"}\n'
    response = _post(users["org"], "documents", docs, "d.jsonl")
    assert response.json() == {"created": 1, "updated": 0, "unchanged": 0}
    document = Document.objects.get(docno="d1")
    assert (document.title, document.text, document.url) == (
        "Oslo",
        "cheap flights",
        "https://x.org",
    )
    response = _post(users["org"], "documents", b"d1\tOslo\tcheap flights\nd2\tBergen\train\n")
    assert response.json() == {"created": 1, "updated": 1, "unchanged": 0}


def test_qrels_are_the_callers_judgements_or_the_named_assessors(
    users: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(users["org"], "qrels", b"q1 0 d1 2\nq1 0 d2 0\n", "a.qrels")
    assert response.json() == {"created": 2, "updated": 0, "unchanged": 0}
    assert set(Judgement.objects.values_list("assessor__username", flat=True)) == {"org"}
    # The ids the file names were created, as import_qrels creates them.
    assert set(Document.objects.values_list("docno", flat=True)) == {"d1", "d2"}
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(users["org"], "qrels", b"q1 0 d1 1\n", "b.qrels", assessor="ann")
    assert response.json() == {"created": 1, "updated": 0, "unchanged": 0}
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(users["org"], "qrels", b"q1 0 d1 2\nq1 0 d2 0\n", "a.qrels")
    assert response.json() == {"created": 0, "updated": 0, "unchanged": 2}
    history = JudgementHistory.objects.filter(assessor__username="ann").get()
    assert (history.source, history.changed_by) == ("import", users["org"])
    query = Query.objects.get(qid="q1")
    assert query.scored_version == query.judgements_version  # rescored after the commit

    response = _post(users["org"], "qrels", b"q1 0 d1 1\n", assessor="ghost")
    assert response.status_code == 400
    refusal = response.json()["error"]["fields"]["assessor"][0]
    assert refusal.startswith("'ghost' is not an assessor or organiser of this collection")


@pytest.mark.parametrize(
    ("kind", "command", "content"),
    [
        ("qrels", "import_qrels", b"q1 0 d1 1\nq1 0 d2 7\n"),
        ("qrels", "import_qrels", b"q1 0 d1 1\nq1 0 d2\n"),
        ("qrels", "import_qrels", b"q1 0 d1 1\nq1 0 d\x002 1\n"),
        ("qrels", "import_qrels", b"q1 0 d1 1\nq1 0 d\xff 1\n"),
        ("topics", "import_topics", b"q1\tone\nq1\tagain\n"),
        ("topics", "import_topics", b'{"qid": "q1"}\n{"qid": \n'),
        ("documents", "import_documents", b"d1\ttext\nd2\ttitle\ttext\n"),
        ("documents", "import_documents", b""),
    ],
)
def test_a_bad_file_is_refused_whole_with_the_commands_error(
    users: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    command: str,
    content: bytes,
) -> None:
    monkeypatch.chdir(tmp_path)  # the command names the file as given, the API by its name
    path = Path("bad.txt")
    path.write_bytes(content)
    with pytest.raises(CommandError) as refused:
        call_command(command, "imp", str(path), stdout=io.StringIO())
    response = _post(users["org"], kind, content, str(path))
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["fields"]["file"] == [str(refused.value)]
    assert str(refused.value).endswith("(nothing was imported)")
    if content:
        assert error["location"]["file"] == str(path)
        assert error["location"]["line"] == 2
        field = error["location"]["field"]
        assert field is None or f"bad.txt:2: {field}: " in error["detail"]
    assert not Query.objects.exists() and not Document.objects.exists()
    assert not Judgement.objects.exists()


def test_imports_are_for_organisers_only(users: dict[str, Any]) -> None:
    for name, status in (("ann", 403), ("sys", 403), ("nobody", 404), (None, 401)):
        for kind in ("topics", "documents", "qrels"):
            response = _post(users.get(name or ""), kind, b"q1\tx\n")
            assert response.status_code == status, (name, kind, response.content)
            assert response.json()["error"]["status"] == status
    assert not Query.objects.exists()


def test_an_import_over_the_upload_limit_is_a_413_and_changes_nothing(
    users: dict[str, Any], settings: Any
) -> None:
    settings.NDCG_MAX_UPLOAD_MB = 1
    big = b"".join(f"q{i}\ttopic {i}\n".encode() for i in range(100_000))
    response = _post(users["org"], "topics", big)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "upload_too_large"
    assert not Query.objects.exists()


def test_an_import_body_that_is_not_multipart_is_a_415(users: dict[str, Any]) -> None:
    response = _client(users["org"]).post(
        f"{BASE}/imports/topics/", {"file": "q1\tx\n"}, format="json"
    )
    assert response.status_code == 415
    response = _client(users["org"]).post(f"{BASE}/imports/topics/", {}, format="multipart")
    assert response.status_code == 400
    assert "file" in response.json()["error"]["fields"]
