#!/usr/bin/env python3
"""Production-mode benchmark: gunicorn, Celery workers and beat on Redis, against inline scoring.

A script, not a test. It runs the platform as docs/operations.md's production section does,
on 127.0.0.1 only: gunicorn with ``ndcg_platform/gunicorn.conf.py`` (DJANGO_ENV=production,
plain http), a Celery worker for the default queue (``-Q celery -c 2``), one for
``-Q derived -c 1`` and one for ``-Q imports -c 1``, both at nice 10 (as ``make
worker-derived`` and ``make worker-imports``), and beat, all on a
Redis database of their own (flushed at start), against a PostgreSQL collection generated
with gen_trec.py and loaded through the services (``bench_scoring``'s helpers). It prints
one Markdown table of figures measured in the same run:

* freshness: a judgement through the API every ``--interval`` seconds; POST -> the query's
  scores stored (Query.scored_version >= judgements_version, polled every 2 ms from this
  process), p50/p95 over ``--judgements`` judgements with 0, 8 and 50 open leaderboard pages
  (threads polling ``leaderboard/state/`` every ``--poll`` s and reloading ``leaderboard/``
  when the stamp moves). Reference: the inline path, a second gunicorn with the same
  config and no broker (scores stored before the answer), with as many pages open on it;
  half an interval after each production judgement the same client posts one there and
  times it the same way, so both see the same load. The services' call in this process
  (commit -> stored, as bench_scoring measures it) is printed too;
* leaderboard snapshot current: bursts of ``--burst`` judgements, then the delay from the
  last one's answer until every stored LeaderboardSnapshot of the collection carries the
  collection's current scores stamp (no query pending);
* capacity: ``--assessors`` API clients (Python threads, one connection per request, think
  time 0.5-1.5 s) judging for ``--duration`` s: acknowledged writes/s, p50/p95, errors, beside
  ``GET /api/v1/collections/`` by the same clients with the same think time for the same
  duration. Every acknowledged write is reconciled against the database afterwards (history
  rows, created judgements, each pair's last acknowledged grade). The grading form is not
  exercised: API clients only. CPU seconds per acknowledged request of each process group
  (gunicorn, each worker, beat) and of the database's backends, from /proc, for both loads:
  on a shared machine they show where the capacity goes whatever else runs.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_reads  # noqa: E402  (the organiser's token and session)
import bench_scoring as base  # noqa: E402  (the shared helpers: data, loading, database)

SLUG = "bench"
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_production_bench"
SECRET_KEY = "benchmark-only-secret-key-production-0123456789abcdefghijklmnopqrstuvwxyz"
JUDGE = "bench-prod-judge"
ASSESSOR_PREFIX = "bench-prod-assessor-"
# The moderate default: Robust04's depth and judgement density, fewer runs and queries.
MODERATE = {"queries": 100, "runs": 50}
FLOOR_PATH = "/api/v1/collections/"
POLL_SECONDS = 0.002  # the scored marker's polling (the same for production and inline)
K = 10

log = base.log


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": pct(values, 0.5), "p95": pct(values, 0.95), "n": len(values)}


# --- data and loading ---------------------------------------------------------------------


def data_directory(args: argparse.Namespace) -> Path:
    if args.preset == "moderate":
        return Path(args.workdir).resolve() / "production-moderate"
    return base.data_dir(SimpleNamespace(workdir=args.workdir, preset=args.preset))


def ensure_data(args: argparse.Namespace) -> Path:
    if args.preset != "moderate":
        base.ensure_data(SimpleNamespace(workdir=args.workdir, preset=args.preset, gen=None))
        return data_directory(args)
    directory = data_directory(args)
    if (directory / "manifest.json").is_file():
        manifest = json.loads((directory / "manifest.json").read_text())
        if len(manifest.get("tags", [])) == MODERATE["runs"]:
            return directory
    scratch = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    log(f"data: generating into {directory}")
    subprocess.run(
        [sys.executable, str(base.find_generator(None)), str(scratch), "--preset", "robust04",
         "--queries", str(MODERATE["queries"]), "--runs", str(MODERATE["runs"])],
        check=True,
    )  # fmt: skip
    shutil.rmtree(directory, ignore_errors=True)
    scratch.rename(directory)
    return directory


def load_here(args: argparse.Namespace) -> None:
    """Child process: fresh database, runs then qrels through the services, a full rescore."""
    directory = data_directory(args)
    base.database_recreate(args.database_url)
    base.django_setup(args)
    from django.core.management import call_command

    from annotations import scores, services

    call_command("migrate", verbosity=0, interactive=False)
    base.defer_scoring()
    collection = services.collection_create(
        slug=SLUG, name="Production benchmark", cutoffs=list(base.CUTOFFS)
    )
    started = time.perf_counter()
    services.runs_import(collection=collection, sources=[str(p) for p in base.run_files(directory)])
    log(f"load: runs imported in {time.perf_counter() - started:.1f} s")
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    started = time.perf_counter()
    services.judgements_import(
        collection=collection,
        source=str(directory / "qrels.txt"),
        assessor=services.import_assessor(),
    )
    log(f"load: qrels imported in {time.perf_counter() - started:.1f} s")
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    started = time.perf_counter()
    scores.scores_rescore_collection(collection_id=collection.id)
    log(f"load: full rescore in {time.perf_counter() - started:.1f} s")


def load(args: argparse.Namespace) -> None:
    ensure_data(args)
    subprocess.run(
        [sys.executable, __file__, "--load-only", "--preset", args.preset,
         "--workdir", args.workdir, "--database-url", args.database_url],
        check=True,
    )  # fmt: skip


# --- accounts and pairs (this process: inline, no broker) ---------------------------------


def django_setup(args: argparse.Namespace) -> None:
    os.environ["DJANGO_SECRET_KEY"] = SECRET_KEY  # the session made here is valid there
    base.django_setup(args)


def prepare(assessors: int) -> dict:
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from annotations.models import Collection, Membership

    collection = Collection.objects.filter(slug=SLUG).first()
    if collection is None:
        sys.exit(f"no collection {SLUG!r}: run without --skip-load")
    judge, token_key, session_key = bench_reads.organiser_login(collection, JUDGE)
    names = [f"{ASSESSOR_PREFIX}{i:04d}" for i in range(assessors)]
    existing = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    User.objects.bulk_create([User(username=n) for n in names if n not in existing])
    users = list(User.objects.filter(username__in=names).order_by("username"))
    Membership.objects.bulk_create(
        [Membership(collection=collection, user=u, role="assessor") for u in users],
        ignore_conflicts=True,
    )
    Token.objects.bulk_create(
        [Token(user=u, key=Token.generate_key()) for u in users if not hasattr(u, "auth_token")],
        ignore_conflicts=True,
    )
    tokens = dict(Token.objects.filter(user__in=users).values_list("user_id", "key"))
    return {
        "collection": collection,
        "judge": judge,
        "token": token_key,
        "session": session_key,
        "assessors": [(u.id, tokens[u.id]) for u in users],
    }


def candidate_pairs(directory: Path, seed: int) -> list[tuple[str, str]]:
    """Judged-pool pairs (qrels) and top-10 documents of a few runs, shuffled."""
    rng = random.Random(seed)
    judged: list[tuple[str, str]] = []
    with open(directory / "qrels.txt") as stream:
        for line in stream:
            qid, _, docno, _ = line.split()
            judged.append((qid, docno))
    top: set[tuple[str, str]] = set()
    for path in base.run_files(directory)[:5]:
        with open(path) as stream:
            for line in stream:
                qid, _, docno, rank, _, _ = line.split()
                if int(rank) <= 10:
                    top.add((qid, docno))
    pairs = rng.sample(judged, min(len(judged), 20000)) + sorted(top)
    rng.shuffle(pairs)
    return pairs


# --- processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Services:
    """gunicorn, three Celery workers and beat, each in its own process group."""

    def __init__(
        self, args: argparse.Namespace, port: int, logs: Path, *, inline: bool = False
    ) -> None:
        self.args, self.port, self.logs, self.inline = args, port, logs, inline
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        broker = f"redis://127.0.0.1:6379/{args.redis_db}"
        self.env = {
            **os.environ,
            "DATABASE_URL": args.database_url,
            "DJANGO_ENV": "production",
            "DJANGO_SECRET_KEY": SECRET_KEY,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "DJANGO_SECURE_COOKIES": "false",
            "DJANGO_SECURE_HSTS_SECONDS": "0",
            "CELERY_BROKER_URL": broker,
            "DJANGO_CACHE_URL": f"redis://127.0.0.1:6379/{args.redis_db + 1}",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "WEB_CONCURRENCY": str(args.web_concurrency),
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        if inline:  # the reference: the same server scoring in the request, no broker
            self.env.pop("CELERY_BROKER_URL")

    def _start(self, name: str, command: list[str]) -> None:
        output = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115  (kept by the child)
        self.procs[name] = subprocess.Popen(
            command, cwd=REPO, env=self.env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def start(self) -> None:
        binary = Path(sys.executable).parent
        celery = str(binary / "celery")
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--no-input", "--verbosity", "0"],
            cwd=REPO, env=self.env, check=True,
        )  # fmt: skip
        self._start(
            "gunicorn",
            [str(binary / "gunicorn"), "ndcg_platform.wsgi:application",
             "--config", "ndcg_platform/gunicorn.conf.py"],
        )  # fmt: skip
        if self.inline:
            self._wait(set())
            return
        self._start(
            "worker",
            [celery, "-A", "ndcg_platform", "worker", "-Q", "celery", "-c", "2",
             "-n", f"bench-scores-{os.getpid()}@%h", "--loglevel", "INFO"],
        )  # fmt: skip
        self._start(
            "worker-derived",
            ["nice", "-n", "10", celery, "-A", "ndcg_platform", "worker", "-Q", "derived",
             "-c", "1", "-n", f"bench-derived-{os.getpid()}@%h", "--loglevel", "INFO"],
        )  # fmt: skip
        self._start(
            "worker-imports",
            ["nice", "-n", "10", celery, "-A", "ndcg_platform", "worker", "-Q", "imports",
             "-c", "1", "-O", "fair", "-n", f"bench-imports-{os.getpid()}@%h",
             "--loglevel", "INFO"],
        )  # fmt: skip
        self._start(
            "worker-outbound",
            [celery, "-A", "ndcg_platform", "worker", "-Q", "outbound", "-P", "threads",
             "-c", "8", "-n", f"bench-outbound-{os.getpid()}@%h", "--loglevel", "INFO"],
        )  # fmt: skip
        self._start(
            "beat",
            [celery, "-A", "ndcg_platform", "beat", "--loglevel", "INFO",
             "--schedule", str(self.logs / "celerybeat-schedule")],
        )  # fmt: skip
        self._wait({"worker", "worker-derived", "worker-imports", "worker-outbound"})

    def _wait(self, waiting: set[str]) -> None:
        deadline = time.monotonic() + 120
        port_open = False
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    tail = (self.logs / f"{name}.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")
            for name in list(waiting):
                if b" ready." in (self.logs / f"{name}.log").read_bytes():
                    waiting.discard(name)
            if not port_open:
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    port_open = True
            if port_open and not waiting:
                return
            time.sleep(0.2)
        raise RuntimeError(f"not started within 120 s: {sorted(waiting)}, port {port_open}")

    def stop(self) -> None:
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        # a group's stragglers (gunicorn's or the pool's children)
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> tuple[int, float] | None:
    """(process group, CPU seconds of the process and its reaped children) from /proc."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the name: state ppid pgrp session ... utime(12) stime(13) cutime(14) cstime(15)
    return int(fields[2]), sum(int(value) for value in fields[11:15]) / _TICK


