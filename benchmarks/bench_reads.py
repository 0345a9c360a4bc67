#!/usr/bin/env python3
"""Read-path benchmark: pages and endpoints over HTTP against gunicorn, as ratios to a floor.

A script, not a test. It runs the platform as the README's production section does
(``bench_production.Services``: gunicorn with ``--workers`` processes, the Celery workers and
beat on Redis) on 127.0.0.1 against the PostgreSQL database that
``bench_scoring.py`` loaded (the Robust04-scale collection ``bench``; run that first, or pass
``--load`` to have this script run it), and prints one table of figures measured in the same
run with the same server and client:

* single client, warm: p50/p95 latency of each page or endpoint (the collection pages people
  watch: overview, leaderboard, queries, query, run, compare, dashboard, significance) over
  ``--requests`` sequential requests, against the framework floor
  (``GET /api/v1/collections/``), once the workers have stored the current leaderboard;
* ``--clients`` concurrent clients for ``--duration`` seconds: throughput and p50/p95 of the
  floor, the leaderboard API and the leaderboard page;
* a judgement through the API, then the leaderboard API polled until it answers at the new
  scores (the workers store the query's scores and the board's rows; reads only read);
* the snapshot's two passes in this process: the rows (``leaderboard_refresh``, bounds
  cached as after one judgement; with nothing moved, so every CI is kept from the stored
  snapshot, and without the stored matrix, so every run is resampled) and the randomised
  Tukey HSD (``significance_compute`` on the stored per-query matrix), with the
  permutations it used;
* judging while people watch: a judgement's API latency with 0, 8 and 50 open leaderboard
  pages that poll ``leaderboard/state/`` every ``--poll`` seconds and reload the table when
  the stamp moved, as the page's script does;
* the qrels export's rate (rows/s) against ``COPY (SELECT ...) TO STDOUT`` of the same rows.

The client is Python threads with one ``http.client`` connection per request (gunicorn's sync
workers close every connection); the floor goes through the same client, so the ratios
compare the server's work. Judgements made here are removed afterwards (untimed).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
SLUG = "bench"
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_bench"
USERNAME = "bench-reader"
# A little more than a second between changes (the pace the figures were taken at).
MIN_INTERVAL_S = 1.1
# The server's and this process's key: the session made here must be valid there.
SECRET_KEY = "benchmark-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz"
# The stack's broker and cache: Redis databases of their own (flushed at start).
REDIS_DB = 12


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# --- setup --------------------------------------------------------------------------------


def django_setup(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "ndcg_platform.settings"
    os.environ["DJANGO_SECRET_KEY"] = SECRET_KEY
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from bench_scoring import tasks_in_process

    tasks_in_process()


def organiser_login(collection: Any, username: str) -> tuple[Any, str, str]:
    """An organiser of `collection` named `username`, with an API token and a session made
    here (valid on a server with the same secret key): (user, token key, session key)."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore
    from rest_framework.authtoken.models import Token

    from annotations.models import Membership

    user, _ = User.objects.get_or_create(username=username)
    Membership.objects.get_or_create(
        collection=collection, user=user, defaults={"role": "organiser"}
    )
    token, _ = Token.objects.get_or_create(user=user)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    # The backend that holds users (django-axes' comes first and only guards logins).
    session[BACKEND_SESSION_KEY] = next(
        name for name in settings.AUTHENTICATION_BACKENDS if not name.startswith("axes.")
    )
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return user, token.key, session.session_key or ""


def prepare(url: str) -> dict[str, str]:
    """An organiser account with an API token and a session; the names to request."""
    from django.core.management import call_command

    from annotations.models import Collection, Query, Run

    call_command("migrate", verbosity=0, interactive=False)  # a database of older code
    collection = Collection.objects.filter(slug=SLUG).first()
    if collection is None:
        sys.exit(f"no collection {SLUG!r} in {url}: run benchmarks/bench_scoring.py first")
    _, token_key, session_key = organiser_login(collection, USERNAME)
    # What the workers store after an import (untimed): every cutoff's leaderboard with its
    # significance, so that the figures below read current snapshots.
    from annotations.scores import snapshots

    for k in collection.sorted_cutoffs:
        snapshots.leaderboard_complete(collection=collection, k=k)
    runs = list(
        Run.objects.filter(collection=collection).order_by("name").values_list("name", flat=True)
    )
    query = (
        Query.objects.filter(collection=collection)
        .order_by("qid")
        .values_list("qid", flat=True)[10]
    )
    return {
        "token": token_key,
        "session": session_key,
        "run_a": runs[0],
        "run_b": runs[1],
        "qid": query,
    }


