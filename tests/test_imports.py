"""The import page: uploads become import jobs; errors named by file and line, nothing half-done."""

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, TestCase
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from annotations.models import Collection, Document, ImportJob, Judgement, Query, Run
from annotations.services import job_recovery
from annotations.services.job_queue import NOT_QUEUED
from annotations.services.job_recovery import WORKER_STOPPED, import_jobs_sweep
from annotations.services.jobs import CountingReader, import_job_create
from tests.conftest import celery_broker, stored_upload

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def upload_dir(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    return settings.NDCG_UPLOAD_DIR


def _client(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


@pytest.fixture
def olga(trial: Collection) -> Client:
    return _client("olga")


def upload(client: Client, kind: str, *files: tuple[str, bytes], **fields: object):  # type: ignore[no-untyped-def]
    data: dict[str, object] = {
        f"{kind}-file": [SimpleUploadedFile(name, content) for name, content in files]
    }
    data.update({f"{kind}-{key}": value for key, value in fields.items()})
    url = reverse("collection-import-upload", args=["trial", kind])
    with TestCase.captureOnCommitCallbacks(execute=True):  # the jobs' tasks, queued at commit
        response = client.post(url, data)
    if response.status_code == 302:
        return client.get(response["Location"], follow=True)
    return response


def test_the_import_page_is_for_organisers_only(trial: Collection, upload_dir: Path) -> None:
    url = reverse("collection-imports", args=["trial"])
    assert Client().get(url).status_code == 302  # to the login page
    assert _client("eve").get(url).status_code == 404
    assert _client("alice").get(url).status_code == 403
    page = _client("olga").get(url)
    assert page.status_code == 200
    overview = reverse("collection-detail", args=["trial"])
    assert f'href="{url}"' in _client("olga").get(overview).content.decode()
    assert f'href="{url}"' not in _client("alice").get(overview).content.decode()
    for form in ("import-topics", "import-documents", "import-qrels", "import-runs"):
        assert f'id="{form}"' in page.content.decode()
    assert 'name="run-file" multiple' in page.content.decode()
    assert upload(_client("alice"), "topics", ("t.tsv", b"q9\tnine\n")).status_code == 403
    assert upload(_client("eve"), "topics", ("t.tsv", b"q9\tnine\n")).status_code == 404
    assert not ImportJob.objects.exists()
    assert not Query.objects.filter(qid="q9").exists()


def test_malformed_topics_show_the_line_on_the_page_and_change_nothing(
    trial: Collection, olga: Client, upload_dir: Path
) -> None:
    before = list(Query.objects.values_list("qid", "title").order_by("qid"))
    page = upload(olga, "topics", ("topics.tsv", b"q1\tnew title\nq7\tseven\textra\n"))
    message = (
        "topics.tsv:2: expected 2 tab-separated columns (qid, title), found 3 "
        "(nothing was imported)"
    )
    assert page.status_code == 200
    assert message in page.content.decode()
    job = ImportJob.objects.get()
    assert (job.state, job.error, job.kind) == ("failed", message, "topics")
    assert job.file_name == "topics.tsv"
    assert job.created_by is not None and job.created_by.username == "olga"
    assert list(Query.objects.values_list("qid", "title").order_by("qid")) == before
    assert job.upload_path == "" and list(upload_dir.iterdir()) == []  # the upload is deleted


def test_malformed_qrels_show_the_line_and_change_nothing(trial: Collection, olga: Client) -> None:
    page = upload(olga, "qrels", ("qrels.txt", b"q1 0 d1 1\nq1 0 d2 7\nq3 0 d9 1\n"))
    message = (
        "qrels.txt:2: grade: 7 is not one of the allowed levels 0, 1, 2, 3 (nothing was imported)"
    )
    assert escape(message) in page.content.decode()
    assert ImportJob.objects.get().error == message
    assert not Judgement.objects.exists()
    assert not Query.objects.filter(qid="q3").exists()
    assert not get_user_model().objects.filter(username="trec").exists()


def test_malformed_run_shows_the_line_and_changes_nothing(trial: Collection, olga: Client) -> None:
    bad = b"q1 Q0 d1 1 2.0 fresh\nq1 Q0 d2 2 abc fresh\n"
    page = upload(olga, "run", ("fresh.txt", bad))
    message = "fresh.txt:2: score: 'abc' is not a number (nothing was imported)"
    assert escape(message) in page.content.decode()
    assert not Run.objects.filter(name="fresh").exists()


def test_good_uploads_of_each_kind_import_and_show_their_summary(
    trial: Collection, olga: Client
) -> None:
    topics = b'{"qid": "q1", "title": "solar energy storage"}\n{"qid": "q3", "title": "tides"}\n'
    page = upload(olga, "topics", ("topics.jsonl", topics)).content.decode()
    assert "queries: 1 created, 1 updated, 0 unchanged" in page
    assert Query.objects.get(collection=trial, qid="q3").title == "tides"

    page = upload(olga, "documents", ("docs.tsv", b"d7\tTide tables\tHigh water at noon.\n"))
    assert "documents: 1 created, 0 updated, 0 unchanged" in page.content.decode()
    assert Document.objects.get(collection=trial, docno="d7").title == "Tide tables"

    alice = get_user_model().objects.get(username="alice")
    page = upload(olga, "qrels", ("qrels.txt", b"q1 0 d1 3\nq3 0 d7 2\n"), assessor=alice.pk)
    assert "judgements as alice: 2 created, 0 updated, 0 unchanged" in page.content.decode()
    assert Judgement.objects.filter(assessor=alice).count() == 2

    page = upload(olga, "qrels", ("more.txt", b"q1 0 d2 1\n"))  # the import account
    assert "judgements as trec: 1 created" in page.content.decode()

    page = upload(olga, "run", ("mine.txt", b"q1 Q0 d1 1 2.0 mine\nq3 Q0 d7 1 1.5 mine\n"))
    assert "run: mine, 2 results" in page.content.decode()
    run = Run.objects.get(collection=trial, name="mine")
    assert run.owner is not None and run.owner.username == "olga"
    assert set(ImportJob.objects.values_list("state", flat=True)) == {"done"}
    done = ImportJob.objects.filter(kind="run").get()
    assert done.bytes_done == done.size and done.lines_done == 2 and done.finished is not None


def test_several_run_files_in_one_upload_make_several_runs(trial: Collection, olga: Client) -> None:
    files = [
        (f"run{i}.txt", f"q1 Q0 d1 1 2.0 sys{i}\nq1 Q0 d2 2 1.0 sys{i}\n".encode())
        for i in range(3)
    ]
    page = upload(olga, "run", *files).content.decode()
    assert sorted(Run.objects.filter(name__startswith="sys").values_list("name", flat=True)) == [
        "sys0",
        "sys1",
        "sys2",
    ]
    assert ImportJob.objects.filter(kind="run", state="done").count() == 3
    for i in range(3):
        assert f"run: sys{i}, 2 results" in page


def test_a_run_of_an_existing_name_is_replaced_only_when_asked(
    trial: Collection, olga: Client
) -> None:
    bm25 = Run.objects.get(name="bm25")
    file = ("bm25.txt", b"q1 Q0 d5 1 9.0 bm25\n")
    page = upload(olga, "run", file).content.decode()
    assert "bm25.txt: name: run &#x27;bm25&#x27; already exists in trial" in page
    assert "the import page&#x27;s &#x27;Replace runs of the same name&#x27;" in page  # this box
    assert bm25.rankings.count() == 2
    page = upload(olga, "run", file, replace="on").content.decode()
    assert "run: bm25, 1 results" in page
    assert Run.objects.get(name="bm25").rankings.count() == 1


def test_a_file_of_several_tags_becomes_one_run_per_tag_only_when_asked(
    trial: Collection, olga: Client
) -> None:
    # The command line's --split-tags and the API's split_tags, on the page: the same
    # parser, the same refusal when it is not asked for.
    file = ("two.txt", b"q1 Q0 d1 1 2.0 first\nq1 Q0 d2 2 1.0 first\nq1 Q0 d2 1 3.0 second\n")
    page = upload(olga, "run", file).content.decode()
    assert "two.txt:3: tag:" in page and escape("'One run per tag'") in page
    assert not Run.objects.filter(name__in=["first", "second"]).exists()
    page = upload(olga, "run", file, split_tags="on").content.decode()
    assert "runs, one per tag: first (2 results), second (1 results)" in page
    assert Run.objects.get(name="first").rankings.get().size == 2
    job = ImportJob.objects.filter(state="done").get()
    assert job.split_tags and job.lines_done == 3
    # Replacing works per tag, as on the command line.
    again = ("again.txt", b"q1 Q0 d5 1 9.0 first\nq1 Q0 d6 1 9.0 second\n")
    page = upload(olga, "run", again, split_tags="on").content.decode()
    assert "again.txt: name: run &#x27;first&#x27; already exists in trial" in page
    page = upload(olga, "run", again, split_tags="on", replace="on").content.decode()
    assert "runs, one per tag: first (1 results), second (1 results)" in page


def test_one_bad_file_among_several_fails_alone(trial: Collection, olga: Client) -> None:
    good = ("good.txt", b"q1 Q0 d1 1 2.0 good\n")
    bad = ("bad.txt", b"q1 Q0 d1 1 2.0 bad\nq1 Q0 d1 2 1.0 bad\n")
    page = upload(olga, "run", good, bad).content.decode()
    assert "bad.txt:2: docno: " in page
    assert Run.objects.filter(name="good").exists() and not Run.objects.filter(name="bad").exists()


def test_a_form_without_a_file_says_so_inline(trial: Collection, olga: Client) -> None:
    response = olga.post(reverse("collection-import-upload", args=["trial", "run"]), {})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert not ImportJob.objects.exists()


def test_too_large_files_and_uploads_are_refused_at_the_door(
    trial: Collection, olga: Client, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.NDCG_MAX_UPLOAD_MB = 1
    big = ("big.txt", b"q1 Q0 d1 1 2.0 big\n" * 60_000)  # 1.1 MB
    response = olga.post(
        reverse("collection-import-upload", args=["trial", "run"]),
        {"run-file": [SimpleUploadedFile(*big)]},
    )
    assert response.status_code == 400
    assert "big.txt: 1 MB is more than the 1 MB a file may hold" in response.content.decode()
    settings.NDCG_IMPORT_MAX_MB = 1
    response = olga.post(
        reverse("collection-import-upload", args=["trial", "run"]),
        {"run-file": [SimpleUploadedFile(*big)]},
    )
    assert response.status_code == 413
    refused = "more than the 1 MB one upload may hold (NDCG_IMPORT_MAX_MB)"
    assert refused in response.content.decode()
    assert not ImportJob.objects.exists() and not Run.objects.filter(name="big").exists()


def test_too_many_files_in_one_upload_are_refused_with_a_message(
    trial: Collection, olga: Client, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    files = [SimpleUploadedFile(f"r{i}.txt", f"q1 Q0 d1 1 2.0 r{i}\n".encode()) for i in range(3)]
    response = olga.post(
        reverse("collection-import-upload", args=["trial", "run"]), {"run-file": files}
    )
    assert response.status_code == 400
    assert "more than the 2 files one upload may hold" in response.content.decode()
    assert not ImportJob.objects.exists() and not Run.objects.filter(name="r0").exists()


def test_an_upload_without_the_csrf_token_is_refused(trial: Collection) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username="olga"))
    response = client.post(
        reverse("collection-import-upload", args=["trial", "topics"]),
        {"topics-file": SimpleUploadedFile("t.tsv", b"q9\tnine\n")},
    )
    assert response.status_code == 403
    assert not ImportJob.objects.exists() and not Query.objects.filter(qid="q9").exists()


def test_an_unknown_kind_is_404(trial: Collection, olga: Client) -> None:
    url = reverse("collection-import-upload", args=["trial", "pools"])
    assert olga.post(url).status_code == 404


def test_the_jobs_endpoint_gives_state_and_progress(trial: Collection, olga: Client) -> None:
    upload(olga, "run", ("a.txt", b"q1 Q0 d1 1 2.0 a\n"), ("b.txt", b"q1 Q0 d1 1 2.0 b\nx\n"))
    data = olga.get(reverse("collection-import-jobs", args=["trial"])).json()
    assert data["active"] == 0
    by_name = {job["file_name"]: job for job in data["jobs"]}
    assert by_name["a.txt"]["state"] == "done" and by_name["a.txt"]["progress"] == "done"
    assert by_name["a.txt"]["bytes_done"] == by_name["a.txt"]["size"] == 17
    assert by_name["b.txt"]["state"] == "failed"
    assert by_name["b.txt"]["error"].startswith("b.txt:2: ")
    url = reverse("collection-import-jobs", args=["trial"])
    assert _client("alice").get(url).status_code == 403


def _job(collection: Collection, upload_dir: Path, **fields: object) -> ImportJob:
    job = import_job_create(
        collection=collection,
        kind="topics",
        upload=SimpleUploadedFile("t.tsv", b"q5\tfive\n"),
        created_by=None,
    )
    ImportJob.objects.filter(id=job.id).update(**fields)
    job.refresh_from_db()
    return job


def test_a_running_job_not_heard_of_is_failed_by_the_sweep_and_the_page_says_so(
    trial: Collection, olga: Client, upload_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_recovery, "STALE_SECONDS", 60)
    old = timezone.now() - timedelta(seconds=61)
    stale = _job(trial, upload_dir, state="running", started=old, heartbeat=old)
    alive = _job(trial, upload_dir, state="running", started=old, heartbeat=timezone.now())
    assert len(list(upload_dir.iterdir())) == 2
    assert import_jobs_sweep() == 1  # the periodic sweep (beat), never a read of the page
    page = olga.get(reverse("collection-imports", args=["trial"])).content.decode()
    stale.refresh_from_db()
    alive.refresh_from_db()
    assert (stale.state, stale.error) == ("failed", WORKER_STOPPED)
    assert WORKER_STOPPED in page
    assert alive.state == "running"
    # the stopped job's upload is kept for Retry
    assert stale.retryable and stored_upload(stale).is_file()
    assert {path.name for path in upload_dir.iterdir()} == {
        f"{stale.token}.upload",
        f"{alive.token}.upload",
    }
    assert import_jobs_sweep() == 0  # already swept


def test_a_job_queued_too_long_is_queued_again_once_per_period(
    trial: Collection, upload_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A broker that lost the task (a Redis restarted without persistence) must not leave the
    # job queued for ever: the sweep queues it again, at most once per stale period, and
    # keeps it (a second delivery of a claimed job does nothing).

    monkeypatch.setattr(job_recovery, "STALE_SECONDS", 60)
    published: list[int] = []
    from annotations import publishing

    monkeypatch.setattr(
        publishing.IMPORT_JOB_RUN, "apply_async", lambda args, **_: published.append(args[0])
    )
    caches["coordination"].clear()  # no mark left by an earlier test's job of the same id
    fresh = _job(trial, upload_dir)
    lost = _job(trial, upload_dir, created=timezone.now() - timedelta(seconds=61))
    assert import_jobs_sweep() == 0
    assert published == [lost.id]
    assert import_jobs_sweep() == 0  # swept again within the period: not queued again
    assert published == [lost.id]
    assert set(ImportJob.objects.values_list("state", flat=True)) == {"queued"}
    assert fresh.id not in published


def test_with_the_broker_down_the_job_fails_at_once_and_nothing_is_imported(
    trial: Collection, olga: Client, settings, django_capture_on_commit_callbacks, upload_dir
) -> None:  # type: ignore[no-untyped-def]
    down = "redis://127.0.0.1:1/0"  # nothing listens there
    with celery_broker(down), django_capture_on_commit_callbacks(execute=True):
        upload(olga, "topics", ("t.tsv", b"q9\tnine\n"))
    job = ImportJob.objects.get()
    assert (job.state, job.error) == ("failed", NOT_QUEUED)
    assert not Query.objects.filter(qid="q9").exists()
    assert job.retryable  # the upload is kept: Retry queues the job again
    assert [path.name for path in upload_dir.iterdir()] == [f"{job.token}.upload"]


def test_counting_reader_counts_bytes_and_lines_once() -> None:
    reader = CountingReader(io.BytesIO(b"a\nbb\nccc\n"))
    assert reader.read(3) == b"a\nb"
    assert (reader.bytes_done, reader.lines_done) == (3, 1)
    reader.seek(0)
    assert reader.read() == b"a\nbb\nccc\n"
    assert (reader.bytes_done, reader.lines_done) == (9, 3)
    reader.seek(0)
    reader.read()
    assert (reader.bytes_done, reader.lines_done) == (9, 3)


def test_an_empty_or_binary_file_is_refused_at_upload_and_nothing_is_queued(
    trial: Collection, olga: Client
) -> None:
    from annotations.models import ImportJob

    cases = [
        ("empty.txt", b"", "empty.txt: file is empty; nothing was imported"),
        ("data.bin", b"q1 Q0 d1 1 2.0 x\n\x00\x01", "data.bin: not a text file (a NUL byte at"),
        ("latin.txt", b"q1 Q0 caf\xe9 1 2.0 x\n", "latin.txt: not a text file: not valid UTF-8"),
    ]
    for name, content, message in cases:
        page = upload(olga, "run", (name, content)).content.decode().replace("&#x27;", "'")
        assert message in page, name
    assert not ImportJob.objects.exists()
    good = upload(olga, "run", ("ok.txt", b"q1 Q0 d1 1 2.0 fresh\n")).content.decode()
    assert "fresh" in good and ImportJob.objects.count() == 1


def test_a_multi_file_upload_gets_one_summary_line_and_its_failures(
    trial: Collection, olga: Client
) -> None:
    files = [
        ("one.txt", b"q1 Q0 d1 1 2.0 one\n"),
        ("two.txt", b"q1 Q0 d1 1 2.0 two\n"),
        ("bad.txt", b"q1 Q0 d1\n"),
    ]
    response = upload(olga, "run", *files)
    notices = [str(m) for m in response.context["messages"]]
    assert notices == ["0 of 3 files imported, 3 queued for import (progress below)."]
    # Once the worker ran them (here, eagerly after the upload's commit): the page's line.
    assert response.context["batch"]["summary"] == "2 of 3 done, 1 failed"
    assert "bad.txt:1: " in response.content.decode()