class CpuMeter:
    """CPU seconds spent by each service's process group and by the database's backends
    during a phase, sampled every 0.5 s (a process that exits between samples loses at most
    its last half second; gunicorn's and the pools' reaped children count in their parent)."""

    def __init__(self, services: Services, url: str) -> None:
        self.groups = {proc.pid: name for name, proc in services.procs.items()}
        self.database = urlsplit(url).path.lstrip("/")
        self.conn = base.pg_connect(url, autocommit=True)
        self.done = threading.Event()
        self.seen: dict[tuple[str, int], tuple[float, float]] = {}  # (group, pid) -> first, last
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        backends = {
            pid
            for (pid,) in self.conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                [self.database],
            ).fetchall()
        }
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            found = _proc_cpu(pid)
            if found is None:
                continue
            group = "postgres" if pid in backends else self.groups.get(found[0])
            if group is None:
                continue
            first, _ = self.seen.get((group, pid), (found[1], 0.0))
            self.seen[(group, pid)] = (first, found[1])

    def _run(self) -> None:
        while not self.done.is_set():
            self._sample()
            self.done.wait(0.5)

    def __enter__(self) -> CpuMeter:
        self._sample()
        self.started = set(self.seen)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
        self._sample()
        self.conn.close()

    def seconds(self) -> dict[str, float]:
        """CPU seconds per group during the phase (a process started during it: all of its)."""
        totals: dict[str, float] = {}
        for (group, pid), (first, last) in self.seen.items():
            spent = last - first if (group, pid) in self.started else last
            totals[group] = totals.get(group, 0.0) + spent
        return totals


