"""Shared fixtures: files on disk, a collection with the worked example, an assessor."""

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from annotations import services
from annotations.models import Collection
from tests.factories import CollectionFactory, UserFactory

WORKED_QRELS = """\
q1 0 d1 3
q1 0 d2 2
q1 0 d3 3
q1 0 d4 0
q1 0 d5 1
q1 0 d6 2
q1 0 d7 3
q1 0 d8 2
"""
WORKED_RUN = """\
q1 Q0 d1 1 6.0 example
q1 Q0 d2 2 5.0 example
q1 Q0 d3 3 4.0 example
q1 Q0 d4 4 3.0 example
q1 Q0 d5 5 2.0 example
q1 Q0 d6 6 1.0 example
"""


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[..., Path]:
    """Write text (or bytes) to a file under tmp_path and return its path."""

    def write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return write


@pytest.fixture
def collection(transactional_db: None) -> Collection:
    """Uses real commits, so the scores scheduled after commit are computed as in production."""
    return CollectionFactory(slug="demo", cutoffs=[5, 6, 10])


@pytest.fixture
def assessor(transactional_db: None):  # type: ignore[no-untyped-def]
    return UserFactory(username="alice")


@pytest.fixture
def worked_example(collection: Collection, write_file: Callable[..., Path], assessor):  # type: ignore[no-untyped-def]
    """The worked example of ndcg.md: one query, one run, eight judged documents."""
    services.judgements_import(
        collection=collection, source=write_file("qrels.txt", WORKED_QRELS), assessor=assessor
    )
    services.run_import(collection=collection, source=write_file("run.txt", WORKED_RUN))
    return collection


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _missing(reason: str) -> None:
    """Skip on a user's machine; in CI (CI=true) a missing component is a failure."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():  # type: ignore[no-untyped-def]
    """Debian's Chromium driven by Playwright (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        _missing(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed")
    # Playwright's sync API runs an event loop; Django must not refuse DB access for it.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield instance
        instance.close()


@pytest.fixture
def page(browser, live_server):  # type: ignore[no-untyped-def]
    """A fresh browser page; `page.base_url` is the live server's address."""
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(10_000)
    tab = context.new_page()
    tab.base_url = live_server.url
    yield tab
    context.close()


@pytest.fixture
def login(page):  # type: ignore[no-untyped-def]
    """Log a user in through the real login form."""

    def do_login(username: str, password: str = "pass-word-123") -> None:
        page.goto("/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)

    return do_login
