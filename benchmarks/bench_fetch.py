#!/usr/bin/env python3
"""Fetching a run from a search system in production mode, against the endpoint's own time.

A script, not a test. It starts the platform as bench_production.py does (gunicorn with
``ndcg_platform/gunicorn.conf.py``, the Celery workers and beat of its ``Services`` on a
Redis database of their own, PostgreSQL), and a small search engine on 127.0.0.1 in a
process of its own: a threaded HTTP server answering ``POST /docs/_search`` in
Elasticsearch's shape with deterministic generated hits (each query's ranking drawn from a
corpus of ``--corpus`` documents by the query's text, each document's title, text and link
drawn by its number; generated at every request, as an engine reads its index and stored
fields). The collection holds ``--queries`` queries and about 100 judgements per query of
documents the engine returns (known by id only, as a qrels file makes them); one search
system asks the engine for ``--depth`` hits per query at ``--concurrency``.

Per round (``--rounds``), in this order:

* reference: a plain client (``http.client``, one keep-alive connection per thread,
  ``--concurrency`` threads) sends every query's request, the same bytes the platform
  sends, and reads each answer whole: the endpoint's own time for the queries;
* a first fetch through the API (``POST .../systems/NAME/fetches/``), the documents new to
  the collection: POST -> the job done (polled from the database every 5 ms), and the
  engine's last answer -> the run's per-query scores stored (``Run.scored_at``);
* a second fetch of the same system, its documents now known;
* (untimed) the runs and the fetched documents deleted, the judged documents' texts
  blanked, VACUUM (ANALYZE): the next round fetches into the same state.

Storage, after the first round's first fetch: what the documents and rankings tables grew
by (``pg_total_relation_size``: heap, indexes and TOAST), against the same rows COPYed
into bare tables (no index, no constraint): the hits (qid, docno, rank, score) and the
distinct documents (docno, title, text, url). CPU seconds per process group during each
fetch (from /proc, bench_production's meter) and the engine's own CPU time are printed
beside the ratios.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from statistics import median
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_production as production  # noqa: E402  (processes, the HTTP client, CPU meter)
import bench_reads  # noqa: E402  (the organiser's token)
import bench_scoring as base  # noqa: E402  (database helpers)

SLUG = "bench"
SYSTEM = "engine"
ORGANISER = "bench-fetch-organiser"
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_fetch_bench"
BODY = '{"size": "{{depth}}", "query": {"multi_match": {"query": "{{title}}"}}}'
POLL_SECONDS = 0.005
JUDGED_TOP, JUDGED_MORE = 30, 70  # per query: its top 30 and 70 more of its ranking
log = base.log

# --- the engine's deterministic world ----------------------------------------------------

_SYLLABLES = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]
VOCABULARY = [
    "".join(random.Random(index).choices(_SYLLABLES, k=1 + index % 3)) for index in range(4096)
]


def docno_of(number: int) -> str:
    return f"doc-{number:07d}"


def document_of(number: int) -> dict[str, str]:
    """A document's stored fields, the same for a number whatever asks."""
    draw = random.Random(number)
    title = " ".join(draw.choices(VOCABULARY, k=draw.randint(3, 9))).capitalize()
    text = " ".join(draw.choices(VOCABULARY, k=draw.randint(25, 60))) + "."
    return {"title": title, "text": text.capitalize(), "url": f"https://docs.example.org/{number}"}


def ranking_of(text: str, depth: int, corpus: int) -> list[tuple[int, float]]:
    """(document number, score) of a query's hits, best first, drawn by its text."""
    draw = random.Random(zlib.crc32(text.encode()))
    numbers = draw.sample(range(corpus), depth)
    top = 20.0 + 10.0 * draw.random()
    return [(number, round(top - place * 0.0125, 4)) for place, number in enumerate(numbers)]


def query_title(index: int) -> str:
    draw = random.Random(-1 - index)
    return " ".join(draw.choices(VOCABULARY, k=draw.randint(2, 5)))


def answer_of(text: str, size: int, corpus: int) -> bytes:
    hits = [
        {"_index": "docs", "_id": docno_of(n), "_score": s, "_source": document_of(n)}
        for n, s in ranking_of(text, size, corpus)
    ]
    return json.dumps(
        {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {"value": len(hits), "relation": "eq"},
                "max_score": hits[0]["_score"] if hits else None,
                "hits": hits,
            },
        }
    ).encode()


# --- the engine's process ----------------------------------------------------------------