def flush_redis(args: argparse.Namespace) -> None:
    import redis

    for db in (args.redis_db, args.redis_db + 1):
        redis.Redis(host="127.0.0.1", port=6379, db=db).flushdb()


# --- HTTP client --------------------------------------------------------------------------


def request(
    port: int,
    method: str,
    path: str,
    *,
    token: str | None = None,
    session: str | None = None,
    body: dict | None = None,
) -> tuple[int, float, bytes]:
    """(status, seconds, body) of one request on a new connection; status 0 on failure."""
    headers = {"Host": "127.0.0.1"}
    if token:
        headers["Authorization"] = f"Token {token}"
    if session:
        headers["Cookie"] = f"sessionid={session}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        return response.status, time.perf_counter() - started, payload
    except (OSError, http.client.HTTPException):
        return 0, time.perf_counter() - started, b""
    finally:
        connection.close()


class Watchers:
    """Open leaderboard pages: poll the state, reload the table when the stamp moves."""

    def __init__(self, port: int, session: str, count: int, poll: float) -> None:
        self.port, self.session, self.count, self.poll = port, session, count, poll
        self.done = threading.Event()
        self.reloads = 0
        self.errors = 0
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self.tab, args=(poll * i / max(count, 1),), daemon=True)
            for i in range(count)
        ]

    def tab(self, offset: float) -> None:
        stamp = None
        self.done.wait(offset)
        while not self.done.is_set():
            status, _, body = request(
                self.port, "GET", f"/collections/{SLUG}/leaderboard/state/?k={K}",
                session=self.session,
            )  # fmt: skip
            moved = False
            if status == 200:
                current = json.loads(body)["stamp"]
                moved, stamp = current != stamp, current
            else:
                with self.lock:
                    self.errors += 1
            if moved:
                status, _, _ = request(
                    self.port, "GET", f"/collections/{SLUG}/leaderboard/?k={K}",
                    session=self.session,
                )  # fmt: skip
                with self.lock:
                    self.reloads += status == 200
                    self.errors += status != 200
            self.done.wait(self.poll)

    def __enter__(self) -> Watchers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join()


