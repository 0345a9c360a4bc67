#!/usr/bin/env python3
"""Grading benchmark: keyboard grades in Chromium against gunicorn, beside a page load's floor.

A script, not a test. It starts the platform as bench_production.py does (gunicorn with
``ndcg_platform/gunicorn.conf.py``, DJANGO_ENV=production, Celery workers and beat on a
Redis database of their own) on a fresh PostgreSQL database holding a generated collection
with long documents (``--doc-chars`` on average, up to 2x that), and an assessor with an
assignment of every pooled pair. Playwright drives Debian's Chromium (the flags of
tests/conftest.py) on the grading page: ``--grades`` keyboard grades per phase, a think time
of ``--think`` s between a pair appearing and its key, a first phase alone and then one
with each ``--api-assessors`` count of other assessors grading through the API meanwhile
(threads, a new connection per request, think time 0.5-1.5 s).

Measured in the page (``performance.now()``): key press -> next pair visible (the first
animation frame after the page's ``grading:shown`` event) and key press -> grade committed
(the page's ``grading:saved`` event: the server answered that it committed it). Reference,
in the same browser in the same run, interleaved: a navigation to a trivial page of the
same server (the login page: the floor of a page load, Navigation Timing's loadEventEnd) and
a navigation to a grading page (what each grade cost before). Afterwards every grade is
reconciled with the database: one history row per key press, on the pair shown.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_production as production  # noqa: E402  (gunicorn + workers, HTTP client, stats)
import bench_scoring as base  # noqa: E402  (database helpers, django setup, log)

SLUG = "bench-grading"
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_grading_bench"
GRADER = "bench-grader"
API_PREFIX = "bench-grading-api-"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
FLOOR_PATH = "/accounts/login/"
WORDS = [
    *[
        "solar",
        "energy",
        "storage",
        "battery",
        "grid",
        "river",
        "flood",
        "forecast",
        "heat",
        "salt",
        "plant",
        "night",
    ],
    *[
        "policy",
        "price",
        "shipping",
        "report",
        "weather",
        "rain",
        "wind",
        "market",
        "turbine",
        "hydrogen",
    ],
    *[
        "lithium",
        "cell",
        "network",
        "demand",
        "supply",
        "season",
        "coast",
        "delta",
        "dam",
        "levee",
        "survey",
    ],
]

# Counts key presses, pairs shown and grades committed in every document the page opens.
WATCH = """
window.__bench = { keys: {}, visible: [], committed: [], shown: 0, saved: 0, refused: 0,
                   ready: 0 };