def judged_pairs(count: int, seed: int) -> list[tuple[str, str, int]]:
    from annotations.models import Judgement

    rows = list(
        Judgement.objects.filter(query__collection__slug=SLUG)
        .exclude(assessor__username=USERNAME)
        .order_by("id")
        .values_list("query__qid", "document__docno", "grade")[:50000]
    )
    rng = random.Random(seed)
    chosen = rng.sample(rows, count)
    return [(qid, docno, (grade + rng.randint(1, 3)) % 4) for qid, docno, grade in chosen]


def cleanup() -> None:
    from annotations import services
    from annotations.models import Judgement

    for judgement in Judgement.objects.filter(
        assessor__username=USERNAME, query__collection__slug=SLUG
    ).select_related("query", "document", "assessor"):
        services.judgement_delete(judgement=judgement, source="api", changed_by=None)


# --- server -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(url: str, port: int, workers: int) -> Any:
    """The production stack (``bench_production.Services``: gunicorn, the Celery workers and
    beat on a Redis database of their own), as the README's production section runs it: the
    workers keep the stored scores and leaderboards current, the pages only read them."""
    import tempfile
    from types import SimpleNamespace

    import bench_production

    args = SimpleNamespace(database_url=url, web_concurrency=workers, redis_db=REDIS_DB)
    subprocess.run(
        ["redis-cli", "-n", str(REDIS_DB), "flushdb"], check=True, capture_output=True
    )  # fmt: skip
    services = bench_production.Services(args, port, Path(tempfile.mkdtemp(prefix="bench-reads-")))
    # Throttling off: 50 clients from one address are the load, not an abuse.
    services.env["NDCG_THROTTLE_USER"] = services.env["NDCG_THROTTLE_ANON"] = "100000000/minute"
    services.env["DJANGO_SECRET_KEY"] = SECRET_KEY  # the session made here is valid there
    services.start()
    return services


def settle(client: Client, path: str, seconds: float = 120.0) -> None:
    """Wait until the workers have stored the leaderboard at the current scores (its API
    answer is no longer stale), so that the single-client figures read a current snapshot."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        body = client.json("GET", path)
        if body.get("rows") and not body.get("stale") and not body.get("pending"):
            return
        time.sleep(0.5)
    log(f"warning: {path} still stale after {seconds:.0f} s")


# --- client -------------------------------------------------------------------------------


class Client:
    def __init__(self, port: int, token: str, session: str) -> None:
        self.port = port
        self.token = token
        self.session = session
        self.lines = 0  # newlines in the last body read (thread-unsafe; export only)

    def request(
        self, method: str, path: str, body: dict[str, object] | None = None, page: bool = False
    ) -> tuple[int, float, int]:
        """(status, seconds, bytes) of one request on a new connection, body read whole."""
        headers = {"Host": "127.0.0.1"}
        if page:
            headers["Cookie"] = f"sessionid={self.session}"
        else:
            headers["Authorization"] = f"Token {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            size = lines = 0
            while chunk := response.read(1 << 16):
                size += len(chunk)
                lines += chunk.count(b"\n")
            self.lines = lines
            return response.status, time.perf_counter() - started, size
        finally:
            connection.close()

    def json(self, method: str, path: str) -> dict[str, object]:
        """One request's JSON body (Token auth)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            headers = {"Host": "127.0.0.1", "Authorization": f"Token {self.token}"}
            connection.request(method, path, headers=headers)
            return json.loads(connection.getresponse().read())  # type: ignore[no-any-return]
        finally:
            connection.close()


def single(client: Client, path: str, count: int, page: bool = False) -> dict[str, float]:
    for _ in range(3):
        status, _, _ = client.request("GET", path, page=page)
        if status != 200:
            sys.exit(f"GET {path} answered {status}")
    times = [client.request("GET", path, page=page)[1] for _ in range(count)]
    return {"p50": pct(times, 0.5) * 1e3, "p95": pct(times, 0.95) * 1e3}