# --- measurements -------------------------------------------------------------------------


class Judge:
    """One assessor's sequence of grade changes on a fixed set of pairs."""

    def __init__(self, ctx: dict, pairs: list[tuple[str, str]], seed: int) -> None:
        from annotations.models import Document, Judgement, Query

        self.ctx, self.pairs, self.rng = ctx, pairs, random.Random(seed)
        collection = ctx["collection"]
        self.queries = {
            q.qid: q
            for q in Query.objects.filter(collection=collection, qid__in={p[0] for p in pairs})
        }
        for query in self.queries.values():
            query.collection = collection
        self.documents = {
            d.docno: d
            for d in Document.objects.filter(collection=collection, docno__in={p[1] for p in pairs})
        }
        self.grades = {
            (qid, docno): grade
            for qid, docno, grade in Judgement.objects.filter(
                assessor=ctx["judge"], query__collection=collection
            ).values_list("query__qid", "document__docno", "grade")
        }

    def next_grade(self, pair: tuple[str, str]) -> int:
        old = self.grades.get(pair)
        grade = self.rng.choice([g for g in range(4) if g != old])
        self.grades[pair] = grade
        return grade

    def record_inline(self, pair: tuple[str, str]) -> None:
        from annotations import services

        services.judgement_record(
            query=self.queries[pair[0]],
            document=self.documents[pair[1]],
            assessor=self.ctx["judge"],
            grade=self.next_grade(pair),
            source="api",
        )

    def post(self, port: int, pair: tuple[str, str]) -> tuple[int, float, int]:
        """(query id, seconds, status) of one judgement through the API."""
        status, seconds, _ = request(
            port, "POST", f"/api/v1/collections/{SLUG}/judgements/", token=self.ctx["token"],
            body={"qid": pair[0], "docno": pair[1], "grade": self.next_grade(pair)},
        )  # fmt: skip
        if status not in (200, 201):
            raise RuntimeError(f"POST judgement answered {status}")
        return self.queries[pair[0]].id, seconds, status


def inline_reference(judge: Judge, pairs: list[tuple[str, str]]) -> dict:
    """The same judgements in this process, no broker: commit -> scores stored."""
    from annotations.scores import scheduling

    clock: dict[str, float] = {}
    original = scheduling._dispatch

    def dispatch() -> None:
        clock["committed"] = time.perf_counter()
        original()
        clock["stored"] = time.perf_counter()

    scheduling._dispatch = dispatch
    stored, calls = [], []
    try:
        for pair in pairs:
            clock.clear()
            started = time.perf_counter()
            judge.record_inline(pair)
            calls.append(time.perf_counter() - started)
            if "stored" in clock:
                stored.append(clock["stored"] - clock["committed"])
    finally:
        scheduling._dispatch = original
    return {"stored": summary(stored), "call": summary(calls)}


