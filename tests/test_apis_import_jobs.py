"""Import jobs through the API: created by upload (202 with the job's URL), read with their
progress, listed per collection; the page's checks and messages; roles as the README's
table (organisers; system owners their runs and their own jobs; assessors never). Large
files sent to the synchronous import endpoints become jobs too. And all runs as one zip."""

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotations import services
from annotations.apis import import_jobs
from annotations.models import ImportJob, Judgement, Membership, Query, Run
from annotations.selectors.exports import run_text
from annotations.selectors.run_archive import archive_name
from tests.factories import UserFactory

BASE = "/api/v1/collections/imp"
RUN = b"q1 Q0 d1 1 2.0 {tag}\nq1 Q0 d2 2 1.0 {tag}\nq2 Q0 d1 1 3.0 {tag}\n"


@pytest.fixture(autouse=True)
def _fresh(settings: Any, tmp_path: Path) -> Iterator[None]:
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def users(transactional_db: None) -> dict[str, Any]:
    """Real commits: a job's task, queued after its commit, runs (eagerly) as it would on a
    worker."""
    collection = services.collection_create(
        slug="imp", cutoffs=[5, 10], grades=[(0, "no", ""), (1, "some", ""), (2, "yes", "")]
    )
    people = {name: UserFactory(username=name) for name in ("org", "ann", "sys", "sys2", "nobody")}
    for name, role in (("org", "organiser"), ("ann", "assessor"), ("sys", "owner")):
        Membership.objects.create(collection=collection, user=people[name], role=role)
    Membership.objects.create(collection=collection, user=people["sys2"], role="owner")
    return people


