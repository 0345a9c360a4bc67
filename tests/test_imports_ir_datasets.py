"""Standard collections by their ir_datasets id from the import page and the API: an import
job on the background engine, read by the service the import_ir_datasets command uses, with
its progress in records, its `import.finished` events, and a dataset out of reach failing
the job with the files missing and where to place them (never a server error). Datasets
here are local files registered in ir_datasets' registry, or `vaswani` with no network."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotations import services
from annotations.models import Collection, Document, ImportJob, Judgement, Membership, Query, Run
from annotations.services.webhooks import subscription_create
from tests.factories import UserFactory

BASE = "/api/v1/collections/std"
EVERY_PART = {
    "queries: 2 created, 0 updated, 0 unchanged",
    "docs: 3 created, 0 updated, 0 unchanged",
    "qrels: 4 created, 0 updated, 0 unchanged",
}


@pytest.fixture(autouse=True)
def _fresh(settings: Any, tmp_path: Path) -> Iterator[None]:
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def people(transactional_db: None) -> dict[str, Any]:
    """Real commits: a job's task, queued after its commit, runs (eagerly) as it would on a
    worker."""
    collection = services.collection_create(
        slug="std", cutoffs=[1, 2], grades=[(0, "no", ""), (1, "some", ""), (2, "yes", "")]
    )
    found = {name: UserFactory(username=name) for name in ("org", "ann", "sys")}
    for name, role in (("org", "organiser"), ("ann", "assessor"), ("sys", "owner")):
        Membership.objects.create(collection=collection, user=found[name], role=role)
    return found


def _page(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _told(subscription: Any, kind: str) -> list[dict[str, Any]]:
    deliveries = subscription.deliveries.order_by("id").values_list("body", flat=True)
    bodies = [json.loads(body) for body in deliveries]
    return [body["data"] for body in bodies if body["type"] == kind]


def _without_ir_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # an import of it fails


# --- the import page ---------------------------------------------------------------------


def test_the_page_imports_a_dataset_as_a_job_with_its_parts_and_events(
    people: dict[str, Any], local_dataset: str
) -> None:
    subscription = subscription_create(
        collection=Collection.objects.get(), url="http://93.184.216.34/hook", created_by=None
    )
    client = _page(people["org"])
    page = client.get(reverse("collection-imports", args=["std"]))
    assert 'action="/collections/std/import/ir-datasets/"' in page.content.decode()
    response = client.post(
        reverse("collection-import-dataset", args=["std"]),
        {
            "dataset-dataset": local_dataset,
            "dataset-parts": ["queries", "docs", "qrels"],
            "dataset-assessor": str(people["ann"].pk),
        },
    )
    assert response.status_code == 302
    assert response["Location"].endswith("?kind=dataset")
    job = ImportJob.objects.get()
    assert (job.kind, job.file_name, job.parts, job.state) == (
        "dataset", local_dataset, ["queries", "docs", "qrels"], "done"
    )  # fmt: skip
    assert set(job.summary.split("; ")) == EVERY_PART
    assert (job.lines_done, job.progress) == (9, (1, 1, "done"))  # 2 + 3 + 4 records
    assert Query.objects.get(qid="301").narrative == "Batteries count."
    assert Document.objects.get(docno="D3").text == "the Rhine"
    assert set(Judgement.objects.values_list("assessor__username", flat=True)) == {"ann"}
    assert not Run.objects.exists()  # scoreddocs not asked for
    told = _told(subscription, "import.finished")
    assert [(t["kind"], t["file"], t["job"]) for t in told] == [
        ("topics", f"{local_dataset} (queries)", job.id),
        ("documents", f"{local_dataset} (docs)", job.id),
        ("qrels", f"{local_dataset} (qrels)", job.id),
    ]
    shown = client.get(response["Location"]).content.decode()
    assert f"{local_dataset}: imported (" in shown
    assert "ir_datasets: queries, docs, qrels" in shown  # the job's line in the table


def test_every_part_by_default_and_the_run_named_as_asked(
    people: dict[str, Any], local_dataset: str
) -> None:
    response = _page(people["org"]).post(
        reverse("collection-import-dataset", args=["std"]),
        {"dataset-dataset": local_dataset, "dataset-run_name": "bm25-std"},
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.parts == ["queries", "docs", "qrels", "scoreddocs"] and job.state == "done"
    assert "scoreddocs: run 'bm25-std', 4 results" in job.summary
    assert set(Judgement.objects.values_list("assessor__username", flat=True)) == {"trec"}
    assert Run.objects.get().name == "bm25-std"


def test_an_unknown_id_or_a_part_the_dataset_lacks_is_refused_on_the_form_and_queues_nothing(
    people: dict[str, Any], local_dataset: str
) -> None:
    client = _page(people["org"])
    url = reverse("collection-import-dataset", args=["std"])
    unknown = client.post(url, {"dataset-dataset": "no-such/dataset"})
    assert unknown.status_code == 400
    assert "&#x27;no-such/dataset&#x27; is not a dataset ir_datasets knows" in (
        unknown.content.decode()
    )
    lacking = client.post(url, {"dataset-dataset": "vaswani", "dataset-parts": ["scoreddocs"]})
    assert lacking.status_code == 400
    assert "vaswani has no scoreddocs (it has queries, docs, qrels)" in lacking.content.decode()
    assert not ImportJob.objects.exists()


def test_only_organisers_reach_the_form(people: dict[str, Any], local_dataset: str) -> None:
    url = reverse("collection-import-dataset", args=["std"])
    for name in ("ann", "sys"):
        assert _page(people[name]).post(url, {"dataset-dataset": local_dataset}).status_code == 403
    assert not ImportJob.objects.exists()


def test_a_dataset_out_of_reach_fails_its_job_naming_the_files_and_where_to_place_them(
    people: dict[str, Any], ir_datasets_offline: Path
) -> None:
    """No network: the request answers as always (a redirect to the page), the job fails
    with the command's message, Retry is offered, `import.failed` tells the same."""
    subscription = subscription_create(
        collection=Collection.objects.get(), url="http://93.184.216.34/hook", created_by=None
    )
    client = _page(people["org"])
    response = client.post(
        reverse("collection-import-dataset", args=["std"]),
        {"dataset-dataset": "vaswani", "dataset-parts": ["queries", "qrels"]},
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    home = ir_datasets_offline
    assert job.state == "failed" and job.retryable
    assert job.error.startswith("vaswani (queries): ir_datasets could not read or download")
    assert f"Missing: {home / 'vaswani' / 'npl.tar.gz'} (from http" in job.error
    assert f"under IR_DATASETS_HOME ({home})" in job.error
    assert job.error.endswith("run the import again (nothing was imported)")
    # ir_datasets knows the parts' sizes without reading them: 93 queries, 2,083 qrels.
    assert (job.lines_total, job.progress[2]) == (93 + 2083, "stopped after 0 of 2,176 records")
    assert not Query.objects.exists()
    shown = client.get(response["Location"]).content.decode()
    assert "npl.tar.gz" in shown and 'aria-label="Retry vaswani"' in shown
    [failed] = _told(subscription, "import.failed")
    assert (failed["kind"], failed["file"], failed["error"]) == ("dataset", "vaswani", job.error)
    assert _told(subscription, "import.finished") == []


def test_retry_reads_the_dataset_again_once_its_files_are_in_place(
    people: dict[str, Any], local_dataset: str, tmp_path: Path
) -> None:
    topics = tmp_path / "topics.sgml"
    kept = topics.read_bytes()
    topics.unlink()
    client = _page(people["org"])
    client.post(
        reverse("collection-import-dataset", args=["std"]),
        {"dataset-dataset": local_dataset, "dataset-parts": ["queries"]},
    )
    job = ImportJob.objects.get()
    assert job.state == "failed"
    assert job.error.startswith(f"{local_dataset} (queries): ir_datasets could not read")
    topics.write_bytes(kept)
    client.post(reverse("collection-import-retry", args=["std", job.id]))
    job.refresh_from_db()
    assert (job.state, job.retries, job.error) == ("done", 1, "")
    assert job.summary == "queries: 2 created, 0 updated, 0 unchanged"


def test_without_ir_datasets_the_page_says_how_to_add_it_instead_of_a_form(
    people: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_ir_datasets(monkeypatch)
    client = _page(people["org"])
    shown = client.get(reverse("collection-imports", args=["std"])).content.decode()
    assert "ir_datasets, which is not installed on this server" in shown
    assert "pip install &#x27;ndcg-platform[ir-datasets]&#x27;" in shown
    assert "/import/ir-datasets/" not in shown
    refused = client.post(
        reverse("collection-import-dataset", args=["std"]), {"dataset-dataset": "vaswani"}
    )
    assert refused.status_code == 400 and "not installed" in refused.content.decode()
    assert not ImportJob.objects.exists()


# --- the API -----------------------------------------------------------------------------


def test_the_api_answers_202_with_the_job_and_its_url(
    people: dict[str, Any], local_dataset: str
) -> None:
    client = _api(people["org"])
    response = client.post(
        f"{BASE}/imports/ir-datasets/",
        {"dataset": local_dataset, "parts": ["qrels", "queries"], "assessor": "ann"},
        format="json",
    )
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get()
    location = response["Location"]
    assert location.endswith(f"{BASE}/import-jobs/{job.id}/")
    body = client.get(location).json()
    assert (body["kind"], body["file_name"], body["parts"]) == (
        "dataset", local_dataset, ["queries", "qrels"]
    )  # fmt: skip
    assert (body["state"], body["progress"], body["lines_done"]) == ("done", "done", 6)
    assert body["summary"] == (
        "queries: 2 created, 0 updated, 0 unchanged; qrels: 4 created, 0 updated, 0 unchanged"
    )
    assert set(Judgement.objects.values_list("assessor__username", flat=True)) == {"ann"}
    listed = client.get(f"{BASE}/import-jobs/", {"kind": "dataset"}).json()
    assert [job["id"] for job in listed["results"]] == [body["id"]]


def test_the_api_refuses_what_the_command_refuses_and_queues_nothing(
    people: dict[str, Any], local_dataset: str
) -> None:
    client = _api(people["org"])
    url = f"{BASE}/imports/ir-datasets/"
    unknown = client.post(url, {"dataset": "no-such/dataset"}, format="json")
    assert unknown.status_code == 400
    assert unknown.json()["error"]["fields"] == {
        "dataset": ["'no-such/dataset' is not a dataset ir_datasets knows"]
    }
    part = client.post(url, {"dataset": local_dataset, "parts": ["docpairs"]}, format="json")
    assert part.status_code == 400
    assert part.json()["error"]["fields"] == {"parts[0]": ['"docpairs" is not a valid choice.']}
    stranger = client.post(url, {"dataset": local_dataset, "assessor": "sys"}, format="json")
    assert stranger.status_code == 400 and "assessor" in stranger.json()["error"]["fields"]
    for name in ("ann", "sys"):
        assert _api(people[name]).post(url, {"dataset": local_dataset}).status_code == 403
    assert not ImportJob.objects.exists()


def test_through_the_api_a_dataset_out_of_reach_is_the_jobs_error_not_a_server_error(
    people: dict[str, Any], ir_datasets_offline: Path
) -> None:
    client = _api(people["org"])
    response = client.post(f"{BASE}/imports/ir-datasets/", {"dataset": "vaswani"}, format="json")
    assert response.status_code == 202
    body = client.get(response["Location"]).json()
    assert (body["state"], body["retryable"]) == ("failed", True)
    assert body["error"].startswith("vaswani (queries): ir_datasets could not read")
    assert "npl.tar.gz" in body["error"] and "IR_DATASETS_HOME" in body["error"]


def test_without_ir_datasets_the_api_refuses_with_400_saying_how_to_add_it(
    people: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_ir_datasets(monkeypatch)
    response = _api(people["org"]).post(
        f"{BASE}/imports/ir-datasets/", {"dataset": "vaswani"}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "not_installed"
    assert error["detail"].startswith(
        "ir_datasets is not installed: pip install 'ndcg-platform[ir-datasets]'"
    )
    assert not ImportJob.objects.exists()


# --- progress ----------------------------------------------------------------------------


def test_a_dataset_jobs_bar_counts_records_of_the_known_total_or_without_a_measure() -> None:
    running = ImportJob(kind=ImportJob.DATASET, state=ImportJob.RUNNING, stage="parsing")
    running.lines_done, running.lines_total = 1500, 11522
    assert running.progress == (1500, 11522, "reading 1,500 of 11,522 records")
    running.lines_total = 0  # ir_datasets cannot tell without reading
    assert running.progress == (None, 1, "reading 1,500 records")


def test_a_dataset_jobs_records_add_up_over_its_parts_as_its_streams_read_them() -> None:
    from annotations.formats import ir_records
    from annotations.services.job_progress import DatasetProgress

    done = DatasetProgress(2 + 3)
    queries = ir_records.Progress("queries", 2)
    done.heard(queries)  # the part starts
    queries.lines = 1  # its stream counts a record as the import reads it
    assert (done.now().lines_done, done.now().lines_total) == (1, 5)
    queries.lines = 2
    done.heard(queries)  # the part ends
    docs = ir_records.Progress("docs", 3)
    done.heard(docs)
    docs.lines = 2
    assert (done.lines_done, done.now().stage) == (4, "parsing")
    assert DatasetProgress(None).now().lines_total == 0  # sizes ir_datasets cannot tell