class Poller:
    """psycopg, autocommit: the query's scores stored, and the snapshots' stamps."""

    def __init__(self, url: str) -> None:
        self.conn = base.pg_connect(url, autocommit=True)

    def wait_scored(self, query_id: int, timeout: float = 60.0) -> float | None:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            row = self.conn.execute(
                "SELECT scored_version >= judgements_version FROM annotations_query WHERE id = %s",
                [query_id],
            ).fetchone()
            if row and row[0]:
                return time.perf_counter()
            time.sleep(POLL_SECONDS)
        return None


def freshness(
    ports: tuple[int, int],
    judge: Judge,
    poller: Poller,
    pairs: list,
    reference: list,
    interval: float,
) -> dict[str, object]:
    """Judgements through the production server, each followed half an interval later by
    one through the inline server (the reference), under the same load."""
    figures: dict[str, dict[str, list[float]]] = {
        side: {"stored": [], "after_answer": [], "post": []} for side in ("production", "inline")
    }
    timeouts = 0
    for index, (pair, other) in enumerate(zip(pairs, reference, strict=True)):
        started = time.perf_counter()
        for side, port, which in (("production", ports[0], pair), ("inline", ports[1], other)):
            began = time.perf_counter()
            query_id, seconds, _ = judge.post(port, which)
            stored = poller.wait_scored(query_id)
            figures[side]["post"].append(seconds)
            if stored is None:
                timeouts += 1
            else:
                figures[side]["stored"].append(stored - began)
                figures[side]["after_answer"].append(max(0.0, stored - began - seconds))
            if side == "production":
                time.sleep(max(0.0, started + interval / 2 - time.perf_counter()))
        if (index + 1) % 10 == 0:
            log(f"  {index + 1}/{len(pairs)} judgements")
        time.sleep(max(0.0, started + interval - time.perf_counter()))
    row: dict[str, object] = {
        side: {name: summary(values) for name, values in measures.items()}
        for side, measures in figures.items()
    }
    row["timeouts"] = timeouts
    return row


def snapshot_current(collection) -> bool:  # type: ignore[no-untyped-def]
    from annotations.models import LeaderboardSnapshot
    from annotations.selectors.scores_state import scores_state

    state = scores_state(collection=collection)
    if state.pending:
        return False
    stamps = dict(
        LeaderboardSnapshot.objects.filter(collection=collection).values_list("k", "stamp")
    )
    return all(stamps.get(k) == state.stamp for k in collection.sorted_cutoffs)


def bursts(port: int, judge: Judge, pairs: list, size: int, count: int) -> dict:
    collection = judge.ctx["collection"]
    delays: list[float] = []
    timeouts = 0
    for number in range(count):
        # after a quiet spell: the snapshots current and the last refresh's rest over
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline and not snapshot_current(collection):
            time.sleep(0.1)
        time.sleep(3)
        chunk = pairs[number * size : (number + 1) * size]
        last = 0.0
        for pair in chunk:
            started = time.perf_counter()
            _, seconds, _ = judge.post(port, pair)
            last = started + seconds
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline and not snapshot_current(collection):
            time.sleep(0.01)
        if time.perf_counter() >= deadline:
            timeouts += 1
        else:
            delays.append(time.perf_counter() - last)
        log(f"  burst {number + 1}: {delays[-1] if delays else float('nan'):.2f} s")
    return {"delays": delays, "timeouts": timeouts}


def capacity(
    port: int,
    clients: list[tuple[int, str]],
    pool: list,
    duration: float,
    write: bool,
    seed: int,
    known: dict[tuple[int, str, str], int] | None = None,
) -> dict:
    """`clients` assessors with think time 0.5-1.5 s for `duration` s: judgements or floor.

    `known`: the assessors' grades already stored, so that every write changes a grade."""
    lock = threading.Lock()
    times: list[float] = []
    errors: dict[str, int] = {}
    acknowledged: dict[tuple[int, str, str], int] = {}  # (user, qid, docno) -> last grade
    counts = {"changes": 0, "created": 0}
    start = time.monotonic() + 0.5
    stop = start + duration

    def assessor(index: int, user_id: int, token: str) -> None:
        rng = random.Random(seed * 100003 + index)
        mine: list[float] = []
        grades = {
            (qid, docno): grade
            for (owner, qid, docno), grade in (known or {}).items()
            if owner == user_id
        }
        touched: set[tuple[str, str]] = set()
        changes = created = 0
        time.sleep(max(0.0, start - time.monotonic()) + rng.uniform(0, 1.5))
        while time.monotonic() < stop:
            if write:
                pair = pool[rng.randrange(len(pool))]
                grade = rng.choice([g for g in range(4) if g != grades.get(pair)])
                status, seconds, _ = request(
                    port, "POST", f"/api/v1/collections/{SLUG}/judgements/", token=token,
                    body={"qid": pair[0], "docno": pair[1], "grade": grade},
                )  # fmt: skip
                if status in (200, 201):
                    grades[pair] = grade
                    touched.add(pair)
                    changes += 1
                    created += status == 201
            else:
                status, seconds, _ = request(port, "GET", FLOOR_PATH, token=token)
            if status in (200, 201):
                mine.append(seconds)
            else:
                with lock:
                    errors[str(status)] = errors.get(str(status), 0) + 1
            time.sleep(rng.uniform(0.5, 1.5))
        with lock:
            times.extend(mine)
            counts["changes"] += changes
            counts["created"] += created
            for pair, grade in grades.items():
                if pair in touched:
                    acknowledged[(user_id, *pair)] = grade

    threads = [
        threading.Thread(target=assessor, args=(i, user_id, token))
        for i, (user_id, token) in enumerate(clients)
    ]
    cpu = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    client_cpu = (time.process_time() - cpu) / elapsed
    return {
        "rps": len(times) / duration,
        "elapsed": elapsed,
        "p50": pct(times, 0.5),
        "p95": pct(times, 0.95),
        "ok": len(times),
        "errors": errors,
        "client_cpu": client_cpu,
        "acknowledged": acknowledged,
        **counts,
    }


