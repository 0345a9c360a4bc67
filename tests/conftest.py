"""Shared fixtures: files on disk, a collection with the worked example, an assessor."""

import importlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler

from annotations import services
from annotations.models import Collection
from annotations.scores import refresh_pacing
from annotations.selectors.impact_held import impact_inputs_forget
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


@pytest.fixture(autouse=True)
def _leaderboards_follow_every_change() -> Iterator[None]:
    """Tests read a leaderboard right after each change: its refresh is not debounced (an
    eager task asked for later is not run) and significance passes do not rest (their own
    tests set both). A patcher of its own: a test's `monkeypatch.undo()` leaves these."""
    patcher = pytest.MonkeyPatch()
    patcher.setattr(refresh_pacing, "DEBOUNCE_SECONDS", 0.0)
    patcher.setattr(refresh_pacing, "SIGNIFICANCE_SHARE", 1.0)
    yield
    patcher.undo()


@pytest.fixture(autouse=True)
def _no_impact_inputs_held() -> None:
    """Each test starts with no impact inputs kept in the process (a database rolled back
    between tests may give a new collection an earlier one's id)."""
    impact_inputs_forget()


@pytest.fixture(autouse=True)
def _judges_on_this_machine(settings: Any) -> None:
    """The tests' model servers listen on 127.0.0.1 (tests/fake_llm.py): allowed, as for a
    local model server; the outbound rule's own tests turn it off."""
    settings.NDCG_JUDGE_ALLOW_PRIVATE = True
    settings.NDCG_SEARCH_ALLOW_PRIVATE = True  # the tests' search engines, likewise


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


def require_component(reason: str) -> None:
    """Skip on a user's machine; in CI (CI=true) a missing component is a failure."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


def optional_module(name: str) -> Any:
    """An optional package of the dev extra (an oracle): skipped where it is not installed,
    a failure in CI."""
    if os.environ.get("CI", "").lower() == "true":
        return importlib.import_module(name)  # an ImportError fails the test
    return pytest.importorskip(name, reason=f"{name} is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="session")
def browser():  # type: ignore[no-untyped-def]
    """Debian's Chromium driven by Playwright (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        require_component(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_component("the playwright package is not installed")
    # Playwright's sync API runs an event loop; Django must not refuse DB access for it.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield instance
        instance.close()


@contextmanager
def browser_page(browser, live_server, **options: Any):  # type: ignore[no-untyped-def]
    """A fresh browser page (`options` go to the new context, e.g. `viewport`) that fails on
    any Content-Security-Policy violation; `page.base_url` is the live server's address."""
    context = browser.new_context(base_url=live_server.url, **options)
    context.set_default_timeout(10_000)
    tab = context.new_page()
    tab.base_url = live_server.url
    # Every browser test is also a Content-Security-Policy check: Chromium reports each
    # violation on the console, and none may occur on any page a test visits.
    violations: list[str] = []

    def record(message):  # type: ignore[no-untyped-def]
        if "Content Security Policy" in message.text:
            violations.append(f"{tab.url}: {message.text[:120]}")

    tab.on("console", record)
    yield tab
    context.close()
    _wait_for_server_requests()
    assert not violations, violations


# Requests the live server is answering (its handler is Django's WSGIHandler; the test
# client's is not), for the flush after a browser test to wait on.
_SERVING = [0]
_SERVING_LOCK = threading.Lock()


def _counting(call: Any) -> Any:
    def counted(self: Any, environ: Any, start_response: Any) -> Any:
        with _SERVING_LOCK:
            _SERVING[0] += 1
        try:
            return call(self, environ, start_response)
        finally:
            with _SERVING_LOCK:
                _SERVING[0] -= 1

    return counted


WSGIHandler.__call__ = _counting(WSGIHandler.__call__)  # type: ignore[method-assign]