def load(
    client: Client, path: str, clients: int, duration: float, page: bool = False
) -> dict[str, float]:
    times: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.monotonic() + duration

    def worker() -> None:
        mine: list[float] = []
        while time.monotonic() < stop:
            status, seconds, _ = client.request("GET", path, page=page)
            if status != 200:
                errors[0] += 1
            mine.append(seconds)
        with lock:
            times.extend(mine)

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    return {
        "rps": len(times) / elapsed,
        "p50": pct(times, 0.5) * 1e3,
        "p95": pct(times, 0.95) * 1e3,
        "errors": errors[0],
    }


def judge(client: Client, pair: tuple[str, str, int]) -> float:
    qid, docno, grade = pair
    status, seconds, _ = client.request(
        "POST",
        f"/api/v1/collections/{SLUG}/judgements/",
        {"qid": qid, "docno": docno, "grade": grade},
    )
    if status not in (200, 201):
        sys.exit(f"POST judgement answered {status}")
    return seconds


def watching(
    client: Client, pairs: list[tuple[str, str, int]], watchers: int, poll: float, k: int
) -> dict[str, float]:
    """Judgement latency while `watchers` leaderboard pages poll and reload."""
    done = threading.Event()
    reloads = [0]

    def tab(offset: float) -> None:
        # Judgements arrive faster than a tab polls, so every poll finds the stamp moved
        # and the tab reloads its table, as the page's script does.
        time.sleep(offset)
        while not done.is_set():
            client.request("GET", f"/collections/{SLUG}/leaderboard/state/?k={k}", page=True)
            status, _, _ = client.request(
                "GET", f"/collections/{SLUG}/leaderboard/?k={k}", page=True
            )
            reloads[0] += status == 200
            done.wait(poll)

    threads = [
        threading.Thread(target=tab, args=(poll * i / max(watchers, 1),)) for i in range(watchers)
    ]
    for thread in threads:
        thread.start()
    time.sleep(min(poll, 1.0) if watchers else 0)
    times = []
    for pair in pairs:
        times.append(judge(client, pair))
        time.sleep(0.05)
    done.set()
    for thread in threads:
        thread.join()
    return {"p50": pct(times, 0.5) * 1e3, "p95": pct(times, 0.95) * 1e3, "reloads": reloads[0]}


def copy_rate(url: str) -> dict[str, float]:
    import psycopg

    sql = (
        "COPY (SELECT q.qid, d.docno, j.grade FROM annotations_judgement j "
        "JOIN annotations_query q ON q.id = j.query_id "
        "JOIN annotations_document d ON d.id = j.document_id "
        "JOIN annotations_collection c ON c.id = q.collection_id "
        f"WHERE c.slug = '{SLUG}' ORDER BY q.qid, d.docno, j.assessor_id) TO STDOUT"
    )
    best = float("inf")
    rows = 0
    with psycopg.connect(url.replace("postgres://", "postgresql://", 1)) as conn:
        for _ in range(3):
            started = time.perf_counter()
            rows = 0
            with conn.cursor().copy(sql) as copy:
                for data in copy:
                    rows += bytes(data).count(b"\n")
            best = min(best, time.perf_counter() - started)
    return {"rows": rows, "seconds": best, "rate": rows / best}