def reconcile(ctx: dict, before: dict, result: dict) -> dict:
    from annotations.models import Judgement, JudgementHistory

    ids = [user_id for user_id, _ in ctx["assessors"]]
    history = JudgementHistory.objects.filter(
        id__gt=before["history_id"], assessor_id__in=ids, source="api"
    ).count()
    judgements = Judgement.objects.filter(assessor_id__in=ids).count()
    stored = {
        (user_id, qid, docno): grade
        for user_id, qid, docno, grade in Judgement.objects.filter(
            assessor_id__in=ids, query__collection=ctx["collection"]
        ).values_list("assessor_id", "query__qid", "document__docno", "grade")
    }
    wrong = sum(stored.get(key) != grade for key, grade in result["acknowledged"].items())
    return {
        "history_rows": history,
        "acknowledged_changes": result["changes"],
        "created_rows": judgements - before["judgements"],
        "acknowledged_created": result["created"],
        "pairs": len(result["acknowledged"]),
        "wrong_grades": wrong,
    }


def drain(collection, timeout: float = 300.0) -> float | None:  # type: ignore[no-untyped-def]
    """Seconds until no query of the collection is pending (after the capacity phase)."""
    from annotations.selectors.scores_state import scores_state

    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if not scores_state(collection=collection).pending:
            return time.perf_counter() - started
        time.sleep(0.1)
    return None


# --- report -------------------------------------------------------------------------------


def ms(value: float) -> str:
    return f"{value * 1e3:.1f}"