def _wait_for_server_requests(timeout: float = 30.0) -> None:
    """Wait until the live server answers no request (what a request queues after its
    commit runs inside it, the tasks being eager) and no other connection to the test
    database is inside a statement or a transaction. Closing the browser cancels its
    requests, but the live server's threads finish the ones they started; the test's flush
    (TRUNCATE) must not race them."""
    from django.db import connection

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _SERVING[0]:
        time.sleep(0.05)
    if connection.vendor != "postgresql":
        return
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state <> 'idle'"
            )
            (busy,) = cursor.fetchone()
        if not busy:
            return
        time.sleep(0.05)


@pytest.fixture
def page(browser, live_server):  # type: ignore[no-untyped-def]
    """A fresh browser page; `page.base_url` is the live server's address."""
    with browser_page(browser, live_server) as tab:
        yield tab


def log_in(page: Any, username: str, password: str = "pass-word-123") -> None:
    """Log `username` in on a browser page through the real login form."""
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


@pytest.fixture
def login(page):  # type: ignore[no-untyped-def]
    """Log a user in through the real login form."""

    def do_login(username: str, password: str = "pass-word-123") -> None:
        log_in(page, username, password)

    return do_login


# --- judging: a small collection with topics, documents and two runs -----------------------

TRIAL_TOPICS = {
    "q1": ("solar energy storage", "How is solar energy stored?", "Batteries or heat count."),
    "q2": ("river floods", "Which rivers flood most often?", "Forecasts are not relevant."),
}
TRIAL_DOCUMENTS = {
    "d1": ("Storing solar power", "Solar energy can be stored in batteries."),
    "d2": ("Molten salt", "Heat storage keeps solar plants running at night."),
    "d3": ("Floods of the Rhine", "The river floods in spring. <script>alert('x')</script>"),
    "d4": ("Weather report", "Rain tomorrow & <b>wind</b>."),
    "d5": ("Energy policy", "Energy prices rose; river shipping stopped in floods."),
    "d6": ("Grid batteries", "Large batteries store energy for the grid."),
}
# Depth 2 pools q1: d1 d2 d3 d6 and q2: d1 d3 d5 (unjudged pairs, when nothing is judged).
TRIAL_RUNS = {
    "bm25": {"q1": ["d1", "d2", "d6", "d4"], "q2": ["d3", "d5", "d4"]},
    "dense": {"q1": ["d6", "d3", "d1", "d5"], "q2": ["d5", "d1", "d3"]},
}


@pytest.fixture
def trial(db: None, settings) -> Collection:  # type: ignore[no-untyped-def]
    """Collection "trial": two topics, six documents, runs bm25 and dense, the 0-3 scale;
    organiser olga and assessors alice and bob are members, eve is not (password as ever)."""
    from annotations.models import Document, Query
    from tests.factories import MembershipFactory

    # A fast hasher: the default one costs most of a second per user created or logged in.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    collection = CollectionFactory(slug="trial", cutoffs=[5, 10])
    for qid, (title, description, narrative) in TRIAL_TOPICS.items():
        Query.objects.create(
            collection=collection,
            qid=qid,
            title=title,
            description=description,
            narrative=narrative,
        )
    for docno, (title, text) in TRIAL_DOCUMENTS.items():
        Document.objects.create(
            collection=collection,
            docno=docno,
            title=title,
            text=text,
            url=f"https://example.org/{docno}",
        )
    for name, by_query in TRIAL_RUNS.items():
        services.run_store(
            collection=collection,
            run_name=name,
            results={
                qid: [(docno, float(len(docs) - i), i + 1) for i, docno in enumerate(docs)]
                for qid, docs in by_query.items()
            },
        )
    for username, role in [("olga", "organiser"), ("alice", "assessor"), ("bob", "assessor")]:
        MembershipFactory(collection=collection, user=UserFactory(username=username), role=role)
    UserFactory(username="eve")
    return collection


