"""The import page in a real browser: two run files in one upload become two finished jobs."""

from pathlib import Path
from typing import Any

import pytest

from annotations.models import Collection, ImportJob, Membership, Run
from tests.factories import UserFactory

pytestmark = pytest.mark.browser


def test_two_run_files_uploaded_on_the_import_page_become_two_done_jobs(  # type: ignore[no-untyped-def]
    worked_example: Collection, page, login, settings: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.NDCG_UPLOAD_DIR = tmp_path / "uploads"
    settings.CELERY_BROKER_URL = ""
    organiser = UserFactory(username="cora")
    Membership.objects.create(collection=worked_example, user=organiser, role="organiser")
    login("cora")
    page.goto(f"/collections/{worked_example.slug}/import/")
    expect(page.locator("#import-runs .drop-hint")).to_be_visible()  # the script ran
    files = [
        {
            "name": f"{tag}.txt",
            "mimeType": "text/plain",
            "buffer": f"q1 Q0 d1 1 2.0 {tag}\nq1 Q0 d3 2 1.0 {tag}\n".encode(),
        }
        for tag in ("alpha", "beta")
    ]
    page.set_input_files("#id_run-file", files)
    expect(page.locator("#import-runs .drop-list")).to_have_text("2 files: alpha.txt, beta.txt")
    with page.expect_navigation():
        page.click("#import-runs button[type=submit]")
    rows = page.locator("#import-jobs tbody tr")
    expect(rows).to_have_count(2)
    for tag in ("alpha", "beta"):
        row = page.locator("#import-jobs tr", has_text=f"{tag}.txt")
        expect(row.locator(".job-state")).to_have_text("done")
        expect(row.locator(".job-result")).to_have_text(f"run: {tag}, 2 results")
        assert row.locator("progress").evaluate("bar => bar.value === bar.max")
    names = Run.objects.filter(name__in=["alpha", "beta"]).values_list("name", flat=True)
    assert sorted(names) == ["alpha", "beta"]
    assert ImportJob.objects.filter(state="done").count() == 2