def serve(port_file: Path, corpus: int) -> None:
    """Answer `_search` until killed; `GET /_stats` says how many answers were sent, when
    the last one was (time.monotonic: the machine's one monotonic clock) and the process's
    CPU seconds; `POST /_reset` starts the count again."""
    state = {"answers": 0, "last": 0.0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as Elasticsearch

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/_reset":
                with lock:
                    state.update(answers=0, last=0.0)
                self._send(200, b"{}")
                return
            body = json.loads(raw)
            text = body["query"]["multi_match"]["query"]
            self._send(200, answer_of(text, int(body.get("size", 10)), corpus))
            with lock:
                state["answers"] += 1
                state["last"] = time.monotonic()

        def do_GET(self) -> None:
            with lock:
                stats = {**state, "cpu": time.process_time()}
            self._send(200, json.dumps(stats).encode())

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


class Engine:
    """The engine's process, started and stopped by the benchmark."""

    def __init__(self, corpus: int, logs: Path) -> None:
        port_file = logs / "engine.port"
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port_file), "--corpus", str(corpus)],
            stdout=open(logs / "engine.log", "wb"),  # noqa: SIM115  (kept by the child)
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the engine did not start: see engine.log")
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        self.url = f"http://127.0.0.1:{self.port}"

    def call(self, method: str, path: str) -> dict[str, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, path, body=b"" if method == "POST" else None)
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()

    def reset(self) -> None:
        self.call("POST", "/_reset")

    def stats(self, answers: int = 0) -> dict[str, Any]:
        """The engine's figures, once it counted `answers` answers (a client can read an
        answer whole before the engine's thread counts it)."""
        deadline = time.monotonic() + 10
        while True:
            found = self.call("GET", "/_stats")
            if found["answers"] >= answers or time.monotonic() > deadline:
                return found

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# --- the collection ----------------------------------------------------------------------


def setup(args: argparse.Namespace, engine_url: str, logs: Path) -> dict[str, Any]:
    """A fresh database: the collection, its queries and judgements, the search system, an
    organiser with a token. Through the services, in this process."""
    base.database_recreate(args.database_url)
    production.django_setup(args)
    from django.core.management import call_command

    from annotations import services
    from annotations.models import Document
    from annotations.services.imports import QueryFields, queries_store
    from annotations.services.systems import system_create

    call_command("migrate", verbosity=0, interactive=False)
    collection = services.collection_create(
        slug=SLUG, name="Fetch benchmark", cutoffs=list(base.CUTOFFS)
    )
    titles = {f"q{index + 1}": query_title(index) for index in range(args.queries)}
    queries_store(
        collection=collection,
        queries=[QueryFields(qid, title, f"about {title}") for qid, title in titles.items()],
    )
    qrels = logs / "qrels.txt"
    with open(qrels, "w") as out:
        for qid, title in titles.items():
            hits = ranking_of(title, args.depth, args.corpus)
            draw = random.Random(qid)
            judged = hits[:JUDGED_TOP] + draw.sample(hits[JUDGED_TOP:], JUDGED_MORE)
            for number, _ in judged:
                grade = draw.choices([0, 1, 2, 3], weights=[60, 25, 10, 5])[0]
                out.write(f"{qid} 0 {docno_of(number)} {grade}\n")
    services.judgements_import(
        collection=collection, source=str(qrels), assessor=services.import_assessor()
    )
    system = system_create(
        collection=collection, name=SYSTEM, created_by=None, method="POST",
        url_template=f"{engine_url}/docs/_search", body_template=BODY, depth=args.depth,
        answer_format="elasticsearch", concurrency=args.concurrency,
        requests_per_minute=100_000, timeout_seconds=60, attempts=1,
    )  # fmt: skip
    _, token, _ = bench_reads.organiser_login(collection, ORGANISER)
    judged = set(Document.objects.filter(collection=collection).values_list("id", flat=True))
    return {"collection": collection, "system": system, "token": token, "titles": titles,
            "judged": judged}  # fmt: skip


def reset_collection(ctx: dict[str, Any], args: argparse.Namespace) -> None:
    """Untimed, between rounds: no run, no fetched document, the judged ones without texts."""
    from annotations.models import Document, Run

    collection = ctx["collection"]
    Run.objects.filter(collection=collection).delete()
    Document.objects.filter(collection=collection).exclude(id__in=ctx["judged"]).delete()
    Document.objects.filter(collection=collection).update(
        title="", text="", url="", content_hash=""
    )
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


# --- measurements ------------------------------------------------------------------------