# --- report -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--load", action="store_true", help="run bench_scoring.py first")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--requests", type=int, default=40, help="sequential requests per path")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of each load")
    parser.add_argument("--judgements", type=int, default=30, help="first reads after a judgement")
    parser.add_argument(
        "--watch-judgements", type=int, default=60, help="judgements per watching level"
    )
    parser.add_argument("--poll", type=float, default=3.0, help="seconds between a tab's polls")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.load:
        subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "bench_scoring.py"), "--preset", "robust04",
             "--database-url", args.database_url], check=True,
        )  # fmt: skip
    django_setup(args.database_url)
    names = prepare(args.database_url)
    pairs = judged_pairs(args.judgements + 3 * args.watch_judgements, args.seed)
    port = free_port()
    log(f"gunicorn with {args.workers} workers on 127.0.0.1:{port}")
    server = start_server(args.database_url, port, args.workers)
    client = Client(port, names["token"], names["session"])
    api = f"/api/v1/collections/{SLUG}"
    k = args.k
    paths = {
        "floor: GET /api/v1/collections/": ("/api/v1/collections/", False),
        "leaderboard API": (f"{api}/leaderboard/?k={k}", False),
        "leaderboard page": (f"/collections/{SLUG}/leaderboard/?k={k}", True),
        "collection overview": (f"/collections/{SLUG}/?k={k}", True),
        "queries page": (f"/collections/{SLUG}/queries/", True),
        "dashboard page": (f"/collections/{SLUG}/dashboard/?k={k}", True),
        "compare page": (
            f"/collections/{SLUG}/compare/?a={quote(names['run_a'])}&b={quote(names['run_b'])}&k={k}",
            True,
        ),
        "leaderboard state (poll)": (f"/collections/{SLUG}/leaderboard/state/?k={k}", True),
        "run scores API": (f"{api}/runs/{quote(names['run_a'])}/scores/?k={k}", False),
        "compare API": (
            f"{api}/compare/?a={quote(names['run_a'])}&b={quote(names['run_b'])}&k={k}",
            False,
        ),
        "run page": (f"/collections/{SLUG}/runs/{quote(names['run_a'])}/?k={k}", True),
        "query page (two rankings)": (
            f"/collections/{SLUG}/queries/{quote(names['qid'])}/?k={k}",
            True,
        ),
        "significance page": (f"/collections/{SLUG}/leaderboard/significance/?k={k}", True),
        "leaderboard report CSV (API)": (f"{api}/leaderboard/report/?k={k}&as=csv", False),
    }
    figures: dict[str, object] = {"single": {}, "load": {}, "first_read": {}, "watching": {}}
    figures["passes"] = snapshot_passes(k)
    try:
        settle(client, f"{api}/leaderboard/?k={k}")
        for label, (path, page) in paths.items():
            log(f"single client: {label}")
            figures["single"][label] = single(client, path, args.requests, page)  # type: ignore[index]
        # A judgement, then the leaderboard API polled until it answers at the new scores: how
        # long a watcher sees the stored board marked stale while the workers refresh it.
        log("leaderboard current after a judgement")
        first, stale = [], 0
        for pair in pairs[: args.judgements]:
            time.sleep(MIN_INTERVAL_S)
            judge(client, pair)
            started = time.perf_counter()
            while True:
                body = client.json("GET", f"{api}/leaderboard/?k={k}")
                if not body["stale"] and not body.get("pending"):
                    break
                stale += 1
                time.sleep(0.02)
            first.append(time.perf_counter() - started)
        figures["first_read"] = {
            "p50": pct(first, 0.5) * 1e3,
            "p95": pct(first, 0.95) * 1e3,
            "max": max(first) * 1e3,
            "stale": stale,
        }
        for label in ("floor: GET /api/v1/collections/", "leaderboard API", "leaderboard page"):
            path, page = paths[label]
            log(f"{args.clients} clients for {args.duration:.0f} s: {label}")
            figures["load"][label] = load(client, path, args.clients, args.duration, page)  # type: ignore[index]
        for level, watchers in enumerate((0, 8, 50), start=1):
            log(f"judging with {watchers} leaderboard pages open")
            first = args.judgements + (level - 1) * args.watch_judgements
            chunk = pairs[first : first + args.watch_judgements]
            figures["watching"][watchers] = watching(client, chunk, watchers, args.poll, k)  # type: ignore[index]
        log("qrels export vs COPY")
        # The fastest of three, as for COPY below: one request alone swings with whatever
        # the machine does meanwhile (the sweeps and vacuums after the judging above).
        timed = [client.request("GET", f"{api}/qrels/") for _ in range(3)]
        _, seconds, size = min(timed, key=lambda result: result[1])
        copy = copy_rate(args.database_url)
        figures["export"] = {
            "seconds": seconds,
            "bytes": size,
            "rows": client.lines,
            "copy_rows": copy["rows"],
            "copy_seconds": copy["seconds"],
        }
    finally:
        server.stop()
        cleanup()
    report(figures, args)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