window.addEventListener('keydown', function (event) {
  var box = document.querySelector('#pair-slot .pair');
  if (box && /^[0-9]$/.test(event.key)) {
    window.__bench.keys[box.getAttribute('data-item')] = performance.now();
    window.__bench.lastKey = performance.now();
  }
}, true);
document.addEventListener('grading:shown', function (event) {
  var pressed = window.__bench.lastKey;
  window.__bench.shown += 1;
  window.__bench.ready += event.detail.ready ? 1 : 0;
  requestAnimationFrame(function () {
    if (pressed !== undefined) { window.__bench.visible.push(performance.now() - pressed); }
  });
});
document.addEventListener('grading:saved', function (event) {
  var pressed = window.__bench.keys[event.detail.item];
  window.__bench.saved += 1;
  if (pressed !== undefined) { window.__bench.committed.push(performance.now() - pressed); }
});
document.addEventListener('grading:refused', function () { window.__bench.refused += 1; });
"""
FRAME = """() => new Promise((resolve) => {
  const started = performance.now();
  requestAnimationFrame(() => resolve(performance.now() - started));
})"""
NAVIGATION = """() => {
  const e = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return e && e.loadEventEnd > 0 && paint
    ? [e.responseStart - e.startTime, e.loadEventEnd - e.startTime, paint.startTime] : null;
}"""


# --- data --------------------------------------------------------------------------------


def create_database(url: str) -> None:
    base.database_recreate(url)
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": production.SECRET_KEY}
    env.pop("CELERY_BROKER_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "--verbosity", "0"],
        cwd=REPO, env=env, check=True,
    )  # fmt: skip


def text_of(rng: random.Random, chars: int) -> str:
    lines, size = [], 0
    while size < chars:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def load(args: argparse.Namespace) -> None:
    """The collection: queries with narratives, long documents, one run, a pool of every
    pair assigned to the grader; API assessors with tokens."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from annotations import services
    from annotations.models import Document, Membership, Query

    rng = random.Random(args.seed)
    collection = services.collection_create(slug=SLUG, name="Grading benchmark")
    Query.objects.bulk_create(
        [
            Query(
                collection=collection,
                qid=f"q{q}",
                title=" ".join(rng.sample(WORDS, 3)),
                description="Which documents describe " + " ".join(rng.sample(WORDS, 4)) + "?",
                narrative="A relevant document names " + ", ".join(rng.sample(WORDS, 6)) + ".",
            )
            for q in range(args.queries)
        ]
    )
    per_query = args.depth
    documents = [
        Document(
            collection=collection,
            docno=f"doc-{n:05d}",
            title=" ".join(rng.sample(WORDS, 5)).capitalize(),
            text=text_of(rng, rng.randint(args.doc_chars // 2, args.doc_chars * 3 // 2)),
        )
        for n in range(args.queries * per_query)
    ]
    Document.objects.bulk_create(documents, batch_size=100)
    results = {
        f"q{q}": [
            (f"doc-{q * per_query + r:05d}", float(per_query - r), r + 1) for r in range(per_query)
        ]
        for q in range(args.queries)
    }
    services.run_store(collection=collection, run_name="system-a", results=results)
    grader = User.objects.create(username=GRADER)
    Membership.objects.create(collection=collection, user=grader, role="assessor")
    pool, _ = services.pool_build(collection=collection, name="main", depth=per_query)
    services.assignment_create(pool=pool, assessors=[grader])
    api_users = User.objects.bulk_create(
        [User(username=f"{API_PREFIX}{i:03d}") for i in range(max(args.api_assessors or [0]))]
    )
    Membership.objects.bulk_create(
        [Membership(collection=collection, user=u, role="assessor") for u in api_users]
    )
    Token.objects.bulk_create([Token(user=u, key=Token.generate_key()) for u in api_users])


def session_of(username: str) -> str:
    """A session for `username` made here (valid on a server with the same secret key)."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    user = User.objects.get(username=username)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = next(
        name for name in settings.AUTHENTICATION_BACKENDS if not name.startswith("axes.")
    )
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key or ""


# --- other assessors through the API -----------------------------------------------------


class ApiAssessors:
    """`count` assessors posting judgements on random pairs, think time 0.5-1.5 s."""

    def __init__(self, port: int, tokens: list[str], pairs: list[tuple[str, str]]) -> None:
        self.port, self.tokens, self.pairs = port, tokens, pairs
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.seconds: list[float] = []
        self.errors = 0
        self.threads = [
            threading.Thread(target=self.assessor, args=(i, token), daemon=True)
            for i, token in enumerate(tokens)
        ]

    def assessor(self, index: int, token: str) -> None:
        rng = random.Random(index)
        self.done.wait(rng.uniform(0, 1.0))
        while not self.done.is_set():
            qid, docno = rng.choice(self.pairs)
            status, seconds, _ = production.request(
                self.port, "POST", f"/api/v1/collections/{SLUG}/judgements/", token=token,
                body={"qid": qid, "docno": docno, "grade": rng.randint(0, 3)},
            )  # fmt: skip
            with self.lock:
                if status in (200, 201):
                    self.seconds.append(seconds)
                else:
                    self.errors += 1
            self.done.wait(rng.uniform(0.5, 1.5))

    def __enter__(self) -> ApiAssessors:
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.monotonic() - self.started
        self.done.set()
        for thread in self.threads:
            thread.join()


# --- the browser -------------------------------------------------------------------------


def navigation(tab, url: str) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """(time to first byte, load event end, first contentful paint) in ms of one navigation
    of `tab` to `url`, from its start."""
    tab.goto(url, wait_until="load")
    handle = tab.wait_for_function(NAVIGATION)
    ttfb, loaded, painted = handle.json_value()
    return float(ttfb), float(loaded), float(painted)


def phase(
    page,
    floor_tab,
    args: argparse.Namespace,
    grade_url: str,
    label: int,
    rng: random.Random,
    grades: int,
) -> dict:  # type: ignore[no-untyped-def]
    """`grades` keyboard grades, a floor navigation and a grading page load every
    `args.floor_every` grades; returns the figures and what was pressed on which pair."""
    start = page.evaluate("[window.__bench.visible.length, window.__bench.committed.length]")
    shown, ready = page.evaluate("[window.__bench.shown, window.__bench.ready]")
    floors: list[float] = []
    page_loads: list[float] = []
    frames: list[float] = []
    floor_paints: list[float] = []
    pressed: list[tuple[int, int]] = []
    for n in range(grades):
        page.wait_for_function("(n) => window.__bench.shown >= n", arg=shown + n)
        if n % args.floor_every == args.floor_every - 1:
            # The references while the grading tab is idle (its grades committed), so that
            # neither disturbs the other's measurement in the browser.
            page.wait_for_function(
                "(n) => window.__bench.saved + window.__bench.refused >= n", arg=start[1] + n
            )
            floor_tab.bring_to_front()  # a tab behind another gets its frames throttled
            _, loaded, painted = navigation(floor_tab, FLOOR_PATH)
            floors.append(loaded)
            floor_paints.append(painted)
            page_loads.append(navigation(floor_tab, grade_url)[1])
            page.bring_to_front()
        time.sleep(args.think)
        frames.append(page.evaluate(FRAME))
        item = int(page.get_attribute("#pair-slot .pair", "data-item"))
        grade = rng.randint(0, 3)
        pressed.append((item, grade))
        page.keyboard.press(str(grade))
    page.wait_for_function(
        "(n) => window.__bench.saved + window.__bench.refused >= n",
        arg=start[1] + grades,
        timeout=300_000,
    )
    visible = page.evaluate("window.__bench.visible")[start[0] :]
    committed = page.evaluate("window.__bench.committed")[start[1] :]
    return {
        "api_assessors": label,
        "grades": grades,
        "ready": page.evaluate("window.__bench.ready") - ready,
        "visible": production.summary(visible),
        "committed": production.summary(committed),
        "floor": production.summary(floors),
        "grading_page_load": production.summary(page_loads),
        "floor_paint": production.summary(floor_paints),
        "idle_frame": production.summary(frames),
        "pressed": pressed,
    }


def reconcile(pressed: list[tuple[int, int]]) -> dict:
    """Every key press is one history row of the grader, on the pair shown, with its grade."""
    from annotations.models import AssignmentItem, Judgement, JudgementHistory

    items = {
        item.id: (item.entry.query_id, item.entry.document_id)
        for item in AssignmentItem.objects.filter(assignment__assessor__username=GRADER)
        .select_related("entry")
        .only("id", "entry__query_id", "entry__document_id")
    }
    rows = JudgementHistory.objects.filter(assessor__username=GRADER, source="form")
    held = {
        (q, d): g
        for q, d, g in Judgement.objects.filter(assessor__username=GRADER).values_list(
            "query_id", "document_id", "grade"
        )
    }
    wrong = sum(1 for item, grade in pressed if held.get(items[item]) != grade)
    timed = rows.filter(dwell_ms__isnull=False).count()
    return {"presses": len(pressed), "history_rows": rows.count(), "wrong": wrong, "timed": timed}


def ms(value: float) -> str:
    return f"{value:.0f}"


def report(phases: list[dict], api: dict, checked: dict, args: argparse.Namespace) -> list[str]:
    lines = [
        f"grades per phase {args.grades} (with API assessors {args.api_grades}), think "
        f"{args.think} s, documents {args.doc_chars} "
        f"characters on average, gunicorn workers {args.web_concurrency}",
        "",
        "| API assessors | next pair visible p50 / p95 (ms) | committed p50 / p95 (ms) "
        "| floor: trivial page load p50 / p95 (ms) | its first paint p50 / p95 (ms) "
        "| grading page load p50 / p95 (ms) | idle frame p50 (ms) "
        "| visible p95 / floor p95 | committed p95 / floor p95 | API writes/s (p95 ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for figures in phases:
        v, c, f, g, p, i = (
            figures[k]
            for k in (
                "visible", "committed", "floor", "grading_page_load", "floor_paint", "idle_frame"
            )
        )  # fmt: skip
        extra = api.get(figures["api_assessors"])
        writes = f"{extra['rate']:.1f} ({ms(extra['p95'])})" if extra else "-"
        lines.append(
            f"| {figures['api_assessors']} | {ms(v['p50'])} / {ms(v['p95'])} "
            f"| {ms(c['p50'])} / {ms(c['p95'])} | {ms(f['p50'])} / {ms(f['p95'])} "
            f"| {ms(p['p50'])} / {ms(p['p95'])} "
            f"| {ms(g['p50'])} / {ms(g['p95'])} | {i['p50']:.1f} | {v['p95'] / f['p95']:.2f} "
            f"| {c['p95'] / f['p95']:.2f} | {writes} |"
        )
    lines += [
        "",
        f"Targets: visible p95 <= 0.5x floor p95, committed p95 <= 1x floor p95. Reconciled: "
        f"{checked['presses']} key presses, {checked['history_rows']} history rows "
        f"({checked['timed']} with a dwell time), {checked['wrong']} pairs not holding the "
        "grade pressed. Pairs shown from those held ready: "
        + ", ".join(f"{figures['ready']} of {figures['grades']}" for figures in phases)
        + ".",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--grades", type=int, default=220, help="keyboard grades per phase")
    parser.add_argument("--think", type=float, default=0.3, help="s between a pair and its key")
    parser.add_argument("--api-assessors", type=int, nargs="*", default=[50])
    parser.add_argument(
        "--api-grades", type=int, help="keyboard grades per phase with API assessors (--grades)"
    )
    parser.add_argument("--queries", type=int, default=25)
    parser.add_argument("--depth", type=int, default=24, help="pooled documents per query")
    parser.add_argument("--doc-chars", type=int, default=40_000)
    parser.add_argument("--floor-every", type=int, default=5, help="grades between references")
    parser.add_argument("--web-concurrency", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--redis-db", type=int, default=14, help="broker; the next one: cache")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    args.api_grades = args.api_grades or args.grades
    needed = args.grades + args.api_grades * len(args.api_assessors)
    if args.queries * args.depth < needed:
        sys.exit(f"{args.queries * args.depth} pairs pooled, {needed} grades asked")

    base.log("database: creating and migrating")
    create_database(args.database_url)
    production.django_setup(args)
    base.log("data: loading the collection")
    load(args)
    from rest_framework.authtoken.models import Token

    from annotations.models import Assignment

    assignment = Assignment.objects.get(assessor__username=GRADER)
    session = session_of(GRADER)
    tokens = list(
        Token.objects.filter(user__username__startswith=API_PREFIX)
        .order_by("user__username")
        .values_list("key", flat=True)
    )
    pairs = [
        (f"q{q}", f"doc-{q * args.depth + r:05d}")
        for q in range(args.queries)
        for r in range(args.depth)
    ]

    port = production.free_port()
    logs = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    production.flush_redis(args)
    services = production.Services(args, port, logs)
    base.log(f"services: starting gunicorn and workers on port {port} (logs {logs})")
    services.start()
    phases: list[dict] = []
    api: dict[int, dict] = {}
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            root = f"http://127.0.0.1:{port}"
            context = browser.new_context(base_url=root, viewport={"width": 1366, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": session, "url": root}])
            context.set_default_timeout(60_000)
            context.add_init_script(WATCH)
            page = context.new_page()
            floor_tab = context.new_page()
            page.goto(f"/judging/assignments/{assignment.id}/continue/")
            grade_url = page.url
            for _ in range(2 * args.web_concurrency):  # warm every worker, cache static files
                navigation(floor_tab, FLOOR_PATH)
                navigation(floor_tab, grade_url)
            page.bring_to_front()
            rng = random.Random(args.seed)
            base.log("phase: the grader alone")
            phases.append(phase(page, floor_tab, args, grade_url, 0, rng, args.grades))
            base.log(json.dumps({k: v for k, v in phases[-1].items() if k != "pressed"}))
            for count in args.api_assessors:
                base.log(f"phase: with {count} assessors grading through the API")
                with ApiAssessors(port, tokens[:count], pairs) as others:
                    phases.append(
                        phase(page, floor_tab, args, grade_url, count, rng, args.api_grades)
                    )
                api[count] = {
                    "rate": len(others.seconds) / others.elapsed,
                    "p95": production.pct(others.seconds, 0.95) * 1000,
                    "errors": others.errors,
                }
                base.log(json.dumps({k: v for k, v in phases[-1].items() if k != "pressed"}))
            browser.close()
    finally:
        services.stop()
    checked = reconcile([press for figures in phases for press in figures["pressed"]])
    for line in report(phases, api, checked, args):
        print(line)
    if args.json:
        for figures in phases:
            figures.pop("pressed")
        Path(args.json).write_text(json.dumps({"phases": phases, "api": api, "checked": checked}))


if __name__ == "__main__":
    main()