@contextmanager
def celery_broker(url: str, **conf: Any) -> Iterator[None]:
    """Send this process's tasks to the broker at `url` (not eagerly), then put back the app's
    configuration. Pooled broker connections are dropped on the way in and out, so no test
    publishes through a connection made for another test's broker."""
    from ndcg_platform.celery import app

    def drop_connections() -> None:
        app._pool = None
        amqp = app.__dict__.get("amqp")
        if amqp is not None:
            amqp._producer_pool = None

    # Every task on the test's own queue (task_default_queue), routes off unless a test sets
    # them: no other worker, and no queue a test worker does not read.
    keys = {"broker_url": url, "task_always_eager": False, "task_routes": {}, **conf}
    previous = {key: app.conf.get(key) for key in keys}
    drop_connections()
    app.conf.update(keys)
    try:
        yield
    finally:
        drop_connections()
        app.conf.update(previous)


@pytest.fixture
def load_trec(transactional_db: None, write_file: Callable[..., Path]) -> Callable[..., Collection]:
    """Load a collection from TREC text: its qrels as one import account's, its runs by name."""

    def load(
        slug: str, qrels: str, runs: dict[str, str], cutoffs: list[int] | None = None
    ) -> Collection:
        collection = CollectionFactory(slug=slug, cutoffs=cutoffs or [2])
        services.judgements_import(
            collection=collection,
            source=write_file(f"{slug}.qrels", qrels),
            assessor=UserFactory(username=f"{slug}-import"),
        )
        for name, text in runs.items():
            services.run_import(collection=collection, source=write_file(f"{slug}-{name}", text))
        return collection

    return load


def stored_upload(job: Any) -> Path:
    """Where the default uploads storage (the directory NDCG_UPLOAD_DIR) keeps a job's upload."""
    from django.conf import settings

    return Path(settings.NDCG_UPLOAD_DIR) / job.upload_path


# --- ir_datasets ---------------------------------------------------------------------------


@pytest.fixture
def local_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A dataset registered in ir_datasets' registry from files in tmp_path (nothing is
    downloaded): two TREC topics, three documents, four qrels and a run of four lines."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TrecQueries, TrecScoredDocs, TsvDocs
    from ir_datasets.util import LocalDownload

    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    (tmp_path / "topics.sgml").write_text(
        "<top>\n<num> Number: 301\n<title> solar power\n<desc> Description:\nHow is it "
        "stored?\n<narr> Narrative:\nBatteries count.\n</top>\n"
        "<top>\n<num> Number: 302\n<title> river floods\n<desc> Description:\nWhere?\n"
        "<narr> Narrative:\nForecasts do not.\n</top>\n"
    )
    (tmp_path / "docs.tsv").write_text("D1\tsolar batteries\nD2\tmolten salt\nD3\tthe Rhine\n")
    (tmp_path / "qrels.txt").write_text("301 0 D1 2\n301 0 D2 1\n302 0 D3 1\n302 0 D1 0\n")
    (tmp_path / "run.txt").write_text(
        "301 Q0 D2 1 9.5 bm25\n301 Q0 D1 2 7.25 bm25\n302 Q0 D1 1 3.0 bm25\n302 Q0 D3 2 2.0 bm25\n"
    )
    name = f"ndcg-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(
        name,
        Dataset(
            TsvDocs(LocalDownload(tmp_path / "docs.tsv")),
            TrecQueries(LocalDownload(tmp_path / "topics.sgml")),
            TrecQrels(LocalDownload(tmp_path / "qrels.txt"), {0: "no", 1: "some", 2: "yes"}),
            TrecScoredDocs(LocalDownload(tmp_path / "run.txt")),
        ),
    )
    return name


@pytest.fixture
def ir_datasets_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty IR_DATASETS_HOME (returned) and no network: every download goes through a
    proxy that refuses at once."""
    from annotations.formats import ir_records

    home = tmp_path / "irds"
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")  # nothing listens: refused at once
    monkeypatch.setattr(ir_records._ir_datasets().util, "home_path", lambda: home)
    return home
