#!/usr/bin/env python3
"""Production mode at scale: 1,000 runs x 249 queries and 110 runs x 2,500 queries.

A script, not a test. For each shape, in a fresh PostgreSQL database, it starts what
``bench_production.py`` starts (its ``Services``: gunicorn with
``ndcg_platform/gunicorn.conf.py`` and production settings, the scores worker ``-Q celery
-c 2``, the derived worker ``-Q derived -c 1`` and the imports worker ``-Q imports -c 1``
at nice 10, beat, on Redis), imports
gen_trec.py's Robust04 preset at that shape and depth ``--depth`` (100: the leaderboard
reads the top 20 at most) as users do, through the API: one ``POST import-jobs/`` per run
file, then the qrels file, run by the imports worker, the scores computed by the scores
worker. From the end of the import (the qrels job done) it measures:

* every cutoff's first leaderboard read (``GET /api/v1/collections/bench/leaderboard/?k=``
  with the organiser's token), status and latency, then the same reads every
  ``--retry`` s (as a client honouring ``Retry-After`` would) until every cutoff is
  computed: their worst latency is what "no read computes for seconds" is judged on;
* the time until every cutoff's LeaderboardSnapshot holds the current scores (rows), and
  separately until every cutoff's significance pass has run over them; each snapshot's
  compute time (``LeaderboardSnapshot.seconds``, the significance document's ``seconds``);
* the peak RSS (VmHWM) of each service's worker processes, over the imports and, reset
  through ``/proc/PID/clear_refs`` at the import's end, over the snapshots' computation;
* the leaderboard reads again once computed, against the floor ``GET /api/v1/collections/``;
* judgement freshness: ``--judgements`` judgements through the API, POST -> the query's
  scores stored, p50/p95, and the snapshots current (rows, significance) after the last.

    .venv/bin/python benchmarks/bench_production_scale.py                # both shapes
    .venv/bin/python benchmarks/bench_production_scale.py --shape 50x100  # a quick look

Targets (issue 22): no read computes for seconds; one snapshot computation at 2,500
queries fits in 300 MB per process.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_production as prod  # noqa: E402  (Services, the HTTP client, freshness helpers)
import bench_reads  # noqa: E402  (the organiser's token and session)
import bench_scoring as base  # noqa: E402  (data, database)

SHAPES = ("1000x249", "110x2500")
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_production_scale_bench"
SLUG = prod.SLUG
ORGANISER = "bench-scale-organiser"
CUTOFFS = (5, 10, 20)
TARGET_MB = 300.0
SLOW_READ = 1.0  # a read over this many seconds computed something: "for seconds"
log = base.log


# --- data and database --------------------------------------------------------------------


def ensure_data(args: argparse.Namespace, runs: int, queries: int) -> Path:
    """gen_trec.py's Robust04 preset at this shape and depth (load_reads.py's directory)."""
    directory = Path(args.workdir).resolve() / f"reads-r{runs}-q{queries}-d{args.depth}"
    if (directory / "manifest.json").is_file():
        return directory
    scratch = directory.with_name(directory.name + ".tmp")
    subprocess.run(["rm", "-rf", str(scratch)], check=True)
    log(f"data: generating into {directory}")
    subprocess.run(
        [sys.executable, str(base.find_generator(None)), str(scratch), "--preset", "robust04",
         "--runs", str(runs), "--queries", str(queries), "--depth", str(args.depth)],
        check=True,
    )  # fmt: skip
    scratch.rename(directory)
    return directory


def bundles(paths: list[Path], into: Path, megabytes: int) -> list[Path]:
    """The run files concatenated into files of up to `megabytes` each (imported with
    ``split_tags``: one run per tag), so that 1,000 runs are a few uploads, as a track's
    runs are often sent, not 1,000 jobs."""
    into.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    size = megabytes * 2**20
    stream = None
    for path in paths:
        if stream is None or stream.tell() + path.stat().st_size > size:
            if stream is not None:
                stream.close()
            out.append(into / f"runs-{len(out) + 1:03d}.txt")
            stream = open(out[-1], "wb")  # noqa: SIM115  (closed when full)
        stream.write(path.read_bytes())
    if stream is not None:
        stream.close()
    return out


# --- processes' memory --------------------------------------------------------------------


def group_members(leader: int) -> list[int]:
    """The processes of a service's group other than its leader (gunicorn's workers, a
    Celery worker's pool processes): those that run requests and tasks."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == leader:
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == leader:
            found.append(int(entry.name))
    return found