def reference(engine: Engine, ctx: dict[str, Any], args: argparse.Namespace) -> dict[str, float]:
    """The endpoint's own time for every query at the same concurrency: a plain client
    sending the bytes the platform sends, reading each answer whole."""
    from annotations.formats.search_answers import render_body

    bodies = [
        render_body(BODY, {"qid": qid, "title": title, "description": "", "depth": args.depth})
        for qid, title in ctx["titles"].items()
    ]
    waiting: Iterator[bytes] = iter(bodies)
    lock = threading.Lock()
    received = [0]

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", engine.port, timeout=60)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        while True:
            with lock:
                body = next(waiting, None)
            if body is None:
                break
            connection.request("POST", "/docs/_search", body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            if response.status != 200:
                raise RuntimeError(f"the engine answered {response.status}")
            with lock:
                received[0] += len(data)
        connection.close()

    engine.reset()
    cpu = engine.stats()["cpu"]
    threads = [threading.Thread(target=client) for _ in range(args.concurrency)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    stats = engine.stats(len(bodies))
    if stats["answers"] != len(bodies):
        raise RuntimeError(f"{stats['answers']} answers for {len(bodies)} queries")
    return {"seconds": seconds, "bytes": received[0], "engine_cpu": stats["cpu"] - cpu}


def platform_fetch(
    engine: Engine,
    ctx: dict[str, Any],
    args: argparse.Namespace,
    services: production.Services,
    run: str,
) -> dict[str, Any]:
    """One fetch through the API: POST -> job done; the engine's last answer -> the run's
    scores stored; CPU seconds per process group meanwhile."""
    engine.reset()
    cpu = engine.stats()["cpu"]
    path = f"/api/v1/collections/{SLUG}/systems/{SYSTEM}/fetches/"
    with (
        base.pg_connect(args.database_url, autocommit=True) as conn,
        production.CpuMeter(services, args.database_url) as meter,
    ):
        started = time.monotonic()
        status, _, body = production.request(
            services.port, "POST", path, token=ctx["token"], body={"run": run}
        )
        if status != 202:
            raise RuntimeError(f"POST fetch answered {status}: {body[:500]!r}")
        job_id = json.loads(body)["id"]
        done = scored = None
        deadline = started + args.timeout
        while scored is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fetch {job_id} not done and scored in {args.timeout} s")
            if done is None:
                state, error = conn.execute(
                    "SELECT state, error FROM annotations_importjob WHERE id = %s", [job_id]
                ).fetchone()
                if state == "failed":
                    raise RuntimeError(f"fetch {job_id} failed: {error}")
                if state == "done":
                    done = time.monotonic()
            if done is not None:
                found = conn.execute(
                    "SELECT scored_at IS NOT NULL FROM annotations_run "
                    "WHERE collection_id = %s AND name = %s",
                    [ctx["collection"].id, run],
                ).fetchone()
                if found and found[0]:
                    scored = time.monotonic()
            time.sleep(POLL_SECONDS)
    stats = engine.stats(len(ctx["titles"]))
    if stats["answers"] != len(ctx["titles"]):
        raise RuntimeError(f"{stats['answers']} answers for {len(ctx['titles'])} queries")
    return {
        "seconds": done - started,
        "last_answer_to_done": done - stats["last"],
        "last_answer_to_scored": scored - stats["last"],
        "engine_cpu": stats["cpu"] - cpu,
        "cpu": meter.seconds(),
    }


def stored_as_answered(ctx: dict[str, Any], args: argparse.Namespace, run_name: str) -> int:
    """Untimed: the run holds every query's hits as the engine ranked them, scores bit for
    bit, and each document the title, text and link the engine gave; the results checked."""
    from annotations.models import Document, Run
    from annotations.selectors.qrels import run_rows

    run = Run.objects.get(collection=ctx["collection"], name=run_name)
    stored: dict[str, list[tuple[str, float]]] = {}
    for qid, docno, _rank, score, _tag in run_rows(run=run):
        stored.setdefault(qid, []).append((docno, score))
    expected = {
        qid: [(docno_of(n), s) for n, s in ranking_of(title, args.depth, args.corpus)]
        for qid, title in ctx["titles"].items()
    }
    if stored != expected:
        raise RuntimeError(f"run {run_name} differs from the engine's rankings")
    sample = random.Random(run_name).sample(
        sorted({d for hits in expected.values() for d, _ in hits}), 500
    )
    for docno, title, text, url in Document.objects.filter(
        collection=ctx["collection"], docno__in=sample
    ).values_list("docno", "title", "text", "url"):
        if (title, text, url) != tuple(document_of(int(docno[4:])).values()):
            raise RuntimeError(f"document {docno} differs from the engine's")
    return sum(len(hits) for hits in stored.values())


def relation_sizes(args: argparse.Namespace) -> dict[str, int]:
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        return {
            table: conn.execute("SELECT pg_total_relation_size(%s)", [table]).fetchone()[0]
            for table in ("annotations_document", "annotations_ranking")
        }


def bare_copy(ctx: dict[str, Any], args: argparse.Namespace) -> dict[str, int]:
    """The fetch's rows COPYed into bare tables: the hits, and each document once."""
    hits = bytearray()
    documents = bytearray()
    seen: set[int] = set()
    for qid, title in ctx["titles"].items():
        for rank, (number, score) in enumerate(ranking_of(title, args.depth, args.corpus), 1):
            hits += f"{qid}\t{docno_of(number)}\t{rank}\t{score!r}\n".encode()
            if number not in seen:
                seen.add(number)
                fields = document_of(number)
                documents += (
                    f"{docno_of(number)}\t{fields['title']}\t{fields['text']}\t{fields['url']}\n"
                ).encode()
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_raw_hit, bench_raw_document")
        conn.execute(
            "CREATE TABLE bench_raw_hit (qid text, docno text, rank integer, "
            "score double precision)"
        )
        conn.execute(
            "CREATE TABLE bench_raw_document (docno text, title text, text text, url text)"
        )
        with conn.cursor() as cursor:
            with cursor.copy("COPY bench_raw_hit FROM STDIN") as copy:
                copy.write(bytes(hits))
            with cursor.copy("COPY bench_raw_document FROM STDIN") as copy:
                copy.write(bytes(documents))
        sizes = {
            table: conn.execute("SELECT pg_total_relation_size(%s)", [table]).fetchone()[0]
            for table in ("bench_raw_hit", "bench_raw_document")
        }
        conn.execute("DROP TABLE bench_raw_hit, bench_raw_document")
    sizes["documents"] = len(seen)
    return sizes


# --- the report --------------------------------------------------------------------------


def report(args: argparse.Namespace, figures: dict[str, Any]) -> str:
    ref = median(r["seconds"] for r in figures["reference"])
    first = figures["first"]
    again = figures["again"]
    first_s = median(f["seconds"] for f in first)
    again_s = median(f["seconds"] for f in again)
    scored_first = max(f["last_answer_to_scored"] for f in first)
    scored_again = max(f["last_answer_to_scored"] for f in again)
    storage = figures["storage"]
    platform_bytes = (
        storage["platform"]["annotations_document"] + storage["platform"]["annotations_ranking"]
    )
    bare_bytes = storage["bare"]["bench_raw_hit"] + storage["bare"]["bench_raw_document"]

    def verdict(ok: bool) -> str:
        return "**met**" if ok else "**not met**"

    def seconds(values: list[dict[str, Any]], key: str) -> str:
        return " / ".join(f"{value[key]:.2f}" for value in values)

    def cpu(values: list[dict[str, Any]]) -> str:
        groups = ["worker-outbound", "worker", "postgres", "gunicorn", "worker-derived"]
        totals = {g: median(v["cpu"].get(g, 0.0) for v in values) for g in groups}
        engine = median(v["engine_cpu"] for v in values)
        return ", ".join(f"{g} {totals[g]:.1f}" for g in groups) + f"; engine {engine:.1f}"

    def ours(value: dict[str, Any]) -> float:
        return float(sum(value["cpu"].values()))

    engine_ref = median(r["engine_cpu"] for r in figures["reference"])
    queries, depth = args.queries, args.depth
    mb = 1 / 2**20
    rows = [
        f"Fetch benchmark: {queries} queries x {depth} hits, concurrency {args.concurrency}, "
        f"{args.rounds} rounds, corpus {args.corpus:,}; {storage['bare']['documents']:,} "
        f"distinct documents; load average {figures['load'][0]:.2f} -> {figures['load'][1]:.2f}",
        "",
        "| measure | platform | reference | ratio | target |",
        "|---|---:|---:|---:|---|",
        f"| first fetch (documents new): POST -> done, s (rounds) | {seconds(first, 'seconds')} "
        f"| {seconds(figures['reference'], 'seconds')} | **{first_s / ref:.2f}x** (medians) "
        f"| <= 1.2x: {verdict(first_s <= 1.2 * ref)} |",
        f"| fetch again (documents known): POST -> done, s | {seconds(again, 'seconds')} "
        f"| | **{again_s / ref:.2f}x** | <= 1.2x: {verdict(again_s <= 1.2 * ref)} |",
        f"| last answer -> run's scores stored, s (first / again) "
        f"| {seconds(first, 'last_answer_to_scored')}; {seconds(again, 'last_answer_to_scored')} "
        f"| | | <= 1 s: {verdict(max(scored_first, scored_again) <= 1.0)} |",
        f"| last answer -> job done, s (first / again) | {seconds(first, 'last_answer_to_done')}; "
        f"{seconds(again, 'last_answer_to_done')} | | | |",
        f"| storage: documents + rankings vs bare COPY, MB | {platform_bytes * mb:.1f} "
        f"| {bare_bytes * mb:.1f} | **{platform_bytes / bare_bytes:.2f}x** "
        f"| <= 1.5x: {verdict(platform_bytes <= 1.5 * bare_bytes)} |",
        f"| storage: documents / rankings, MB | "
        f"{storage['platform']['annotations_document'] * mb:.1f} / "
        f"{storage['platform']['annotations_ranking'] * mb:.1f} | "
        f"{storage['bare']['bench_raw_document'] * mb:.1f} / "
        f"{storage['bare']['bench_raw_hit'] * mb:.1f} | | |",
        f"| CPU s per fetch, first (medians) | {cpu(first)} | | | |",
        f"| CPU s per fetch, again | {cpu(again)} | | | |",
        f"| CPU s of the platform's processes per fetch (workers, gunicorn, PostgreSQL), "
        f"first / again | {median(ours(f) for f in first):.1f} / "
        f"{median(ours(f) for f in again):.1f} | {engine_ref:.1f} (the engine's, answering) "
        f"| {median(ours(f) for f in first) / engine_ref:.2f}x / "
        f"{median(ours(f) for f in again) / engine_ref:.2f}x | |",
        "",
        f"Stored as answered: {figures['checked']:,} results of the first round's first fetch, "
        "the engine's rankings and scores bit for bit, 500 documents' texts checked.",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=DEFAULT_URL, help="dropped and recreated")
    parser.add_argument("--queries", type=int, default=250)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--corpus", type=int, default=1_000_000, help="documents to draw from")
    parser.add_argument("--concurrency", type=int, default=4, help="the system's and the client's")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="s for one fetch, scored")
    parser.add_argument("--web-concurrency", type=int, default=2)
    parser.add_argument("--redis-db", type=int, default=8, help="broker; the next one: cache")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the engine's process
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve), args.corpus)
        return
    # The services, and this process (which describes the system), may call 127.0.0.1.
    os.environ["NDCG_SEARCH_ALLOW_PRIVATE"] = "true"
    logs = Path(tempfile.mkdtemp(prefix="bench-fetch-"))
    load_before = os.getloadavg()[0]
    engine = Engine(args.corpus, logs)
    services = None
    try:
        log(f"setup: {args.queries} queries, judgements, the system, in {args.database_url}")
        ctx = setup(args, engine.url, logs)
        production.flush_redis(args)
        services = production.Services(
            SimpleNamespace(
                database_url=args.database_url, redis_db=args.redis_db,
                web_concurrency=args.web_concurrency,
            ),
            production.free_port(), logs,
        )  # fmt: skip
        log(f"services: gunicorn on :{services.port}, logs in {logs}")
        services.start()
        for _ in range(2 * args.web_concurrency):  # every web worker past its first request
            production.request(services.port, "GET", production.FLOOR_PATH, token=ctx["token"])
        figures: dict[str, Any] = {"reference": [], "first": [], "again": []}
        for round_ in range(1, args.rounds + 1):
            figures["reference"].append(reference(engine, ctx, args))
            log(f"round {round_}: reference {figures['reference'][-1]['seconds']:.2f} s")
            before = relation_sizes(args)
            figures["first"].append(platform_fetch(engine, ctx, args, services, f"r{round_}-a"))
            log(f"round {round_}: first fetch {figures['first'][-1]}")
            if round_ == 1:
                figures["checked"] = stored_as_answered(ctx, args, f"r{round_}-a")
                after = relation_sizes(args)
                figures["storage"] = {
                    "platform": {table: after[table] - before[table] for table in after},
                    "bare": bare_copy(ctx, args),
                }
            figures["again"].append(platform_fetch(engine, ctx, args, services, f"r{round_}-b"))
            log(f"round {round_}: fetch again {figures['again'][-1]}")
            if round_ < args.rounds:
                reset_collection(ctx, args)
        figures["load"] = [load_before, os.getloadavg()[0]]
    finally:
        if services is not None:
            services.stop()
        engine.stop()
    production.flush_redis(args)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str))
    print(report(args, figures))


if __name__ == "__main__":
    main()
