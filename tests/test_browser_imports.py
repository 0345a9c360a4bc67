"""The import page in a real browser: run files dropped on the form become finished jobs,
and with a worker the job list follows the jobs by itself."""

import subprocess
from pathlib import Path
from typing import Any

import pytest

from annotations.models import Collection, ImportJob, Membership, Run
from tests.factories import UserFactory
from tests.test_import_jobs_worker import worker  # noqa: F401  (a fixture)

pytestmark = pytest.mark.browser

DROP = """([selector, files]) => {
  const transfer = new DataTransfer();
  for (const [name, text] of files) transfer.items.add(new File([text], name));
  const zone = document.querySelector(selector);
  zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true }));
  zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true }));
}"""


def _run_file(tag: str) -> tuple[str, str]:
    return f"{tag}.txt", f"q1 Q0 d1 1 2.0 {tag}\nq1 Q0 d3 2 1.0 {tag}\n"


def _organiser_on_the_import_page(collection: Collection, page, login, settings: Any) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    organiser = UserFactory(username="cora")
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    login("cora")
    page.goto(f"/collections/{collection.slug}/")
    page.click("#import-link")


def _inline_import_page(collection: Collection, page, login, settings: Any, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """An organiser on the import page, jobs run in the request (no broker), its script on."""
    from playwright.sync_api import expect

    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    settings.CELERY_BROKER_URL = ""
    _organiser_on_the_import_page(collection, page, login, settings)
    expect(page.locator("#import-runs .drop-hint")).to_be_visible()  # the script ran


def test_two_run_files_dropped_on_the_import_page_become_two_done_jobs(  # type: ignore[no-untyped-def]
    worked_example: Collection, page, login, settings: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    _inline_import_page(worked_example, page, login, settings, tmp_path)
    page.evaluate(DROP, ["#import-runs [data-drop-zone]", [_run_file("alpha"), _run_file("beta")]])
    expect(page.locator("#import-runs .drop-list")).to_have_text("2 files: alpha.txt, beta.txt")
    with page.expect_navigation():
        page.click("#import-runs button[type=submit]")
    expect(page.locator("#import-jobs tbody tr")).to_have_count(2)
    for tag in ("alpha", "beta"):
        row = page.locator("#import-jobs tr", has_text=f"{tag}.txt")
        expect(row.locator(".job-state")).to_have_text("done")
        expect(row.locator(".job-result")).to_have_text(f"run: {tag}, 2 results")
        assert row.locator("progress").evaluate("bar => bar.value === bar.max")
    names = Run.objects.filter(name__in=["alpha", "beta"]).values_list("name", flat=True)
    assert sorted(names) == ["alpha", "beta"]
    assert ImportJob.objects.filter(state="done").count() == 2


def test_a_file_of_two_tags_dropped_with_one_run_per_tag_ticked_becomes_two_runs(  # type: ignore[no-untyped-def]
    worked_example: Collection, page, login, settings: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    _inline_import_page(worked_example, page, login, settings, tmp_path)
    track = ("track.txt", _run_file("gamma")[1] + _run_file("delta")[1])
    page.evaluate(DROP, ["#import-runs [data-drop-zone]", [track]])
    page.get_by_label("One run per tag").check()
    with page.expect_navigation():
        page.click("#import-runs button[type=submit]")
    row = page.locator("#import-jobs tr", has_text="track.txt")
    expect(row.locator(".job-state")).to_have_text("done")
    expect(row.locator(".job-result")).to_have_text(
        "runs, one per tag: gamma (2 results), delta (2 results)"
    )
    names = Run.objects.filter(name__in=["gamma", "delta"]).values_list("name", flat=True)
    assert sorted(names) == ["delta", "gamma"]


@pytest.mark.celery
def test_with_a_worker_the_job_list_follows_the_jobs_by_itself(  # type: ignore[no-untyped-def]
    collection: Collection,
    worker: subprocess.Popen[bytes],  # noqa: F811
    page,
    login,
    settings: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    _organiser_on_the_import_page(collection, page, login, settings)
    page.set_input_files(
        "#id_run-file",
        [
            {"name": name, "mimeType": "text/plain", "buffer": text.encode()}
            for name, text in (_run_file("gamma"), _run_file("delta"))
        ],
    )
    with page.expect_navigation():
        page.click("#import-runs button[type=submit]")
    summary = "0 of 2 files imported, 2 queued for import (progress below)."
    expect(page.locator(".messages")).to_have_text(summary)  # one line, not one per file
    for tag in ("gamma", "delta"):  # updated in place by the page's polling, no reload
        row = page.locator("#import-jobs tr", has_text=f"{tag}.txt")
        expect(row.locator(".job-state")).to_have_text("done", timeout=60_000)
        expect(row.locator(".job-result")).to_have_text(f"run: {tag}, 2 results")
    expect(page.locator(".messages")).to_have_text(summary)
    assert Run.objects.filter(name__in=["gamma", "delta"]).count() == 2