def memory_mb(pid: int) -> dict[str, float]:
    figures = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    figures[line[:5]] = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return figures


def peaks(services: prod.Services, *, reset: bool = False) -> dict[str, dict[str, float]]:
    """Per service, the largest VmHWM and VmRSS of its member processes; with `reset`, each
    process's VmHWM is then reset to its current RSS (``clear_refs`` 5)."""
    out: dict[str, dict[str, float]] = {}
    for name, proc in services.procs.items():
        members = group_members(proc.pid)
        figures = [memory_mb(pid) for pid in members]
        out[name] = {
            "hwm": max((f.get("VmHWM", 0.0) for f in figures), default=0.0),
            "rss": max((f.get("VmRSS", 0.0) for f in figures), default=0.0),
            "processes": len(members),
        }
        if reset:
            for pid in members:
                try:
                    Path(f"/proc/{pid}/clear_refs").write_text("5")
                except OSError:
                    out[name]["reset_failed"] = 1
    return out


# --- HTTP ---------------------------------------------------------------------------------


def upload(port: int, token: str, path: Path, fields: dict[str, str]) -> tuple[int, float]:
    """POST import-jobs/ with one file as multipart/form-data: (status, seconds)."""
    import http.client

    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    ]
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    body = b"".join([*parts, head, path.read_bytes(), f"\r\n--{boundary}--\r\n".encode()])
    headers = {
        "Host": "127.0.0.1",
        "Authorization": f"Token {token}",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        connection.request("POST", f"/api/v1/collections/{SLUG}/import-jobs/", body, headers)
        response = connection.getresponse()
        payload = response.read()
        if response.status != 202:
            raise RuntimeError(f"{path.name}: import-jobs answered {response.status} {payload!r}")
        return response.status, time.perf_counter() - started
    finally:
        connection.close()


def read_board(port: int, token: str, k: int) -> tuple[int, float]:
    status, seconds, _ = prod.request(
        port, "GET", f"/api/v1/collections/{SLUG}/leaderboard/?k={k}", token=token
    )
    return status, seconds


class Retrier:
    """A client asking for every cutoff's leaderboard every `interval` s until stopped."""

    def __init__(self, port: int, token: str, interval: float) -> None:
        self.port, self.token, self.interval = port, token, interval
        self.done = threading.Event()
        self.reads: list[tuple[float, int, int, float]] = []  # (at, k, status, seconds)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.done.wait(self.interval):
            for k in CUTOFFS:
                status, seconds = read_board(self.port, self.token, k)
                self.reads.append((time.perf_counter(), k, status, seconds))

    def __enter__(self) -> Retrier:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


# --- the database's view ------------------------------------------------------------------


def jobs_state(conn, collection_id: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    rows = conn.execute(
        "SELECT state, count(*) FROM annotations_importjob WHERE collection_id = %s GROUP BY 1",
        [collection_id],
    ).fetchall()
    return dict(rows)


def snapshots_state(collection) -> tuple[bool, bool]:  # type: ignore[no-untyped-def]
    """(every cutoff's rows at the current scores, and their significance pass run)."""
    from annotations.models import LeaderboardSnapshot
    from annotations.selectors.scores_state import scores_state

    state = scores_state(collection=collection)
    if state.pending:
        return False, False
    found = {
        k: (stamp, significance)
        for k, stamp, significance in LeaderboardSnapshot.objects.filter(
            collection=collection
        ).values_list("k", "stamp", "significance__stamp")
    }
    rows = all(found.get(k, ("", ""))[0] == state.stamp for k in CUTOFFS)
    return rows, rows and all(found[k][1] == state.stamp for k in CUTOFFS)


def wait_current(collection, since: float, timeout: float) -> dict[str, float | None]:  # type: ignore[no-untyped-def]
    """Seconds from `since` until the rows, then the significance passes, are current."""
    out: dict[str, float | None] = {"rows": None, "significance": None}
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        rows, significance = snapshots_state(collection)
        now = time.perf_counter()
        if rows and out["rows"] is None:
            out["rows"] = now - since
        if significance:
            out["significance"] = now - since
            out["rows"] = out["rows"] if out["rows"] is not None else now - since
            return out
        time.sleep(0.1)
    return out


def snapshot_seconds(collection) -> dict[int, dict[str, float]]:  # type: ignore[no-untyped-def]
    from annotations.models import LeaderboardSnapshot

    return {
        k: {
            "rows": seconds,
            "significance": float((significance or {}).get("seconds", float("nan"))),
            "runs": len(rows),
            "permutations": (significance or {}).get("permutations"),
        }
        for k, seconds, significance, rows in LeaderboardSnapshot.objects.filter(
            collection=collection
        ).values_list("k", "seconds", "significance", "rows")
    }


# --- one shape ----------------------------------------------------------------------------


def one_shape(args: argparse.Namespace) -> dict:
    runs, queries = (int(part) for part in args.one.split("x"))
    directory = ensure_data(args, runs, queries)
    manifest = json.loads((directory / "manifest.json").read_text())
    base.database_recreate(args.database_url)
    prod.django_setup(args)
    from django.core.management import call_command

    from annotations import services

    call_command("migrate", verbosity=0, interactive=False)
    collection = services.collection_create(
        slug=SLUG, name=f"{runs} runs x {queries} queries", cutoffs=list(CUTOFFS)
    )
    trec = services.import_assessor().username
    judge, token, session = bench_reads.organiser_login(collection, ORGANISER)
    ctx = {"collection": collection, "judge": judge, "token": token, "session": session}
    figures: dict = {
        "shape": f"{runs} runs x {queries} queries x {args.depth} results "
        f"({manifest['run_lines']:,} results, {manifest['run_bytes'] / 2**20:.0f} MB), "
        f"{manifest['qrels_lines']:,} judgements",
        "load": [os.getloadavg()],
    }
    log(f"shape: {figures['shape']}")
    prod.flush_redis(args)
    port = prod.free_port()
    logs = Path(tempfile.mkdtemp(prefix="bench-production-scale-"))
    service = prod.Services(args, port, logs)
    watch = base.pg_connect(args.database_url, autocommit=True)
    poller = prod.Poller(args.database_url)
    try:
        log(f"start: gunicorn on 127.0.0.1:{port}, workers, beat (logs in {logs})")
        service.start()
        files = bundles(base.run_files(directory), logs / "uploads", args.upload_mb)
        log(f"import: {len(files)} run files of up to {args.upload_mb} MB, then the qrels")
        started = time.perf_counter()
        posts = [
            upload(port, token, path, {"kind": "run", "split_tags": "true"})[1] for path in files
        ]
        posts.append(
            upload(port, token, directory / "qrels.txt", {"kind": "qrels", "assessor": trec})[1]
        )
        uploaded = time.perf_counter()
        log(f"uploaded {len(files)} run files and the qrels in {uploaded - started:.1f} s")
        deadline = time.perf_counter() + args.timeout
        last = 0.0
        while True:
            state = jobs_state(watch, collection.id)
            if state.get("done", 0) == len(files) + 1:
                break
            if state.get("failed") or time.perf_counter() > deadline:
                raise RuntimeError(f"import jobs: {state}")
            if time.perf_counter() - last > 30:
                log(f"  import jobs: {state}")
                last = time.perf_counter()
            time.sleep(0.1)
        ended = time.perf_counter()
        figures["import"] = {
            "upload_s": uploaded - started,
            "post_p50": prod.pct(posts, 0.5),
            "post_max": max(posts),
            "jobs_s": ended - started,
        }
        figures["load"].append(os.getloadavg())
        figures["memory_import"] = peaks(service, reset=True)
        log(f"import done in {ended - started:.1f} s; reading every cutoff")
        with prod.CpuMeter(service, args.database_url) as meter:
            first = {k: read_board(port, token, k) for k in CUTOFFS}
            figures["first_reads"] = first
            said = ", ".join(f"k={k} {s} {t * 1e3:.0f} ms" for k, (s, t) in first.items())
            log(f"  first reads: {said}")
            with Retrier(port, token, args.retry) as retrier:
                figures["current"] = wait_current(collection, ended, args.timeout)
        figures["cpu"] = meter.seconds()
        figures["retries"] = [(at - ended, k, status, s) for at, k, status, s in retrier.reads]
        figures["memory_snapshots"] = peaks(service)
        figures["load"].append(os.getloadavg())
        figures["snapshots"] = snapshot_seconds(collection)
        log(f"  current: {figures['current']}; snapshots {figures['snapshots']}")
        computed: dict = {k: [] for k in CUTOFFS}
        floor: list[float] = []
        for _ in range(args.reads):
            _, seconds, _ = prod.request(port, "GET", prod.FLOOR_PATH, token=token)
            floor.append(seconds)
            for k in CUTOFFS:
                computed[k].append(read_board(port, token, k))
        figures["reads"] = {
            "floor": prod.summary(floor),
            **{
                k: {**prod.summary([s for _, s in v]), "statuses": sorted({st for st, _ in v})}
                for k, v in computed.items()
            },
        }
        log(f"freshness: {args.judgements} judgements every {args.interval} s")
        pairs = prod.candidate_pairs(directory, args.seed)[: args.judgements]
        judge_client = prod.Judge(ctx, pairs, args.seed)
        stored: list[float] = []
        answered: list[float] = []
        last_answer = time.perf_counter()
        for pair in pairs:
            began = time.perf_counter()
            query_id, seconds, _ = judge_client.post(port, pair)
            last_answer = began + seconds
            answered.append(seconds)
            done = poller.wait_scored(query_id)
            if done is not None:
                stored.append(done - began)
            time.sleep(max(0.0, began + args.interval - time.perf_counter()))
        figures["freshness"] = {
            "stored": prod.summary(stored),
            "post": prod.summary(answered),
            "timeouts": len(pairs) - len(stored),
            "current_after_last": wait_current(collection, last_answer, args.timeout),
        }
        figures["memory_end"] = peaks(service)
        figures["load"].append(os.getloadavg())
    finally:
        log("stop: gunicorn, workers, beat")
        service.stop()
        watch.close()
        poller.conn.close()
        prod.flush_redis(args)
        subprocess.run(["rm", "-rf", str(logs / "uploads")], check=False)
    return figures


def fresh_process_snapshot(args: argparse.Namespace) -> dict:
    """Child process, services stopped: every cutoff's snapshot computed again as the derived
    worker computes it after an import (bounds cache emptied, significance cleared), with
    this process's peak RSS (VmHWM) before and after each; a process that did nothing else."""
    prod.django_setup(args)
    from annotations.models import Collection, LeaderboardSnapshot, QueryBound
    from annotations.scores import snapshots
    from annotations.scores.significance import significance_refresh

    collection = Collection.objects.get(slug=SLUG)
    QueryBound.objects.filter(query__collection=collection).delete()
    LeaderboardSnapshot.objects.filter(collection=collection).update(significance={})
    me = os.getpid()
    out: dict = {"rss_before": memory_mb(me).get("VmRSS", 0.0), "cutoffs": {}}
    for k in CUTOFFS:
        started = time.perf_counter()
        snapshots.leaderboard_refresh(collection=collection, k=k)
        rows = time.perf_counter() - started
        after_rows = memory_mb(me)["VmHWM"]
        started = time.perf_counter()
        significance_refresh(collection=collection, k=k)
        out["cutoffs"][k] = {
            "rows_s": rows,
            "significance_s": time.perf_counter() - started,
            "hwm_rows": after_rows,
            "hwm": memory_mb(me)["VmHWM"],
        }
    return out


# --- report -------------------------------------------------------------------------------


def ms(value: float) -> str:
    return f"{value * 1e3:,.0f}" if value >= 1 else f"{value * 1e3:.1f}"


def seconds_or(value: float | None) -> str:
    return "not within the timeout" if value is None else f"{value:.1f}"


def report(f: dict, args: argparse.Namespace) -> list[str]:
    rows = ["| measure | figure | target |", "|---|---|---|"]
    i = f["import"]
    rows.append(
        f"| import through the API: upload of every file (POST p50 / max "
        f"ms), then every job done, s | {i['upload_s']:.1f} ({ms(i['post_p50'])} / "
        f"{ms(i['post_max'])}), {i['jobs_s']:.1f} | |"
    )
    first = f["first_reads"]
    worst_first = max(seconds for _, seconds in first.values())
    rows.append(
        "| first read at k = "
        + ", ".join(str(k) for k in CUTOFFS)
        + " right after the import: status, ms | "
        + "; ".join(f"{status}, {ms(seconds)}" for status, seconds in first.values())
        + f" | 202 or 200 quickly: **{'met' if worst_first < SLOW_READ else 'not met'}** |"
    )
    retries = f["retries"]
    worst = max((seconds for *_, seconds in retries), default=0.0)
    statuses: dict[int, int] = {}
    for _, _, status, _ in retries:
        statuses[status] = statuses.get(status, 0) + 1
    rows.append(
        f"| reads every {args.retry:.0f} s at every cutoff until computed: count by status, "
        f"worst ms | {', '.join(f'{n} x {s}' for s, n in sorted(statuses.items())) or 'none'}, "
        f"{ms(worst)} | no read computes for seconds: "
        f"**{'met' if max(worst, worst_first) < SLOW_READ else 'not met'}** |"
    )
    c = f["current"]
    rows.append(
        f"| import's end -> every cutoff's snapshot current: rows / significance, s "
        f"| {seconds_or(c['rows'])} / {seconds_or(c['significance'])} | |"
    )
    snaps = f["snapshots"]
    rows.append(
        "| compute time per snapshot, k = "
        + ", ".join(str(k) for k in sorted(snaps))
        + ": rows / significance, s | "
        + "; ".join(f"{v['rows']:.2f} / {v['significance']:.2f}" for _, v in sorted(snaps.items()))
        + " | |"
    )
    imp, snap = f["memory_import"], f["memory_snapshots"]
    for name, label in (("worker-derived", "derived worker"), ("worker", "scores worker")):
        target = ""
        if name == "worker-derived":
            met = snap[name]["hwm"] < TARGET_MB
            target = f"< {TARGET_MB:.0f} MB: **{'met' if met else 'not met'}**"
        rows.append(
            f"| {label}'s peak RSS (VmHWM), MB: during the imports / from the import's end "
            f"(RSS then) until computed | {imp[name]['hwm']:.0f} / {snap[name]['hwm']:.0f} "
            f"({imp[name]['rss']:.0f}) | {target} |"
        )
    rows.append(
        "| imports worker's peak RSS (VmHWM) during the imports, MB (RSS at their end) | "
        f"{imp['worker-imports']['hwm']:.0f} ({imp['worker-imports']['rss']:.0f}) | "
        "a few hundred MB |"
    )
    fresh = f["fresh_process"]
    cutoffs = fresh["cutoffs"]
    top = max(v["hwm"] for v in cutoffs.values())
    rows.append(
        "| one computation per cutoff in a fresh process (bounds and significance again), k = "
        + ", ".join(str(k) for k in sorted(cutoffs))
        + ": rows / significance s; peak RSS MB after each (RSS before "
        + f"{fresh['rss_before']:.0f}) | "
        + "; ".join(
            f"{v['rows_s']:.2f} / {v['significance_s']:.2f}; {v['hwm_rows']:.0f} / {v['hwm']:.0f}"
            for _, v in sorted(cutoffs.items())
        )
        + f" | < {TARGET_MB:.0f} MB: **{'met' if top < TARGET_MB else 'not met'}** |"
    )
    rows.append(
        f"| gunicorn workers' peak RSS, MB, whole run | {f['memory_end']['gunicorn']['hwm']:.0f}"
        f" | |"
    )
    r = f["reads"]
    rows.append(
        "| reads once computed, p50 ms: k = "
        + ", ".join(str(k) for k in CUTOFFS)
        + f" vs floor `GET {prod.FLOOR_PATH}` | "
        + " / ".join(ms(r[k]["p50"]) for k in CUTOFFS)
        + f" vs {ms(r['floor']['p50'])} ("
        + " / ".join(f"{r[k]['p50'] / r['floor']['p50']:.1f}x" for k in CUTOFFS)
        + ") | |"
    )
    fr = f["freshness"]
    after = fr["current_after_last"]
    lost = f", {fr['timeouts']} not stored within the timeout" if fr["timeouts"] else ""
    rows.append(
        f"| {fr['stored']['n']} judgements via the API: POST -> scores stored p50 / p95 ms "
        f"(POST p50) | {ms(fr['stored']['p50'])} / {ms(fr['stored']['p95'])} "
        f"({ms(fr['post']['p50'])}){lost} | |"
    )
    rows.append(
        f"| after the last judgement's answer: snapshots current, rows / significance, s "
        f"| {seconds_or(after['rows'])} / {seconds_or(after['significance'])} | |"
    )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", action="append", help="RUNSxQUERIES (repeatable)")
    parser.add_argument("--depth", type=int, default=100, help="results per query")
    parser.add_argument("--workdir", default=str(REPO / "benchmarks" / "data"))
    parser.add_argument(
        "--database-url", default=DEFAULT_URL, help="DROPPED and recreated for each shape"
    )
    parser.add_argument("--redis-db", type=int, default=12, help="broker; the next one: cache")
    parser.add_argument("--web-concurrency", type=int, default=4, help="gunicorn workers")
    parser.add_argument(
        "--upload-mb", type=int, default=100, help="run files joined into uploads of this size"
    )
    parser.add_argument("--judgements", type=int, default=20)
    parser.add_argument("--interval", type=float, default=1.5, help="s between judgements")
    parser.add_argument("--retry", type=float, default=2.0, help="s between a client's reads")
    parser.add_argument("--reads", type=int, default=5, help="reads per cutoff once computed")
    parser.add_argument("--timeout", type=float, default=1800.0, help="s for each wait")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--json", help="also write every shape's figures to this file")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--fresh-process", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fresh_process:
        Path(args.out).write_text(json.dumps(fresh_process_snapshot(args)))
        return 0
    if args.one:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the services first
        figures = one_shape(args)
        log("one snapshot computation per cutoff in a fresh process (services stopped)")
        fresh = Path(args.out + ".fresh")
        subprocess.run(
            [sys.executable, __file__, "--fresh-process", "--out", str(fresh),
             "--database-url", args.database_url],
            check=True,
        )  # fmt: skip
        figures["fresh_process"] = json.loads(fresh.read_text())
        fresh.unlink()
        Path(args.out).write_text(json.dumps(figures, default=str))
        return 0
    everything = {}
    for shape in args.shape or SHAPES:
        out = Path(tempfile.mkstemp(prefix="bench-scale-", suffix=".json")[1])
        began = time.monotonic()
        command = [sys.executable, __file__, *sys.argv[1:], "--one", shape, "--out", str(out)]
        subprocess.run([c for c in command if c], check=True)
        figures = json.loads(out.read_text(), object_hook=_int_keys)
        out.unlink()
        figures["minutes"] = (time.monotonic() - began) / 60
        everything[shape] = figures
        load = " -> ".join(f"{entry[0]:.1f}" for entry in figures["load"])
        print()
        print(
            f"Production mode at scale, {figures['shape']}; finished "
            f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; code {base.code_version()}; "
            f"{os.cpu_count()} CPUs; {figures['minutes']:.1f} min; 1-min load average "
            f"{load} (start, import's end, computed, end)"
        )
        print()
        print("\n".join(report(figures, args)))
        cpu = figures["cpu"]
        print()
        print(
            "- CPU seconds from the import's end until computed: "
            + ", ".join(f"{name} {value:.1f}" for name, value in sorted(cpu.items()))
        )
        sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1, default=str))
    return 0


def _int_keys(mapping: dict) -> dict:
    return {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in mapping.items()}


if __name__ == "__main__":
    raise SystemExit(main())