def report(f: dict, args: argparse.Namespace) -> list[str]:
    rows = [
        "| measure | production | reference | ratio | target |",
        "|---|---:|---:|---:|---|",
    ]
    for watchers, row in f["freshness"].items():
        prod, inline = row["production"], row["inline"]
        ratio = prod["stored"]["p95"] / inline["stored"]["p95"]
        target = f"p95 <= 2x: **{'met' if ratio <= 2 else 'not met'}**"
        rows.append(
            f"| POST -> scores stored, {watchers} leaderboard pages open, p50 / p95 ms "
            f"(answer -> stored p50 / p95; POST p50) "
            f"| {ms(prod['stored']['p50'])} / {ms(prod['stored']['p95'])} "
            f"({ms(prod['after_answer']['p50'])} / {ms(prod['after_answer']['p95'])}; "
            f"{ms(prod['post']['p50'])}) "
            f"| inline server {ms(inline['stored']['p50'])} / {ms(inline['stored']['p95'])} "
            f"(POST p50 {ms(inline['post']['p50'])}) "
            f"| {ratio:.2f}x | {target} |"
        )
    b = f["bursts"]
    worst = max(b["delays"]) if b["delays"] and not b["timeouts"] else float("inf")
    delays = " / ".join(f"{d:.2f}" for d in b["delays"])
    timed_out = f", {b['timeouts']} timed out" if b["timeouts"] else ""
    rows.append(
        f"| leaderboard snapshots current after a burst of {args.burst}, s after the last "
        f"answer ({len(b['delays'])} bursts{timed_out}) "
        f"| {delays} | | | <= 2 s: **{'met' if worst <= 2 else 'not met'}** |"
    )
    w, fl = f["capacity"]["write"], f["capacity"]["floor"]
    tput, p95 = w["rps"] / fl["rps"], w["p95"] / fl["p95"]
    met = "met" if tput >= 0.5 and p95 <= 2 else "not met"
    rows.append(
        f"| {args.assessors} assessors, {args.duration:.0f} s: judgements/s, p50 / p95 ms, "
        f"errors | {w['rps']:.1f}, {ms(w['p50'])} / {ms(w['p95'])}, {sum(w['errors'].values())} "
        f"| floor `GET {FLOOR_PATH}` {fl['rps']:.1f}, {ms(fl['p50'])} / {ms(fl['p95'])}, "
        f"{sum(fl['errors'].values())} | {tput:.2f}x / {p95:.2f}x "
        f"| >= 0.5x, p95 <= 2x: **{met}** (throughput "
        f"{'met' if tput >= 0.5 else 'not met'}, p95 {'met' if p95 <= 2 else 'not met'}) |"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="moderate", choices=["moderate", "robust04", "small"])
    parser.add_argument("--workdir", default=str(REPO / "benchmarks" / "data"))
    parser.add_argument(
        "--database-url", default=DEFAULT_URL, help="DROPPED and recreated unless --skip-load"
    )
    parser.add_argument("--skip-load", action="store_true", help="reuse the loaded database")
    parser.add_argument("--judgements", type=int, default=40, help="per watching level")
    parser.add_argument("--interval", type=float, default=1.5, help="s between judgements")
    parser.add_argument("--poll", type=float, default=2.0, help="s between a page's polls")
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--assessors", type=int, default=200)
    parser.add_argument("--duration", type=float, default=60.0, help="s of each capacity load")
    parser.add_argument("--web-concurrency", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--redis-db", type=int, default=12, help="broker; the next one: cache")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load_only:
        load_here(args)
        return
    began = time.monotonic()
    if not args.skip_load:
        log(f"load: preset {args.preset} into {args.database_url}")
        load(args)
    directory = ensure_data(args)
    manifest = json.loads((directory / "manifest.json").read_text())
    shape = (
        f"{len(manifest['tags'])} runs x {manifest['queries']} queries x up to "
        f"{manifest.get('depth', 1000)} results ({manifest['run_lines']:,} results), "
        f"{manifest['qrels_lines']:,} judgements"
    )
    log(f"collection: {shape}")
    django_setup(args)
    ctx = prepare(args.assessors)
    from annotations.models import Judgement, JudgementHistory
    from annotations.scores import scores_sweep_stale

    pool = candidate_pairs(directory, args.seed)
    series = pool[: args.judgements]
    reference = pool[args.judgements : 2 * args.judgements]  # the inline server's pairs
    burst_pairs = pool[2 * args.judgements : 2 * args.judgements + args.burst * args.bursts]
    judge = Judge(ctx, series + reference + burst_pairs, args.seed)
    log("inline: warm-up (the judge's judgements of the measured pairs exist afterwards)")
    for pair in series + reference + burst_pairs:
        if pair not in judge.grades:
            judge.record_inline(pair)
    scores_sweep_stale(collection=ctx["collection"])
    log(f"inline reference: {len(series)} judgements in this process, no broker")
    figures: dict = {"shape": shape, "inline": inline_reference(judge, series)}
    load_before = os.getloadavg()
    flush_redis(args)
    port = free_port()
    logs = Path(tempfile.mkdtemp(prefix="bench-production-"))
    services = Services(args, port, logs)
    inline_port = free_port()
    (logs / "inline").mkdir()
    inline_server = Services(args, inline_port, logs / "inline", inline=True)
    ports = (port, inline_port)
    poller = Poller(args.database_url)
    try:
        log(f"start: gunicorn on 127.0.0.1:{port}, workers, beat (logs in {logs})")
        services.start()
        log(f"start: the inline reference, gunicorn without a broker on 127.0.0.1:{inline_port}")
        inline_server.start()
        for _ in range(5):  # warm every gunicorn worker a little
            for each in ports:
                request(each, "GET", FLOOR_PATH, token=ctx["token"])
        request(port, "GET", f"/collections/{SLUG}/leaderboard/?k={K}", session=ctx["session"])
        warm = freshness(ports, judge, poller, series[:3], reference[:3], 0.5)
        log(f"warm-up judgements stored: {warm['production']['stored']['n']}")
        figures["freshness"] = {}
        for watchers in (0, 8, 50):
            log(f"freshness with {watchers} leaderboard pages open")
            # as many pages open on the inline server: the reference carries the same load
            with (
                Watchers(port, ctx["session"], watchers, args.poll) as tabs,
                Watchers(inline_port, ctx["session"], watchers, args.poll) as inline_tabs,
            ):
                if watchers:
                    time.sleep(args.poll)
                row = freshness(ports, judge, poller, series, reference, args.interval)
            row["reloads"], row["watch_errors"] = tabs.reloads, tabs.errors
            row["inline_reloads"] = inline_tabs.reloads
            row["watch_errors"] += inline_tabs.errors
            figures["freshness"][watchers] = row
        log(f"bursts of {args.burst} judgements")
        figures["bursts"] = bursts(port, judge, burst_pairs, args.burst, args.bursts)
        before = {
            "history_id": JudgementHistory.objects.order_by("-id")
            .values_list("id", flat=True)
            .first()
            or 0,
            "judgements": Judgement.objects.filter(
                assessor_id__in=[u for u, _ in ctx["assessors"]]
            ).count(),
        }
        log(f"capacity: {args.assessors} assessors judging for {args.duration:.0f} s")
        known = {
            (user_id, qid, docno): grade
            for user_id, qid, docno, grade in Judgement.objects.filter(
                assessor_id__in=[u for u, _ in ctx["assessors"]]
            ).values_list("assessor_id", "query__qid", "document__docno", "grade")
        }
        with CpuMeter(services, args.database_url) as meter:
            write = capacity(port, ctx["assessors"], pool, args.duration, True, args.seed, known)
        write["cpu"] = meter.seconds()
        log(f"  {write['rps']:.1f} judgements/s; waiting for the scores to catch up")
        figures["drain"] = drain(ctx["collection"])
        figures["reconcile"] = reconcile(ctx, before, write)
        log(f"capacity: {args.assessors} clients on GET {FLOOR_PATH} for {args.duration:.0f} s")
        with CpuMeter(services, args.database_url) as meter:
            floor = capacity(port, ctx["assessors"], pool, args.duration, False, args.seed)
        floor["cpu"] = meter.seconds()
        write.pop("acknowledged")
        floor.pop("acknowledged")
        figures["capacity"] = {"write": write, "floor": floor}
    finally:
        log("stop: gunicorn, workers, beat")
        services.stop()
        inline_server.stop()
        poller.conn.close()
        flush_redis(args)
    figures["load"] = (load_before, os.getloadavg())
    figures["minutes"] = (time.monotonic() - began) / 60
    rows = report(figures, args)
    print()
    print(
        f"Production mode, preset {args.preset}: {shape}; "
        f"finished {time.strftime('%Y-%m-%d %H:%M:%S %Z')}"
    )
    print(
        f"code {base.code_version()}; {os.cpu_count()} CPUs; whole run {figures['minutes']:.1f} min"
    )
    print()
    print("\n".join(rows))
    print()
    r = figures["reconcile"]
    w, fl = figures["capacity"]["write"], figures["capacity"]["floor"]
    print(
        f"- reconciliation: {r['acknowledged_changes']} acknowledged writes, "
        f"{r['history_rows']} history rows; {r['acknowledged_created']} answered 201, "
        f"{r['created_rows']} judgements created; {r['pairs']} (assessor, pair) last grades, "
        f"{r['wrong_grades']} differ in the database"
    )
    drained = figures["drain"]
    print(
        "- scores of every query stored "
        + (
            f"{drained:.1f} s after the capacity load"
            if drained is not None
            else "not within 300 s"
        )
    )
    print(
        f"- client: {args.assessors} threads, think time 0.5-1.5 s, API only (no grading form); "
        f"its CPU use {w['client_cpu']:.0%} of one core while judging, {fl['client_cpu']:.0%} on "
        f"the floor; errors {w['errors'] or 'none'} / {fl['errors'] or 'none'}"
    )
    for label, phase in (("judging", w), ("floor", fl)):
        spent = phase["cpu"]
        per = " + ".join(
            f"{name} {seconds * 1e3 / max(phase['ok'], 1):.1f}"
            for name, seconds in sorted(spent.items())
        )
        print(
            f"- CPU during the {label} load: {sum(spent.values()):.1f} s of "
            f"{(os.cpu_count() or 1) * phase['elapsed']:.0f} core-seconds; per "
            f"acknowledged request, ms: {per}"
        )
    for watchers, row in figures["freshness"].items():
        print(
            f"- {watchers} pages on each server: {row['reloads']} table reloads (inline server "
            f"{row['inline_reloads']}), {row['watch_errors']} errors, "
            f"{row['timeouts']} judgements not stored within 60 s"
        )
    inline = figures["inline"]
    print(
        f"- in this process, no HTTP (as bench_scoring measures it): commit -> stored p50 / p95 "
        f"{ms(inline['stored']['p50'])} / {ms(inline['stored']['p95'])} ms; the whole "
        f"judgement_record call (incl. scoring) {ms(inline['call']['p50'])} / "
        f"{ms(inline['call']['p95'])} ms"
    )
    lb, la = figures["load"]
    print(f"- 1-min load average before/after the services ran: {lb[0]:.2f} / {la[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
