"""The import page in a real browser: run files dropped on the form become finished jobs,
and with a worker the job list follows the jobs by itself."""

import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

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
    # The group they were listed under says what they are now.
    expect(page.locator("#jobs-waiting-heading")).to_have_text("Finished just now")
    assert Run.objects.filter(name__in=["gamma", "delta"]).count() == 2


def test_the_job_table_holds_a_campaign_at_a_phone_s_width(  # type: ignore[no-untyped-def]
    collection: Collection, browser, live_server, settings: Any, tmp_path: Path
) -> None:
    """46 jobs with 150-character file names: the table sits right under the forms, pages
    by 20, folds the finished jobs, fits 390 px and passes axe; a 30-file upload made on the
    page (its tasks run eagerly here, by the upload's request) has one summary line, kept
    current by the page's polling."""
    from playwright.sync_api import expect

    from tests.conftest import browser_page
    from tests.test_browser_accessibility import PHONE, page_problems

    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    settings.CELERY_BROKER_URL = ""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    organiser = UserFactory(username="cora")
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    # A member with a 150-character username: an option of the qrels form's assessor list.
    Membership.objects.create(
        collection=collection, user=UserFactory(username="m" * 150), role="assessor"
    )
    long_name = "a-very-long-run-file-name-of-a-real-campaign-" * 4
    for index in range(16):  # earlier jobs: done, failed (with Retry) and running
        job = ImportJob.objects.create(
            collection=collection, kind="run", file_name=f"{long_name[:146]}{index:04d}",
            size=123_456, created_by=organiser, lines_total=1_000_000,
        )  # fmt: skip
        state = ("done", "failed", "running", "dismissed")[index % 4]
        ImportJob.objects.filter(id=job.id).update(
            state=state, lines_done=12_000, stage="parsing" if state == "running" else "",
            error="x.txt:12: rank: not an integer (nothing was imported)" * 2
            if state == "failed" else "",
            summary="run: tag, 1000 results" if state == "done" else "",
            upload_path=str(tmp_path / "kept") if state == "failed" else "",
            heartbeat=timezone.now() + timedelta(hours=1),
        )  # fmt: skip
    files = [
        {"name": f"{'r' * 140}-{i:03d}.txt", "mimeType": "text/plain", "buffer": text.encode()}
        for i, (_, text) in enumerate(_run_file(f"sys{i:02d}") for i in range(30))
    ]
    with browser_page(browser, live_server, viewport=PHONE) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", organiser.username)
        page.fill("#id_password", "pass-word-123")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.goto(f"/collections/{collection.slug}/import/")
        page.set_input_files("#id_run-file", files)
        with page.expect_navigation(timeout=60_000):
            page.click("#import-runs button[type=submit]")
        assert ImportJob.objects.filter(collection=collection).count() == 46
        expect(page.locator(".messages")).to_contain_text("of 30 files imported")
        batch = page.locator("#import-batch")
        expect(batch).to_contain_text("Your last upload of 30 files: ")
        expect(batch).to_have_text("Your last upload of 30 files: 30 of 30 done", timeout=90_000)
        page.reload()
        # Right under the forms: the table starts within the first screens, not 2,300 px down.
        top = page.locator("#import-jobs-section").evaluate("node => node.offsetTop")
        form_bottom = page.locator(".import-forms").evaluate(
            "node => node.offsetTop + node.offsetHeight"
        )
        assert 0 <= top - form_bottom < 200, (top, form_bottom)
        rows = page.locator("#import-jobs tbody tr")
        expect(rows).to_have_count(20)
        finished = page.locator(".jobs-finished")
        expect(finished).to_have_js_property("open", True)  # nothing waits on this page
        page.locator(".jobs-finished > summary").click()
        expect(finished).to_have_js_property("open", False)
        expect(page.locator(".pager")).to_contain_text("Page 1 of 3 (46 jobs)")
        problems = page_problems(page, f"/collections/{collection.slug}/import/")
        for number in (2, 3):
            problems += page_problems(page, f"/collections/{collection.slug}/import/?page={number}")
        assert not problems, "\n".join(problems)
        expect(page.locator("#import-jobs tbody tr")).to_have_count(6)  # page 3: 46 - 40
        page.goto(f"/collections/{collection.slug}/import/?page=2")
        waiting = page.locator("#import-jobs-waiting tbody tr")
        expect(waiting.first).to_be_visible()  # the running and failed jobs, open
        running = page.locator("#import-jobs tr[data-state=running]").first
        expect(running.locator(".job-stage")).to_have_text("parsing 12,000 of 1,000,000 lines")
        failed = page.locator("#import-jobs tr[data-state=failed]").first
        expect(failed.get_by_role("button", name="Retry")).to_be_visible()


def test_a_standard_collection_is_imported_from_the_page_which_passes_axe_at_a_phone_s_width(  # type: ignore[no-untyped-def]
    collection: Collection, browser, live_server, settings: Any, local_dataset: str
) -> None:
    """The *Standard collection* form at 390 px: an id and two parts ticked become a done job
    (run in the request here, no broker) listed with its parts; the form with its errors
    passes axe and fits the phone."""
    from playwright.sync_api import expect

    from tests.conftest import browser_page
    from tests.test_browser_accessibility import PHONE, page_problems

    settings.CELERY_BROKER_URL = ""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    organiser = UserFactory(username="cora")
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    with browser_page(browser, live_server, viewport=PHONE) as page:
        page.goto("/accounts/login/")
        page.fill("#id_username", organiser.username)
        page.fill("#id_password", "pass-word-123")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.goto(f"/collections/{collection.slug}/import/")
        page.locator("#import-dataset > summary").click()
        page.fill("#id_dataset-dataset", local_dataset)
        page.get_by_label("queries (topics)").check()
        page.get_by_label("qrels (as judgements)").check()
        with page.expect_navigation():
            page.click("#import-dataset button[type=submit]")
        expect(page.locator(".messages")).to_contain_text(f"{local_dataset}: imported (")
        expect(page.locator("#import-dataset")).to_have_js_property("open", True)
        row = page.locator("#import-jobs tbody tr").first
        expect(row).to_contain_text("ir_datasets: queries, qrels")
        expect(row).to_contain_text("qrels: 4 created")
        assert ImportJob.objects.get(kind="dataset").state == "done"
        problems = page_problems(page, f"/collections/{collection.slug}/import/?kind=dataset")
        page.fill("#id_dataset-dataset", "no-such/dataset")
        with page.expect_navigation():
            page.click("#import-dataset button[type=submit]")
        expect(page.locator("#import-dataset")).to_contain_text("is not a dataset ir_datasets")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        assert not problems, "\n".join(problems)