def snapshot_passes(k: int, repeats: int = 5) -> dict[str, float]:
    """Seconds of the snapshot's first pass (rows) and second pass (HSD), p50 of `repeats`
    and 3, computed here as a worker would; both passes are stored, so the server starts
    with a current snapshot."""
    import numpy as np

    from annotations.models import Collection, LeaderboardSnapshot
    from annotations.scores import significance, snapshots

    collection = Collection.objects.get(slug=SLUG)
    snapshots.leaderboard_refresh(collection=collection, k=k)  # bounds cache filled
    rows, scratch = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        snapshots.leaderboard_refresh(collection=collection, k=k)
        rows.append(time.perf_counter() - started)
        # Without the stored matrix no CI can be kept: every run is resampled.
        LeaderboardSnapshot.objects.filter(collection=collection, k=k).update(per_query=b"")
        started = time.perf_counter()
        snapshots.leaderboard_refresh(collection=collection, k=k)
        scratch.append(time.perf_counter() - started)
    stored = LeaderboardSnapshot.objects.get(collection=collection, k=k)
    run_ids = [row["run"] for row in stored.rows]
    matrix = np.frombuffer(bytes(stored.per_query)).reshape(len(run_ids), len(stored.query_ids))
    hsd = []
    for _ in range(3):
        started = time.perf_counter()
        document, _ = significance.significance_compute(
            stamp=stored.stamp, run_ids=run_ids, matrix=matrix
        )
        hsd.append(time.perf_counter() - started)
    significance.significance_refresh(collection=collection, k=k)
    return {
        "runs": len(run_ids),
        "queries": len(stored.query_ids),
        "rows_p50": pct(rows, 0.5) * 1e3,
        "rows_scratch_p50": pct(scratch, 0.5) * 1e3,
        "hsd_p50": pct(hsd, 0.5) * 1e3,
        "permutations": document["permutations"],
    }


def report(f: dict, args: argparse.Namespace) -> None:  # type: ignore[type-arg]
    p = f["passes"]
    print(
        f"\nsnapshot passes at {p['runs']} runs x {p['queries']} queries: rows "
        f"{p['rows_p50']:.1f} ms (p50; no values moved, every CI kept), "
        f"{p['rows_scratch_p50']:.1f} ms with every CI resampled; randomised Tukey HSD "
        f"{p['hsd_p50']:.0f} ms ({p['permutations']} permutations)"
    )
    floor = f["single"]["floor: GET /api/v1/collections/"]
    print("\nsingle client, warm (ms)             p50      p95   p50 / floor p50")
    for label, row in f["single"].items():
        ratio = row["p50"] / floor["p50"]
        print(f"  {label:32} {row['p50']:8.1f} {row['p95']:8.1f}   {ratio:6.2f}x")
    lf = f["load"]["floor: GET /api/v1/collections/"]
    print(
        f"\n{args.clients} clients, {args.duration:.0f} s"
        "                  req/s   p50 ms   p95 ms  req/s/floor  p95/floor  errors"
    )
    for label, row in f["load"].items():
        print(
            f"  {label:32} {row['rps']:7.1f} {row['p50']:8.1f} {row['p95']:8.1f}"
            f"  {row['rps'] / lf['rps']:10.2f}x {row['p95'] / lf['p95']:9.2f}x  {row['errors']}"
        )
    fr = f["first_read"]
    print(
        "\njudgement -> leaderboard API current (ms): "
        f"p50 {fr['p50']:.1f}, p95 {fr['p95']:.1f}, max {fr['max']:.1f}"
        f" ({fr['stale']} stale answers while waiting)"
    )
    base = f["watching"][0]
    print("\njudging while watching            judgement p50 ms   p95 ms  p95 / none  reloads")
    for watchers, row in f["watching"].items():
        print(
            f"  {watchers:3} leaderboard pages open      {row['p50']:10.1f} {row['p95']:8.1f}"
            f"  {row['p95'] / base['p95']:9.2f}x  {row['reloads']}"
        )
    e = f["export"]
    rate, copy_rate_ = e["rows"] / e["seconds"], e["copy_rows"] / e["copy_seconds"]
    print(
        f"\nqrels export: {e['rows']} rows, {e['bytes']} bytes in {e['seconds']:.2f} s"
        f" = {rate:,.0f} rows/s; COPY TO STDOUT {e['copy_seconds']:.2f} s"
        f" = {copy_rate_:,.0f} rows/s; ratio {rate / copy_rate_:.2f}"
    )


if __name__ == "__main__":
    main()