def _client(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def _job(user: Any, kind: str, content: bytes, file_name: str = "up.txt", **extra: Any) -> Any:
    body = {"kind": kind, "file": SimpleUploadedFile(file_name, content), **extra}
    return _client(user).post(f"{BASE}/import-jobs/", body, format="multipart")


def _run(tag: str) -> bytes:
    return RUN.replace(b"{tag}", tag.encode())


def test_an_upload_becomes_a_job_answered_202_with_its_url(users: dict[str, Any]) -> None:
    from annotations.models import Collection
    from annotations.services.webhooks import subscription_create

    subscription = subscription_create(
        collection=Collection.objects.get(), url="http://93.184.216.34/hook", created_by=None
    )
    response = _job(users["org"], "topics", b"q1\tone\nq2\ttwo\n", "t.tsv")
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get()
    location = response["Location"]
    assert location.endswith(f"{BASE}/import-jobs/{job.id}/")
    body = response.json()
    assert body["url"] == location and body["kind"] == "topics" and body["file_name"] == "t.tsv"
    # Its task, queued as the upload committed, ran already (eagerly, in the tests).
    status = _client(users["org"]).get(location).json()
    assert (status["state"], status["summary"]) == (
        "done",
        "queries: 2 created, 0 updated, 0 unchanged",
    )
    assert (status["lines_done"], status["lines_total"], status["progress"]) == (2, 2, "done")
    assert (status["value"], status["max"]) == (1, 1)
    assert set(Query.objects.values_list("qid", flat=True)) == {"q1", "q2"}
    [told] = [json.loads(body) for body in subscription.deliveries.values_list("body", flat=True)]
    assert told["type"] == "import.finished"
    assert told["data"] == {
        "collection": job.collection.slug, "job": job.id, "kind": "topics", "file": "t.tsv",
        "summary": "queries: 2 created, 0 updated, 0 unchanged",
    }  # fmt: skip


def test_qrels_and_runs_jobs_take_the_options_of_their_kind(users: dict[str, Any]) -> None:
    response = _job(users["org"], "qrels", b"q1 0 d1 2\nq1 0 d2 0\n", "a.qrels", assessor="ann")
    assert response.status_code == 202, response.content
    assert response.json()["summary"] == "judgements as ann: 2 created, 0 updated, 0 unchanged"
    assert set(Judgement.objects.values_list("assessor__username", flat=True)) == {"ann"}
    _job(users["org"], "qrels", b"q2 0 d1 1\n", "b.qrels")  # the caller's own, as imports/qrels/
    assert Judgement.objects.filter(assessor=users["org"]).count() == 1
    response = _job(users["sys"], "run", _run("bm25"), "r.txt", name="mine", description="d")
    assert response.json()["summary"] == "run: mine, 3 results"
    run = Run.objects.get(name="mine")
    assert (run.owner, run.description) == (users["sys"], "d")
    two = _run("a") + _run("b").replace(b"q1 ", b"q3 ").replace(b"q2 ", b"q4 ")
    response = _job(users["org"], "run", two, "two.txt", split_tags="true")
    assert response.json()["summary"] == "runs, one per tag: a (3 results), b (3 results)"
    response = _job(users["org"], "run", _run("x"), "x.txt", name="n", split_tags="true")
    assert response.status_code == 400 and "name" in response.json()["error"]["fields"]


def test_a_system_owner_replaces_only_its_own_runs_through_a_job(users: dict[str, Any]) -> None:
    assert _job(users["sys"], "run", _run("mine"), "m.txt").json()["state"] == "done"
    again = _job(users["sys2"], "run", _run("mine"), "m.txt", replace="true").json()
    assert again["error"] == (
        "m.txt: System owners may change only their own runs. (nothing was imported)"
    )
    assert Run.objects.get(name="mine").owner == users["sys"]
    mine = _job(users["sys"], "run", _run("mine"), "m.txt", replace="true").json()
    assert mine["state"] == "done", mine


def test_the_page_s_refusals_and_messages(users: dict[str, Any]) -> None:
    empty = _job(users["org"], "topics", b"", "e.tsv")
    assert empty.status_code == 400
    assert empty.json()["error"]["fields"]["file"] == ["e.tsv: file is empty; nothing was imported"]
    binary = _job(users["org"], "run", b"\x00\x01\x02", "b.bin")
    assert (
        binary.status_code == 400
        and "not a text file" in binary.json()["error"]["fields"]["file"][0]
    )
    assert not ImportJob.objects.exists()  # refused at the door: nothing stored
    bad = _job(users["org"], "run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2\n", "bad.txt")
    assert bad.status_code == 202
    job = bad.json()
    assert job["state"] == "failed" and job["error"].startswith("bad.txt:2: "), job
    assert job["error"].endswith("(nothing was imported)") and not Run.objects.exists()
    unknown = _job(users["org"], "qrels", b"q1 0 d1 1\n", assessor="no-such-user")
    assert unknown.status_code == 400 and not Judgement.objects.exists()
    assert _job(users["org"], "scores", b"x\n").status_code == 400


@pytest.mark.parametrize(
    ("who", "kind", "status"),
    [
        ("org", "topics", 202), ("org", "documents", 202), ("org", "qrels", 202),
        ("org", "run", 202), ("sys", "run", 202), ("sys", "topics", 403), ("sys", "qrels", 403),
        ("ann", "run", 403), ("ann", "qrels", 403), ("nobody", "run", 404), (None, "run", 401),
    ],
)  # fmt: skip
def test_roles_creating_jobs(
    users: dict[str, Any], who: str | None, kind: str, status: int
) -> None:
    content = {
        "topics": b"q1\tone\n", "documents": b"d1\ttext\n", "qrels": b"q1 0 d1 1\n",
        "run": _run("t"),
    }[kind]  # fmt: skip
    user = users[who] if who else None
    assert _job(user, kind, content).status_code == status
    assert ImportJob.objects.count() == (1 if status == 202 else 0)


def test_roles_reading_jobs_and_the_list_paged(users: dict[str, Any]) -> None:
    for index in range(3):
        _job(users["org"], "topics", f"q{index}\tt\n".encode(), f"t{index}.tsv")
    _job(users["sys"], "run", _run("own"), "own.txt")
    _job(users["org"], "run", b"broken\n", "broken.txt")
    organisers = _client(users["org"]).get(f"{BASE}/import-jobs/?limit=2").json()
    assert organisers["count"] == 5 and len(organisers["results"]) == 2
    assert organisers["results"][0]["file_name"] == "broken.txt"  # newest first
    assert organisers["next"] and "offset=2" in organisers["next"]
    failed = _client(users["org"]).get(f"{BASE}/import-jobs/?state=failed").json()
    assert [job["file_name"] for job in failed["results"]] == ["broken.txt"]
    assert _client(users["org"]).get(f"{BASE}/import-jobs/?state=exploded").status_code == 400
    owners = _client(users["sys"]).get(f"{BASE}/import-jobs/").json()
    assert [job["file_name"] for job in owners["results"]] == ["own.txt"]
    theirs = ImportJob.objects.get(file_name="t0.tsv")
    assert _client(users["sys"]).get(f"{BASE}/import-jobs/{theirs.id}/").status_code == 404
    assert _client(users["org"]).get(f"{BASE}/import-jobs/{theirs.id}/").status_code == 200
    assert _client(users["ann"]).get(f"{BASE}/import-jobs/").status_code == 403
    assert _client(users["ann"]).get(f"{BASE}/import-jobs/{theirs.id}/").status_code == 403
    assert _client(users["nobody"]).get(f"{BASE}/import-jobs/").status_code == 404
    assert _client().get(f"{BASE}/import-jobs/").status_code == 401
    assert _client(users["org"]).get(f"{BASE}/import-jobs/999999/").status_code == 404


def test_large_files_to_the_synchronous_endpoints_answer_202_with_a_job(
    users: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(import_jobs, "JOB_MB", 1)
    big_qrels = b"".join(b"q%d 0 d%d 1\n" % (i % 30, i) for i in range(120_000))
    assert len(big_qrels) > 1024 * 1024
    body = {"file": SimpleUploadedFile("big.qrels", big_qrels)}
    response = _client(users["org"]).post(f"{BASE}/imports/qrels/", body, format="multipart")
    assert response.status_code == 202, response.content
    job = _client(users["org"]).get(response["Location"]).json()
    assert (job["kind"], job["state"], job["lines_total"]) == ("qrels", "done", 120_000)
    assert Judgement.objects.filter(assessor=users["org"]).count() == 120_000
    big_run = b"".join(b"q%d Q0 d%d %d %d.0 big\n" % (i % 30, i, i + 1, -i) for i in range(60_000))
    assert len(big_run) > 1024 * 1024
    body = {"file": SimpleUploadedFile("big.run", big_run), "name": "large"}
    response = _client(users["sys"]).post(f"{BASE}/runs/", body, format="multipart")
    assert response.status_code == 202, response.content
    assert _client(users["sys"]).get(response["Location"]).json()["state"] == "done"
    assert Run.objects.get(name="large").owner == users["sys"]
    body = {"file": SimpleUploadedFile("big.run", big_run)}
    response = _client(users["sys2"]).put(f"{BASE}/runs/large/", body, format="multipart")
    assert response.status_code == 403  # the owner check comes first, as for small files
    body = {"file": SimpleUploadedFile("big.run", big_run)}
    response = _client(users["sys"]).put(f"{BASE}/runs/large/", body, format="multipart")
    assert response.status_code == 202
    small = {"file": SimpleUploadedFile("s.tsv", b"q1\tone\n")}
    response = _client(users["org"]).post(f"{BASE}/imports/topics/", small, format="multipart")
    assert response.status_code == 200  # under the threshold: imported in the request


def test_all_runs_as_one_zip_streamed(users: dict[str, Any]) -> None:
    names = ["bm25", "team/a~b", "x" * 150]
    for name in names:
        tag = name.replace("/", "-")
        _job(users["org"], "run", _run(tag), f"{tag}.txt", name=name)
    response = _client(users["org"]).get(f"{BASE}/runs-zip/")
    assert response.status_code == 200 and response.streaming
    assert (
        response["Content-Type"] == "application/octet-stream"
    )  # a zip, as generated clients read it
    assert 'filename="imp-runs.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.testzip() is None
    assert sorted(archive.namelist()) == sorted(archive_name(name) for name in names)
    assert archive_name("team/a~b") == "team~2Fa~7Eb.run"
    for name in names:
        run = Run.objects.get(name=name)
        assert archive.read(archive_name(name)).decode() == "".join(run_text(run=run))
    assert _client(users["ann"]).get(f"{BASE}/runs-zip/").status_code == 403
    assert _client(users["sys"]).get(f"{BASE}/runs-zip/").status_code == 403


def test_the_exports_page_offers_the_zip(users: dict[str, Any], client: Any) -> None:
    _job(users["org"], "run", _run("one"), "one.txt")
    client.force_login(users["org"])
    page = client.get("/collections/imp/exports/").content.decode()
    assert 'href="/collections/imp/exports/runs.zip"' in page
    response = client.get("/collections/imp/exports/runs.zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == ["one.run"]
    client.force_login(users["ann"])
    assert client.get("/collections/imp/exports/runs.zip").status_code in (403, 404)
