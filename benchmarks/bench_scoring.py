#!/usr/bin/env python3
"""Scoring benchmark: the platform on PostgreSQL, side by side with pytrec_eval (trec_eval).

A script, not a test. It generates a TREC-shaped collection with gen_trec.py, loads it into a
freshly created PostgreSQL database through the platform's services, and prints one table:

  step                                  platform        reference (floor / oracle)
  import of the qrels                   judgements_import        COPY into a bare table
  import of all runs                    runs_import, one call    COPY into a bare table
                                        run_import per file      COPY into a bare table
  full rescore                          scores_rescore_collection  pytrec_eval parse+evaluate
  judgement change -> scores stored     judgement_record + inline   pytrec_eval, that query,
                                        recompute (p50/p95/max)      every run, in memory

with the peak memory (RSS) of every step, then checks that the stored per-query nDCG@k
equal pytrec_eval's ndcg_cut_k (after the full rescore, and after the incremental updates).

Methods (also in benchmarks/README.md):

* Every measured step runs in a fresh child process (this script re-invoked with
  ``--step NAME``); its peak memory is that process's peak resident set size, which
  includes the interpreter and, for platform steps, Django (the "baseline" printed with it).
  It is read as VmHWM from /proc/self/status: Linux's ru_maxrss carries the parent's
  high-water mark over fork + exec, so it would floor every step at the orchestrator's size.
  PostgreSQL's own server memory is not included.
* Imports: runs first, then the qrels. The runs twice: all files in one ``runs_import``
  call (one transaction, as a track's runs are imported), then each file in its own
  ``run_import`` call and transaction into a scratch collection, dropped afterwards
  (untimed), with ``ANALYZE`` emulated between files where autovacuum is off. Scoring is
  deferred during all imports: the after-commit publishing
  ``annotations.scores.scheduling._dispatch``
  is replaced by a recorder, so the import time
  excludes scoring and the affected runs/queries stay marked stale exactly as when a worker
  is down. The full-rescore step then computes everything. The floor is psycopg ``COPY`` of
  the same rows into bare tables without any index or constraint, one transaction per file;
  for the runs the faster of two ways: the lines split on whitespace in Python and sent as
  COPY text, or each file's bytes unchanged, split into its six columns by COPY itself.
* After the imports (untimed): ``VACUUM (ANALYZE)``, as autovacuum would do shortly after a
  bulk load, so the planner has statistics for the later steps.
* Full rescore vs pytrec_eval: pytrec_eval parses the qrels and then each run file into
  ``{qid: {docno: score}}`` dicts and evaluates it (``ndcg_cut.5,10,20``), one run at a time
  (the time is that of parse + evaluate of everything; memory stays at one run).
* Judgement changes: N random judged (qid, docno) pairs of the imported assessor get a new
  random grade 0-3 different from the current one, through ``services.judgement_record``
  in autocommit mode with inline scoring (CELERY_BROKER_URL unset). Three clocks per change:
  the whole call; commit -> scores stored (from the start of the on_commit callback
  ``annotations.scores.scheduling._dispatch``, which runs right after the COMMIT, to its end); and
  ``scores_recompute_query`` alone. The reference re-evaluates the changed query for every
  run with pytrec_eval from pre-built in-memory dicts (a RelevanceEvaluator on that query's
  qrels, then ``evaluate`` of every run's ranking of it). Afterwards the changes are undone
  (untimed) so the database matches qrels.txt again.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
SLUG = "bench"
CUTOFFS = (5, 10, 20)
MEASURES = {"ndcg_cut.5,10,20"}
# The measure set of the second phase: ten families, five of them at the three cutoffs
# (nDCG@k being the collection's own), kept by the collection beside nDCG@k, and the same
# measures as pytrec_eval is asked for them. Name as stored -> pytrec_eval's key.
KEPT = {
    "AP": "map",
    **{f"AP@{k}": f"map_cut_{k}" for k in CUTOFFS},
    **{f"P@{k}": f"P_{k}" for k in CUTOFFS},
    **{f"R@{k}": f"recall_{k}" for k in CUTOFFS},
    **{f"Success@{k}": f"success_{k}" for k in CUTOFFS},
    "RR": "recip_rank",
    "Rprec": "Rprec",
    "Bpref": "bpref",
    "nDCG": "ndcg",
}
# The families: nDCG@k, AP, AP@k, P@k, R@k, Success@k, RR, Rprec, Bpref, nDCG.
KEPT_FAMILIES = ("nDCG@k", "AP", "AP@k", "P@k", "R@k", "Success@k", "RR", "Rprec", "Bpref", "nDCG")
KEPT_TREC = {
    "ndcg_cut.5,10,20",
    "map",
    "map_cut.5,10,20",
    "P.5,10,20",
    "recall.5,10,20",
    "success.5,10,20",
    "recip_rank",
    "Rprec",
    "bpref",
    "ndcg",
}
TOLERANCE = 1e-12
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_bench"
GENERATOR = REPO / "benchmarks" / "gen_trec.py"
STEPS = (
    "prepare",
    "copy_floor",
    "import_runs",
    "import_runs_single",
    "import_qrels",
    "analyze",
    "resync",
    "rescore",
    "pytrec_full",
    "verify",
    "latency",
    "latency_ref",
    "measures_rescore",
    "measures_pytrec_full",
    "measures_verify",
    "measures_latency",
    "measures_latency_ref",
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def maxrss_mb() -> float:
    """Peak resident set size of this process so far, in MB.

    VmHWM from /proc/self/status: the high-water mark of this process's own address space.
    (getrusage's ru_maxrss would not do: Linux carries the parent's high-water mark over
    fork + exec, so every step would report at least the orchestrator's size.)
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": float("nan"), "p95": float("nan"), "max": float("nan"), "n": 0}

    def pick(p: float) -> float:  # nearest-rank percentile
        index = max(0, min(len(ordered) - 1, int(-(-p * len(ordered) // 100)) - 1))
        return ordered[index]

    return {
        "p50": statistics.median(ordered),
        "p95": pick(95),
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
        "n": len(ordered),
    }


# --- the data set ---------------------------------------------------------------------------


def data_dir(args: argparse.Namespace) -> Path:
    return Path(args.workdir).resolve() / args.preset


def manifest_ok(directory: Path, preset: str) -> bool:
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    if manifest.get("preset") != preset or not (directory / "qrels.txt").is_file():
        return False
    total = 0
    for tag in manifest.get("tags", []):
        path = directory / "runs" / f"{tag}.txt"
        if not path.is_file():
            return False
        total += path.stat().st_size
    return bool(manifest.get("tags")) and total == manifest.get("run_bytes")


def find_generator(explicit: str | None) -> Path:
    candidate = Path(explicit) if explicit else GENERATOR
    if not candidate.is_file():
        sys.exit(f"gen_trec.py not found at {candidate}; pass --gen PATH")
    return candidate


def ensure_data(args: argparse.Namespace) -> dict:
    directory = data_dir(args)
    if manifest_ok(directory, args.preset):
        log(f"data: reusing {directory} (manifest matches preset {args.preset})")
    else:
        generator = find_generator(args.gen)
        scratch = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.parent.mkdir(parents=True, exist_ok=True)
        log(f"data: generating preset {args.preset} with {generator} into {directory}")
        started = time.perf_counter()
        # sys.executable: the generator needs numpy, which the project's venv has.
        subprocess.run(
            [sys.executable, str(generator), str(scratch), "--preset", args.preset], check=True
        )
        shutil.rmtree(directory, ignore_errors=True)
        scratch.rename(directory)
        log(f"data: generated in {time.perf_counter() - started:.1f} s")
        if not manifest_ok(directory, args.preset):
            sys.exit(f"{directory}: the generated manifest does not match the files")
    return json.loads((directory / "manifest.json").read_text())


def run_files(directory: Path) -> list[Path]:
    manifest = json.loads((directory / "manifest.json").read_text())
    return [directory / "runs" / f"{tag}.txt" for tag in manifest["tags"]]


def make_changes(directory: Path, count: int, seed: int) -> list[dict]:
    """`count` random grade changes of judged pairs, each different from the current grade."""
    pairs: list[tuple[str, str]] = []
    grades: dict[tuple[str, str], int] = {}
    with open(directory / "qrels.txt") as stream:
        for line in stream:
            qid, _, docno, grade = line.split()
            pairs.append((qid, docno))
            grades[(qid, docno)] = int(grade)
    rng = random.Random(seed)
    changes = []
    for _ in range(count):
        qid, docno = rng.choice(pairs)
        old = grades[(qid, docno)]
        new = rng.choice([g for g in range(4) if g != old])
        grades[(qid, docno)] = new
        changes.append({"qid": qid, "docno": docno, "old": old, "new": new})
    return changes


# --- steps (each in its own process) ------------------------------------------------------


def tasks_in_process() -> None:
    """Run the background tasks in this process as they are queued, through the same tasks
    a worker runs (Celery's eager mode, as the tests do): the figures are the work's own,
    without a broker's latency."""
    from celery import current_app
    from django.conf import settings

    from annotations.scores import refresh_pacing

    settings.CELERY_TASK_ALWAYS_EAGER = True
    refresh_pacing.DEBOUNCE_SECONDS = 0.0  # an eager task asked for later is not run
    current_app.conf.task_always_eager = True


def django_setup(args: argparse.Namespace) -> None:
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "ndcg_platform.settings"
    os.environ["DJANGO_DEBUG"] = "false"  # no per-query logging in connection.queries
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import django

    django.setup()
    tasks_in_process()
    from ndcg_platform.process_tuning import tune_long_lived_process

    tune_long_lived_process()  # as a gunicorn or Celery worker is tuned


def defer_scoring() -> dict[str, set[int]]:
    """Replace the after-commit publishing by a recorder: scheduled work stays marked stale."""
    from annotations.scores import scheduling as scores

    deferred: dict[str, set[int]] = {"queries": set(), "runs": set(), "collections": set()}

    def record() -> None:
        queries, runs, collections, owners = scores._pending_sets()
        deferred["queries"] |= queries
        deferred["runs"] |= runs
        deferred["collections"] |= collections
        for pending in (queries, runs, collections, owners):
            pending.clear()

    scores._dispatch = record  # type: ignore[assignment]
    return deferred


def pg_connect(url: str, **kwargs):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(url.replace("postgres://", "postgresql://", 1), **kwargs)


def database_recreate(url: str) -> None:
    """Drop and create the database `url` names (a plain name only: refused otherwise)."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name or not name.replace("_", "").isalnum():
        sys.exit(f"refusing to drop database {name!r}: use a plain name")
    with pg_connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def step_prepare(args: argparse.Namespace, out: dict) -> None:
    parts = urlsplit(args.database_url)
    name = parts.path.lstrip("/")
    if not name or not name.replace("_", "").isalnum():
        sys.exit(f"refusing to drop database {name!r}: use a plain name")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with pg_connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
        out["server_version"] = conn.execute("SELECT version()").fetchone()[0]
        out["autovacuum"] = conn.execute("SHOW autovacuum").fetchone()[0]
    django_setup(args)
    from django.core.management import call_command

    from annotations import services

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    out["migrate_seconds"] = time.perf_counter() - started
    services.collection_create(slug=SLUG, name="Benchmark", cutoffs=list(CUTOFFS))
    services.import_assessor()


def step_copy_floor(args: argparse.Namespace, out: dict) -> None:
    directory = data_dir(args)
    files = run_files(directory)
    chunk = 20000
    with pg_connect(args.database_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_floor_result, bench_floor_qrels, bench_floor_raw")
        conn.execute(
            "CREATE TABLE bench_floor_result (run text, qid text, docno text, rank integer, "
            "score double precision)"
        )
        conn.execute("CREATE TABLE bench_floor_qrels (qid text, docno text, grade integer)")
        baseline = maxrss_mb()
        # qrels
        started = time.perf_counter()
        with (
            conn.transaction(),
            conn.cursor() as cursor,
            cursor.copy("COPY bench_floor_qrels (qid, docno, grade) FROM STDIN") as copy,
        ):
            buffer: list[bytes] = []
            with open(directory / "qrels.txt", "rb") as stream:
                for line in stream:
                    qid, _, docno, grade = line.split()
                    buffer.append(b"\t".join((qid, docno, grade)))
                    if len(buffer) >= chunk:
                        copy.write(b"\n".join(buffer) + b"\n")
                        buffer.clear()
            if buffer:
                copy.write(b"\n".join(buffer) + b"\n")
        out["qrels_seconds"] = time.perf_counter() - started
        # runs, one transaction per file
        started = time.perf_counter()
        rows = 0
        for path in files:
            with (
                conn.transaction(),
                conn.cursor() as cursor,
                cursor.copy(
                    "COPY bench_floor_result (run, qid, docno, rank, score) FROM STDIN"
                ) as copy,
            ):
                buffer = []
                with open(path, "rb") as stream:
                    for line in stream:
                        qid, _, docno, rank, score, tag = line.split()
                        buffer.append(b"\t".join((tag, qid, docno, rank, score)))
                        if len(buffer) >= chunk:
                            copy.write(b"\n".join(buffer) + b"\n")
                            rows += len(buffer)
                            buffer.clear()
                if buffer:
                    copy.write(b"\n".join(buffer) + b"\n")
                    rows += len(buffer)
        out["runs_split_seconds"] = time.perf_counter() - started
        out["rows"] = rows
        # runs again: each file's bytes as they are, split into columns by PostgreSQL's own
        # COPY parser (the files are single-space separated)
        conn.execute(
            "CREATE TABLE bench_floor_raw (qid text, q0 text, docno text, rank integer, "
            "score double precision, tag text)"
        )
        started = time.perf_counter()
        for path in files:
            with (
                conn.transaction(),
                conn.cursor() as cursor,
                cursor.copy("COPY bench_floor_raw FROM STDIN (DELIMITER ' ')") as copy,
                open(path, "rb") as stream,
            ):
                while block := stream.read(1 << 20):
                    copy.write(block)
        out["runs_raw_seconds"] = time.perf_counter() - started
        # The reference is the faster of the two: the lower floor.
        out["runs_seconds"] = min(out["runs_raw_seconds"], out["runs_split_seconds"])
        raw_rows = conn.execute("SELECT count(*) FROM bench_floor_raw").fetchone()[0]
        if raw_rows != rows:
            sys.exit(f"COPY floor: {raw_rows} rows copied raw, {rows} split")
        out["baseline_mb"] = baseline
        out["peak_mb"] = maxrss_mb()
        counted = conn.execute("SELECT count(*) FROM bench_floor_result").fetchone()[0]
        if counted != rows:
            sys.exit(f"COPY floor: {counted} rows in the table, {rows} sent")
        conn.execute("DROP TABLE bench_floor_result, bench_floor_qrels, bench_floor_raw")


def _profiled(args: argparse.Namespace, name: str, action):  # type: ignore[no-untyped-def]
    if not args.profile:
        return action()
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    result = profiler.runcall(action)
    target = Path(args.workdir).resolve() / "profiles" / f"{args.preset}_{name}.prof"
    target.parent.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(target)
    log(f"profile written to {target}")
    stats = pstats.Stats(profiler, stream=sys.stderr)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(20)
    return result


def autoanalyze() -> int:
    """ANALYZE the tables autovacuum would analyze now (its default trigger); count them.

    The benchmark server may run with autovacuum=off; without statistics PostgreSQL plans
    the import's lookups for empty tables. Called between run files, like autovacuum's
    periodic pass (its work is not hidden: the time counts in the import).
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
            "WHERE s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)"
        )
        tables = [name for (name,) in cursor.fetchall()]
        for name in tables:
            cursor.execute(f'ANALYZE "{name}"')
    return len(tables)


def step_import_runs(args: argparse.Namespace, out: dict) -> None:
    """All run files in one `runs_import` call: one transaction, as a track is imported."""
    django_setup(args)
    from annotations import services
    from annotations.models import Collection

    deferred = defer_scoring()
    collection = Collection.objects.get(slug=SLUG)
    files = run_files(data_dir(args))
    out["baseline_mb"] = maxrss_mb()
    imported: list = []

    def work() -> None:
        imported.extend(
            services.runs_import(collection=collection, sources=[str(path) for path in files])
        )

    started = time.perf_counter()
    _profiled(args, "import_runs", work)
    out["seconds"] = time.perf_counter() - started
    out["peak_mb"] = maxrss_mb()
    out["rows"] = sum(count for _, count in imported)
    out["files"] = len(imported)
    out["deferred_runs"] = len(deferred["runs"])
    log(f"import_runs: {len(imported)} files, {out['rows']} results")


def step_import_runs_single(args: argparse.Namespace, out: dict) -> None:
    """The same files one `run_import` call (and transaction) each, into a scratch
    collection that is dropped afterwards (untimed)."""
    django_setup(args)
    from django.db import connection

    from annotations import services
    from annotations.models import Collection

    defer_scoring()
    scratch = Collection.objects.create(slug=f"{SLUG}-single", name="one file per call")
    files = run_files(data_dir(args))
    out["baseline_mb"] = maxrss_mb()
    per_file: list[float] = []
    rows = 0
    analyze_seconds = 0.0
    analyzed = 0

    def work() -> None:
        nonlocal rows, analyze_seconds, analyzed
        for index, path in enumerate(files, start=1):
            started = time.perf_counter()
            _, count = services.run_import(collection=scratch, source=str(path))
            per_file.append(time.perf_counter() - started)
            rows += count
            if args.autoanalyze:
                started = time.perf_counter()
                analyzed += autoanalyze()
                analyze_seconds += time.perf_counter() - started
            if index % 10 == 0 or index == len(files):
                log(f"import_runs_single: {index}/{len(files)} files, {rows} results")

    started = time.perf_counter()
    _profiled(args, "import_runs_single", work)
    out["seconds"] = time.perf_counter() - started
    out["peak_mb"] = maxrss_mb()
    out["rows"] = rows
    out["per_file"] = percentiles(per_file)
    out["analyze_seconds"] = analyze_seconds
    out["analyze_count"] = analyzed
    with connection.cursor() as cursor:  # the scratch collection, bypassing the ORM's cascade
        cursor.execute(
            "DELETE FROM annotations_ranking WHERE run_id IN "
            "(SELECT id FROM annotations_run WHERE collection_id = %s)",
            [scratch.id],
        )
        for table in ("annotations_run", "annotations_document", "annotations_query"):
            cursor.execute(f"DELETE FROM {table} WHERE collection_id = %s", [scratch.id])
    scratch.delete()


def step_import_qrels(args: argparse.Namespace, out: dict) -> None:
    django_setup(args)
    from annotations import services
    from annotations.models import Collection

    deferred = defer_scoring()
    collection = Collection.objects.get(slug=SLUG)
    assessor = services.import_assessor()
    out["baseline_mb"] = maxrss_mb()
    started = time.perf_counter()
    summary = _profiled(
        args,
        "import_qrels",
        lambda: services.judgements_import(
            collection=collection, source=str(data_dir(args) / "qrels.txt"), assessor=assessor
        ),
    )
    out["seconds"] = time.perf_counter() - started
    out["peak_mb"] = maxrss_mb()
    out["summary"] = str(summary)
    out["deferred_queries"] = len(deferred["queries"])


def step_analyze(args: argparse.Namespace, out: dict) -> None:
    with pg_connect(args.database_url, autocommit=True) as conn:
        started = time.perf_counter()
        conn.execute("VACUUM (ANALYZE)")
        out["seconds"] = time.perf_counter() - started
        out["database_size"] = conn.execute(
            "SELECT pg_size_pretty(pg_database_size(current_database()))"
        ).fetchone()[0]
        out["result_table_size"] = conn.execute(
            "SELECT pg_size_pretty(pg_total_relation_size('annotations_ranking'))"
        ).fetchone()[0]


def step_resync(args: argparse.Namespace, out: dict) -> None:
    """--skip-import: put back the grades of qrels.txt (a run interrupted mid-changes)."""
    django_setup(args)
    from django.db.models import Sum

    from annotations import services
    from annotations.models import Collection, Ranking, Run

    collection = Collection.objects.filter(slug=SLUG).first()
    if collection is None:
        sys.exit(f"--skip-import: no collection {SLUG!r} in {args.database_url}; run without it")
    out["runs"] = Run.objects.filter(collection=collection).count()
    out["results"] = Ranking.objects.filter(run__collection=collection).aggregate(n=Sum("size"))[
        "n"
    ]
    summary = services.judgements_import(
        collection=collection,
        source=str(data_dir(args) / "qrels.txt"),
        assessor=services.import_assessor(),
    )
    out["summary"] = str(summary)


def _pending(collection) -> int:  # type: ignore[no-untyped-def]
    """Queries and runs whose stored scores are marked stale (read from the models)."""
    from django.db.models import F

    from annotations.models import Query, Run

    return (
        Query.objects.filter(
            collection=collection, judgements_version__gt=F("scored_version")
        ).count()
        + Run.objects.filter(collection=collection, scored_at__isnull=True).count()
    )


def set_measures(collection, names: list[str]) -> None:  # type: ignore[no-untyped-def]
    """The collection's measure set through the service, its rescore left pending (the step
    times the rescore itself)."""
    from annotations import services

    if collection.measures != names:
        defer_scoring()
        services.collection_update(collection=collection, measures=names)


def storage(collection) -> dict:  # type: ignore[no-untyped-def]
    """Bytes per stored (run, query) row: the measures' two columns and the whole row as
    PostgreSQL stores them (pg_column_size), and the table's size over its rows; the kept
    qrels ranks' rows likewise (none for nDCG@k alone)."""
    from django.db import connection

    from annotations.models import QueryScore, RankingQrels, Run

    table, runs = QueryScore._meta.db_table, Run._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), avg(pg_column_size(s.measure_values)), "
            "avg(pg_column_size(s.measures)), avg(pg_column_size(s.*)) "
            f"FROM {table} s JOIN {runs} r ON r.id = s.run_id WHERE r.collection_id = %s",
            [collection.id],
        )
        rows, values, names, row = cursor.fetchone()
        cursor.execute(f"SELECT pg_total_relation_size('{table}'), count(*) FROM {table}")
        size, all_rows = cursor.fetchone()
        kept = RankingQrels._meta.db_table
        cursor.execute(
            f"SELECT count(*), avg(pg_column_size(x.*)), pg_total_relation_size('{kept}') "
            f"FROM {kept} x"
        )
        kept_rows, kept_row, kept_size = cursor.fetchone()
    return {
        "rows": rows,
        "measure_values_bytes": float(values or 0),
        "measures_layout_bytes": float(names or 0),
        "row_bytes": float(row or 0),
        "table_bytes_per_row": size / max(all_rows, 1),
        "kept_rows": kept_rows,
        "kept_row_bytes": float(kept_row or 0),
        "kept_table_bytes_per_row": kept_size / max(kept_rows, 1),
    }


def step_rescore(args: argparse.Namespace, out: dict, names: tuple[str, ...] = ()) -> None:
    django_setup(args)
    from annotations import scores
    from annotations.models import Collection, Query, QueryScore

    collection = Collection.objects.get(slug=SLUG)
    set_measures(collection, list(names))
    out["measures"] = len(collection.kept_measures)
    out["baseline_mb"] = maxrss_mb()
    started = time.perf_counter()
    _profiled(
        args, "rescore", lambda: scores.scores_rescore_collection(collection_id=collection.id)
    )
    out["seconds"] = time.perf_counter() - started
    out["peak_mb"] = maxrss_mb()
    out["query_scores"] = QueryScore.objects.filter(run__collection=collection).count() * len(
        collection.sorted_cutoffs
    )
    out["stale_queries"] = _pending(collection)
    out["queries"] = Query.objects.filter(collection=collection).count()
    out["storage"] = storage(collection)


def _parse_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with open(path) as stream:
        for line in stream:
            qid, _, docno, grade = line.split()
            qrels[qid][docno] = int(grade)
    return dict(qrels)


def _parse_run(path: Path, keep: set[str] | None = None) -> tuple[str, dict[str, dict[str, float]]]:
    run: dict[str, dict[str, float]] = defaultdict(dict)
    tag = ""
    with open(path) as stream:
        for line in stream:
            qid, _, docno, _rank, score, tag = line.split()
            if keep is None or qid in keep:
                run[qid][docno] = float(score)
    return tag, dict(run)


def step_pytrec_full(
    args: argparse.Namespace, out: dict, measures: set[str] = MEASURES, name: str = "pytrec_full"
) -> None:
    import pickle

    import pytrec_eval

    directory = data_dir(args)
    files = run_files(directory)
    out["baseline_mb"] = maxrss_mb()
    parse = evaluate = 0.0
    started = time.perf_counter()
    qrels = _parse_qrels(directory / "qrels.txt")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    parse += time.perf_counter() - started
    results: dict[str, dict] = {}
    for path in files:
        mark = time.perf_counter()
        tag, run = _parse_run(path)
        middle = time.perf_counter()
        results[tag] = evaluator.evaluate(run)
        del run
        evaluate += time.perf_counter() - middle
        parse += middle - mark
    out["seconds"] = time.perf_counter() - started
    out["peak_mb"] = maxrss_mb()
    out["parse_seconds"] = parse
    out["evaluate_seconds"] = evaluate
    with open(directory / f"{name}.pickle", "wb") as stream:
        pickle.dump(results, stream)


def _stored_ndcg(collection, query_qids=None) -> dict[tuple[str, str, int], float]:  # type: ignore[no-untyped-def]
    from annotations.models import QueryScore

    rows = QueryScore.objects.filter(run__collection=collection)
    if query_qids is not None:
        rows = rows.filter(query__qid__in=list(query_qids))
    from annotations.formats import score_bytes

    return {
        (run, qid, k): float(value)
        for run, qid, cutoffs, ndcg in rows.values_list(
            "run__name", "query__qid", "cutoffs", "ndcg"
        ).iterator(chunk_size=20000)
        for k, value in zip(score_bytes.cutoffs_of(cutoffs), score_bytes.floats(ndcg), strict=True)
    }


def _stored_kept(collection, query_qids=None) -> dict[tuple[str, str, str], float]:  # type: ignore[no-untyped-def]
    """(run, qid, pytrec_eval's key) -> the stored value of every kept measure, nDCG@k's
    included, as the platform's reads give them."""
    from annotations.metrics.measure_names import parse_measure
    from annotations.models import Query, Run
    from annotations.selectors import measure_values

    names = dict(Run.objects.filter(collection=collection).values_list("id", "name"))
    qids = dict(Query.objects.filter(collection=collection).values_list("id", "qid"))
    wanted = None if query_qids is None else set(query_qids)
    out = {
        (run, qid, f"ndcg_cut_{k}"): value
        for (run, qid, k), value in _stored_ndcg(collection, query_qids).items()
    }
    for name, key in KEPT.items():
        stored = measure_values.stored_measure(collection, parse_measure(name))
        for run_id, values in stored.items():
            for query_id, value in values.items():
                if wanted is None or qids[query_id] in wanted:
                    out[(names[run_id], qids[query_id], key)] = value
    return out


def compare_kept(stored: dict, oracle: dict, qids=None) -> dict:  # type: ignore[no-untyped-def]
    """Stored {(run, qid, key): value} against pytrec_eval {run: {qid: {key: value}}}, every
    key of every evaluated (run, query), bit for bit."""
    expected = {
        (run, qid, key): value
        for run, by_query in oracle.items()
        for qid, values in by_query.items()
        if qids is None or qid in qids
        for key, value in values.items()
    }
    exact = mismatches = 0
    worst = 0.0
    examples = []
    for key, value in expected.items():
        got = stored.get(key)
        if got is None:
            continue
        exact += got == value
        worst = max(worst, abs(got - value))
        if got != value:
            mismatches += 1
            if len(examples) < 5:
                examples.append(f"{key}: stored {got!r}, pytrec_eval {value!r}")
    missing = [key for key in expected if key not in stored]
    return {
        "compared": len(expected) - len(missing),
        "mismatches": mismatches,
        "bit_identical": exact,
        "max_abs_diff": worst,
        "missing_in_platform": len(missing),
        "examples": examples + [f"missing {k}" for k in missing[:3]],
    }


def compare(stored: dict, oracle: dict[str, dict[str, dict[str, float]]], qids=None) -> dict:  # type: ignore[no-untyped-def]
    """Stored {(run, qid, k): ndcg} against pytrec_eval {run: {qid: {ndcg_cut_k: v}}}."""
    expected = {
        (run, qid, k): measures[f"ndcg_cut_{k}"]
        for run, by_query in oracle.items()
        for qid, measures in by_query.items()
        if qids is None or qid in qids
        for k in CUTOFFS
    }
    mismatches = exact = 0
    worst = 0.0
    examples = []
    for key, value in expected.items():
        got = stored.get(key)
        if got is None:
            continue
        diff = abs(got - value)
        worst = max(worst, diff)
        exact += got == value
        if diff > TOLERANCE:
            mismatches += 1
            if len(examples) < 5:
                examples.append(f"{key}: stored {got!r}, pytrec_eval {value!r}")
    missing = [key for key in expected if key not in stored]
    extra = [key for key in stored if key not in expected]
    return {
        "compared": len(expected) - len(missing),
        "mismatches": mismatches,
        "bit_identical": exact,
        "max_abs_diff": worst,
        "missing_in_platform": len(missing),
        "extra_in_platform": len(extra),
        "examples": examples
        + [f"missing {k}" for k in missing[:3]]
        + [f"extra {k}" for k in extra[:3]],
    }


def step_verify(args: argparse.Namespace, out: dict) -> None:
    import pickle

    django_setup(args)
    from annotations.models import Collection

    collection = Collection.objects.get(slug=SLUG)
    with open(data_dir(args) / "pytrec_full.pickle", "rb") as stream:
        oracle = pickle.load(stream)
    out.update(compare(_stored_ndcg(collection), oracle))


def step_measures_verify(args: argparse.Namespace, out: dict) -> None:
    import pickle

    django_setup(args)
    from annotations.models import Collection

    collection = Collection.objects.get(slug=SLUG)
    with open(data_dir(args) / "measures_pytrec_full.pickle", "rb") as stream:
        oracle = pickle.load(stream)
    out.update(compare_kept(_stored_kept(collection), oracle))


def step_latency(args: argparse.Namespace, out: dict, name: str = "latency") -> None:
    django_setup(args)
    from annotations import services
    from annotations.models import Collection, Document, Query
    from annotations.scores import scheduling, scores_sweep_stale

    changes = json.loads((data_dir(args) / "changes.json").read_text())
    collection = Collection.objects.get(slug=SLUG)
    assessor = services.import_assessor()
    if _pending(collection):
        log("latency: some scores are pending before the changes; healing them first")
        scores_sweep_stale(collection=collection)
    queries = {
        q.qid: q
        for q in Query.objects.filter(collection=collection, qid__in={c["qid"] for c in changes})
    }
    documents = {
        d.docno: d
        for d in Document.objects.filter(
            collection=collection, docno__in={c["docno"] for c in changes}
        )
    }
    clock: dict[str, float] = {}
    original_dispatch = scheduling._dispatch
    original_recompute = scheduling.scores_recompute_query

    def dispatch() -> None:  # the on_commit callback: starts right after COMMIT
        clock["committed"] = time.perf_counter()
        original_dispatch()
        clock["stored"] = time.perf_counter()

    def recompute(**kwargs: object) -> bool:
        started = time.perf_counter()
        done = original_recompute(**kwargs)  # type: ignore[arg-type]
        clock["recompute"] = time.perf_counter() - started
        clock["recomputed"] = float(done)
        return done

    scheduling._dispatch = dispatch
    scheduling.scores_recompute_query = recompute
    total: list[float] = []
    commit_to_stored: list[float] = []
    recompute_only: list[float] = []
    not_recomputed = 0

    def apply(change: dict, grade: int, measure: bool) -> None:
        nonlocal not_recomputed
        query = queries[change["qid"]]
        query.collection = collection  # as a view would have it loaded
        clock.clear()
        started = time.perf_counter()
        services.judgement_record(
            query=query,
            document=documents[change["docno"]],
            assessor=assessor,
            grade=grade,
            source="api",
        )
        elapsed = time.perf_counter() - started
        if not measure:
            return
        if "stored" not in clock or not clock.get("recomputed"):
            not_recomputed += 1
            return
        total.append(elapsed * 1000)
        commit_to_stored.append((clock["stored"] - clock["committed"]) * 1000)
        recompute_only.append(clock["recompute"] * 1000)

    out["baseline_mb"] = maxrss_mb()
    _profiled(args, "latency", lambda: [apply(c, c["new"], True) for c in changes])
    out["peak_mb"] = maxrss_mb()
    out["judgement_record_ms"] = percentiles(total)
    out["commit_to_stored_ms"] = percentiles(commit_to_stored)
    out["recompute_query_ms"] = percentiles(recompute_only)
    out["not_recomputed"] = not_recomputed
    out["samples_commit_to_stored_ms"] = [round(v, 3) for v in commit_to_stored]
    out["samples_qids"] = [c["qid"] for c in changes]
    # The stored scores of every touched query, for the incremental check against pytrec_eval.
    touched = sorted({c["qid"] for c in changes})
    out["measures"] = len(collection.kept_measures)
    stored = (
        _stored_kept(collection, touched)
        if collection.kept_measures
        else _stored_ndcg(collection, touched)
    )
    with open(data_dir(args) / f"{name}_stored.json", "w") as stream:
        json.dump([[*key, value] for key, value in stored.items()], stream)
    out["pending_after"] = _pending(collection)
    # Undo, newest first, so the database matches qrels.txt again (untimed).
    for change in reversed(changes):
        apply(change, change["old"], False)
    log("latency: changes undone")


def step_latency_ref(
    args: argparse.Namespace, out: dict, measures: set[str] = MEASURES, name: str = "latency"
) -> None:
    import pytrec_eval

    directory = data_dir(args)
    changes = json.loads((directory / "changes.json").read_text())
    touched = {c["qid"] for c in changes}
    out["baseline_mb"] = maxrss_mb()
    qrels = _parse_qrels(directory / "qrels.txt")
    # Pre-built: every run's ranking of every touched query ({docno: score}), parsed untimed.
    by_query: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for path in run_files(directory):
        tag, run = _parse_run(path, keep=touched)
        for qid, ranking in run.items():
            by_query[qid][tag] = ranking
    times: list[float] = []
    for change in changes:
        qid = change["qid"]
        qrels[qid][change["docno"]] = change["new"]
        started = time.perf_counter()
        evaluator = pytrec_eval.RelevanceEvaluator({qid: qrels[qid]}, measures)
        for ranking in by_query[qid].values():
            evaluator.evaluate({qid: ranking})
        times.append((time.perf_counter() - started) * 1000)
    out["peak_mb"] = maxrss_mb()
    out["reevaluate_ms"] = percentiles(times)
    out["runs_per_query"] = percentiles([float(len(v)) for v in by_query.values()])
    # Final state of the touched queries, for the incremental check.
    evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in touched}, measures)
    final: dict[str, dict] = defaultdict(dict)
    for qid in touched:
        for tag, ranking in by_query[qid].items():
            final[tag].update(evaluator.evaluate({qid: ranking}))
    with open(directory / f"{name}_oracle.json", "w") as stream:
        json.dump(final, stream)


STEP_FUNCTIONS = {
    "prepare": step_prepare,
    "copy_floor": step_copy_floor,
    "import_runs": step_import_runs,
    "import_runs_single": step_import_runs_single,
    "import_qrels": step_import_qrels,
    "analyze": step_analyze,
    "resync": step_resync,
    "rescore": step_rescore,
    "pytrec_full": step_pytrec_full,
    "verify": step_verify,
    "latency": step_latency,
    "latency_ref": step_latency_ref,
    "measures_rescore": functools.partial(step_rescore, names=tuple(KEPT)),
    "measures_pytrec_full": functools.partial(
        step_pytrec_full, measures=KEPT_TREC, name="measures_pytrec_full"
    ),
    "measures_verify": step_measures_verify,
    "measures_latency": functools.partial(step_latency, name="measures_latency"),
    "measures_latency_ref": functools.partial(
        step_latency_ref, measures=KEPT_TREC, name="measures_latency"
    ),
}


def run_step_here(args: argparse.Namespace) -> None:
    out: dict = {"step": args.step}
    STEP_FUNCTIONS[args.step](args, out)
    out.setdefault("peak_mb", maxrss_mb())
    Path(args.result).write_text(json.dumps(out))


def run_step(args: argparse.Namespace, name: str) -> dict:
    """Run one step in a fresh interpreter; return what it reported."""
    result = data_dir(args) / f"step_{name}.json"
    result.unlink(missing_ok=True)
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--step", name,
        "--result", str(result),
        "--preset", args.preset,
        "--workdir", str(args.workdir),
        "--database-url", args.database_url,
    ]  # fmt: skip
    if args.profile:
        command.append("--profile")
    if not args.autoanalyze:
        command.append("--no-autoanalyze")
    log(f"step {name} ... (load average {os.getloadavg()[0]:.2f})")
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    subprocess.run(command, check=True, cwd=REPO)
    report = json.loads(result.read_text())
    report["wall_seconds"] = time.perf_counter() - started
    # Other work on the machine skews timings; the 1-minute load average before and after
    # the step (this step itself counts for about 1-2 of it) is kept to judge that.
    report["load"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    log(f"step {name}: done in {report['wall_seconds']:.1f} s (peak {report['peak_mb']:.0f} MB)")
    return report


# --- the report ---------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def build_rows(r: dict) -> list[list[str]]:
    rows: list[list[str]] = []

    def add(step: str, plat, ref, plat_mb, ref_mb, digits: int = 2) -> None:  # type: ignore[no-untyped-def]
        rows.append(
            [
                step,
                fmt(plat, digits),
                fmt(ref, digits),
                ratio(plat, ref),
                fmt(plat_mb, 0),
                fmt(ref_mb, 0),
            ]
        )

    floor = r.get("copy_floor", {})
    if "import_qrels" in r:
        add(
            "import qrels: judgements_import vs COPY (s)",
            r["import_qrels"]["seconds"], floor.get("qrels_seconds"),
            r["import_qrels"]["peak_mb"], floor.get("peak_mb"),
        )  # fmt: skip
    if "import_runs" in r:
        add(
            "import runs: runs_import of all files vs COPY (s)",
            r["import_runs"]["seconds"], floor.get("runs_seconds"),
            r["import_runs"]["peak_mb"], floor.get("peak_mb"),
        )  # fmt: skip
    if "import_runs_single" in r:
        add(
            "import runs: run_import x files vs COPY (s)",
            r["import_runs_single"]["seconds"], floor.get("runs_seconds"),
            r["import_runs_single"]["peak_mb"], floor.get("peak_mb"),
        )  # fmt: skip
    if "rescore" in r:
        add(
            "full rescore vs pytrec_eval parse+evaluate (s)",
            r["rescore"]["seconds"], r.get("pytrec_full", {}).get("seconds"),
            r["rescore"]["peak_mb"], r.get("pytrec_full", {}).get("peak_mb"),
        )  # fmt: skip
    for prefix, name in (("", "latency"), (f"{len(KEPT_FAMILIES)} measures: ", "measures_latency")):
        if name not in r:
            continue
        lat, ref = r[name], r.get(f"{name}_ref", {}).get("reevaluate_ms", {})
        ref_mb = r.get(f"{name}_ref", {}).get("peak_mb")
        if prefix:
            add(
                f"{prefix}full rescore vs pytrec_eval parse+evaluate (s)",
                r["measures_rescore"]["seconds"],
                r.get("measures_pytrec_full", {}).get("seconds"),
                r["measures_rescore"]["peak_mb"],
                r.get("measures_pytrec_full", {}).get("peak_mb"),
            )
        for label, key in (
            ("commit -> scores stored", "commit_to_stored_ms"),
            ("judgement_record call (incl. scoring)", "judgement_record_ms"),
            ("scores_recompute_query alone", "recompute_query_ms"),
        ):
            for p in ("p50", "p95", "max"):
                add(
                    f"{prefix}{label} {p} (ms)",
                    lat[key][p], ref.get(p), lat["peak_mb"], ref_mb, 1,
                )  # fmt: skip
    return rows


HEADER = [
    "step",
    "platform",
    "reference",
    "ratio",
    "peak MB platform",
    "peak MB reference",
]


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(str(row[i])) for row in [HEADER, *rows]) for i in range(len(HEADER))]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(HEADER, widths, strict=True))
    )
    print(line)
    print("-" * len(line))
    for row in rows:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" + "---:|" * (len(HEADER) - 1)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def targets(r: dict) -> list[str]:
    out = []
    if "latency" in r:
        p95 = r["latency"]["commit_to_stored_ms"]["p95"]
        out.append(
            f"judgement -> scores p95 <= 20 ms: {'MET' if p95 <= 20 else 'NOT MET'} ({p95:.1f} ms)"
        )
    if "rescore" in r and "pytrec_full" in r:
        a, b = r["rescore"]["seconds"], r["pytrec_full"]["seconds"]
        out.append(
            f"full rescore no slower than pytrec_eval: {'MET' if a <= b else 'NOT MET'} "
            f"({a:.1f} s vs {b:.1f} s)"
        )
    if "import_runs" in r and "copy_floor" in r:
        a, b = r["import_runs"]["seconds"], r["copy_floor"]["runs_seconds"]
        out.append(
            f"run import within 2x of raw COPY: {'MET' if a <= 2 * b else 'NOT MET'} ({a / b:.2f}x"
            " for all files in one runs_import call"
            + (
                f"; {r['import_runs_single']['seconds'] / b:.2f}x one run_import call per file)"
                if "import_runs_single" in r
                else ")"
            )
        )
    if "measures_latency" in r and "measures_latency_ref" in r:
        a = r["measures_latency"]["commit_to_stored_ms"]["p95"]
        b = r["measures_latency_ref"]["reevaluate_ms"]["p95"]
        out.append(
            f"{len(KEPT_FAMILIES)} measures, judgement -> scores p95 <= 0.3x pytrec_eval: "
            f"{'MET' if a <= 0.3 * b else 'NOT MET'} ({a:.1f} ms vs {b:.1f} ms, {a / b:.2f}x)"
        )
    if "measures_rescore" in r and "measures_pytrec_full" in r:
        a, b = r["measures_rescore"]["seconds"], r["measures_pytrec_full"]["seconds"]
        out.append(
            f"{len(KEPT_FAMILIES)} measures, full rescore <= 0.1x pytrec_eval parse+evaluate: "
            f"{'MET' if a <= 0.1 * b else 'NOT MET'} ({a:.1f} s vs {b:.1f} s, {a / b:.2f}x)"
        )
    peaks = {
        name: r[name]["peak_mb"]
        for name in ("import_runs", "import_runs_single", "import_qrels", "rescore", "latency")
        if name in r
    }
    if peaks:
        listed = ", ".join(f"{k} {v:.0f} MB" for k, v in peaks.items())
        out.append(f"platform peak RSS per step (judge 'bounded' against the data size): {listed}")
    return out


def _ndcg_details(args: argparse.Namespace, r: dict, incremental: dict) -> list[str]:
    details: list[str] = []
    pf = r["pytrec_full"]
    details.append(
        f"pytrec_eval: parse {pf['parse_seconds']:.1f} s + evaluate "
        f"{pf['evaluate_seconds']:.1f} s (one run at a time)"
    )
    details.append(
        f"rescore stored {r['rescore']['query_scores']:,} per-query scores; "
        f"pending afterwards: {r['rescore']['stale_queries']}"
    )
    v = r["verify"]
    details.append(
        f"correctness after full rescore: {v['compared']:,} (run, query, k) nDCG compared "
        f"with pytrec_eval ndcg_cut_k, {v['mismatches']} mismatches > {TOLERANCE:g}, "
        f"{v['bit_identical']:,} bit-identical, max |diff| {v['max_abs_diff']:.3g}, "
        f"missing {v['missing_in_platform']}, extra {v['extra_in_platform']}"
    )
    details.append(
        f"correctness after {args.changes} incremental changes (touched queries): "
        f"{incremental['compared']:,} compared, {incremental['mismatches']} mismatches > "
        f"{TOLERANCE:g}, {incremental['bit_identical']:,} bit-identical, "
        f"max |diff| {incremental['max_abs_diff']:.3g}, "
        f"missing {incremental['missing_in_platform']}, extra {incremental['extra_in_platform']}"
    )
    for example in v["examples"] + incremental["examples"]:
        details.append(f"  {example}")
    lat = r["latency"]
    details.append(
        f"latency: {lat['commit_to_stored_ms']['n']} changes measured, "
        f"{lat['not_recomputed']} not recomputed inline; mean commit->stored "
        f"{lat['commit_to_stored_ms']['mean']:.1f} ms; pending after: {lat['pending_after']}"
    )
    return details


def _measures_details(args: argparse.Namespace, r: dict) -> list[str]:
    pf, rescore = r["measures_pytrec_full"], r["measures_rescore"]
    v, inc, lat = r["measures_verify"], r["measures_incremental"], r["measures_latency"]
    held = rescore["storage"]
    alone = r.get("rescore", {}).get("storage", {})
    details = [
        f"measure set: {', '.join(KEPT_FAMILIES)} ({len(KEPT) + len(CUTOFFS)} values per "
        f"(run, query): {', '.join(KEPT)} and nDCG@{','.join(map(str, CUTOFFS))}); "
        f"pytrec_eval asked for {', '.join(sorted(KEPT_TREC))}",
        f"measure set, pytrec_eval: parse {pf['parse_seconds']:.1f} s + evaluate "
        f"{pf['evaluate_seconds']:.1f} s (one run at a time)",
        f"measure set, correctness after the full rescore: {v['compared']:,} (run, query, "
        f"measure) values compared with pytrec_eval, {v['bit_identical']:,} bit-identical, "
        f"{v['mismatches']} differ (max |diff| {v['max_abs_diff']:.3g}), missing "
        f"{v['missing_in_platform']}",
        f"measure set, correctness after {args.changes} changes (touched queries): "
        f"{inc['compared']:,} compared, {inc['bit_identical']:,} bit-identical, "
        f"{inc['mismatches']} differ, missing {inc['missing_in_platform']}",
        *(f"  {example}" for example in v["examples"] + inc["examples"]),
        f"measure set, latency: {lat['commit_to_stored_ms']['n']} changes measured, "
        f"{lat['not_recomputed']} not recomputed inline; pending after: {lat['pending_after']}",
        f"storage per (run, query) row, {held['rows']:,} rows: the measures' values "
        f"{held['measure_values_bytes']:.0f} B + their set's key "
        f"{held['measures_layout_bytes']:.0f} B; whole row {held['row_bytes']:.0f} B "
        f"(nDCG@k alone: {alone.get('row_bytes', float('nan')):.0f} B); "
        f"table with indexes and TOAST {held['table_bytes_per_row']:.0f} B per row (nDCG@k "
        f"alone: {alone.get('table_bytes_per_row', float('nan')):.0f} B)",
        f"kept qrels ranks, {held.get('kept_rows', 0):,} rows (one per ranking): whole row "
        f"{held.get('kept_row_bytes', 0.0):.0f} B, table with indexes and TOAST "
        f"{held.get('kept_table_bytes_per_row', 0.0):.0f} B per row",
    ]
    return details


def code_version() -> str:
    """The commit measured, and whether application code differed from it (read-only git)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "annotations", "ndcg_platform"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.split("\n")
    except OSError:
        return "unknown"
    changed = sorted({line[3:] for line in dirty if line.strip() and not line.startswith("??")})
    return head + (f" + uncommitted changes to {', '.join(changed)}" if changed else "")


def orchestrate(args: argparse.Namespace) -> None:
    manifest = ensure_data(args)
    if args.generate_only:
        return
    directory = data_dir(args)
    version = code_version()
    log(f"code: {version}")
    log(
        f"collection: {len(manifest['tags'])} runs, {manifest['run_lines']} results, "
        f"{manifest['qrels_lines']} judgements, {manifest['run_bytes'] / 1e6:.0f} MB of runs"
    )
    r: dict[str, dict] = {}
    if args.skip_import:
        r["resync"] = run_step(args, "resync")
        # Untimed, as after an import: earlier runs left dead rows (a rescore rewrites every
        # score row), which autovacuum would have cleaned; without it a rescore slows down.
        r["analyze"] = run_step(args, "analyze")
    elif args.reuse_import_figures:
        # The import steps of the previous run (same data, loaded database) are reported again.
        names = ("prepare", "copy_floor", "import_runs", "import_runs_single", "import_qrels")
        for name in (*names, "analyze"):
            r[name] = json.loads((directory / f"step_{name}.json").read_text())
    else:
        r["prepare"] = run_step(args, "prepare")
        r["copy_floor"] = run_step(args, "copy_floor")
        r["import_runs"] = run_step(args, "import_runs")
        r["import_runs_single"] = run_step(args, "import_runs_single")
        r["import_qrels"] = run_step(args, "import_qrels")
        r["analyze"] = run_step(args, "analyze")
    changes = make_changes(directory, args.changes, args.seed)
    (directory / "changes.json").write_text(json.dumps(changes))
    touched = {c["qid"] for c in changes}
    incremental: dict = {}
    if args.phase in ("all", "ndcg"):
        r["rescore"] = run_step(args, "rescore")
        r["pytrec_full"] = run_step(args, "pytrec_full")
        r["verify"] = run_step(args, "verify")
        r["latency"] = run_step(args, "latency")
        r["latency_ref"] = run_step(args, "latency_ref")
        stored = {
            (run, qid, k): v
            for run, qid, k, v in json.loads((directory / "latency_stored.json").read_text())
        }
        oracle = json.loads((directory / "latency_oracle.json").read_text())
        incremental = compare(stored, oracle, qids=touched)
    if args.phase in ("all", "measures"):
        for name in (
            "measures_rescore",
            "measures_pytrec_full",
            "measures_verify",
            "measures_latency",
            "measures_latency_ref",
        ):
            r[name] = run_step(args, name)
        stored = {
            (run, qid, key): v
            for run, qid, key, v in json.loads(
                (directory / "measures_latency_stored.json").read_text()
            )
        }
        oracle = json.loads((directory / "measures_latency_oracle.json").read_text())
        r["measures_incremental"] = compare_kept(stored, oracle, qids=touched)

    rows = build_rows(r)
    print()
    print(f"Code: {version}; finished {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(
        f"Benchmark, preset {args.preset}: {len(manifest['tags'])} runs, "
        f"{manifest['queries']} queries, "
        f"{manifest['run_lines']:,} results, {manifest['qrels_lines']:,} judgements; "
        f"{args.changes} judgement changes"
    )
    print()
    print_table(rows)
    print()
    details = []
    if "import_runs" in r:
        ir, floor_rate = r["import_runs"], r["copy_floor"]["rows"] / r["copy_floor"]["runs_seconds"]
        details.append(
            f"run import, one runs_import call: {ir['files']} files, {ir['rows']:,} results, "
            f"{ir['rows'] / ir['seconds']:,.0f} rows/s; COPY floor {floor_rate:,.0f} rows/s "
            f"(the faster of: lines split in Python, then COPY, "
            f"{r['copy_floor']['runs_split_seconds']:.1f} s; the files' bytes as they are, split "
            f"by COPY, {r['copy_floor'].get('runs_raw_seconds', float('nan')):.1f} s); "
            f"scoring deferred for {ir['deferred_runs']} runs"
        )
    if "import_runs_single" in r:
        single = r["import_runs_single"]
        details.append(
            f"run import, one run_import call per file: {single['rows']:,} results, "
            f"{single['rows'] / single['seconds']:,.0f} rows/s; per file "
            f"p50 {single['per_file']['p50']:.2f} s, max {single['per_file']['max']:.2f} s; "
            f"includes {single['analyze_seconds']:.1f} s of "
            f"{single['analyze_count']} ANALYZE (autovacuum's trigger, emulated between files: "
            f"autovacuum is {r['prepare'].get('autovacuum', '?')} on this server)"
        )
    if "import_qrels" in r:
        details.append(
            f"qrels import: {r['import_qrels']['summary']}; scoring deferred for "
            f"{r['import_qrels']['deferred_queries']} queries"
        )
    if "analyze" in r:
        details.append(
            "VACUUM (ANALYZE) after import (untimed in the table): "
            f"{r['analyze']['seconds']:.1f} s; database {r['analyze']['database_size']}, "
            f"ranking table {r['analyze']['result_table_size']}"
        )
    if "pytrec_full" in r:
        details.extend(_ndcg_details(args, r, incremental))
    if "measures_rescore" in r:
        details.extend(_measures_details(args, r))
    baselines = ", ".join(
        f"{name} {rep['baseline_mb']:.0f}" for name, rep in r.items() if "baseline_mb" in rep
    )
    loads = ", ".join(
        f"{name} {rep['load'][0]:.1f}/{rep['load'][1]:.1f}"
        for name, rep in r.items()
        if "load" in rep
    )
    details.append(
        f"machine load (1-min load average before/after each step, {os.cpu_count()} CPUs): {loads}"
    )
    details.append(
        "peak memory = peak RSS (VmHWM) of each step's own process; "
        f"baseline at step start (MB): {baselines}"
    )
    for line in details:
        print(line)
    for line in targets(r):
        print(line)
    print()
    print("Markdown:")
    print()
    print(markdown_table(rows))
    print()
    for line in details + targets(r):
        print(f"- {line}")
    (directory / "report.json").write_text(
        json.dumps({"code": version, "results": r, "incremental": incremental}, indent=1)
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="robust04", choices=["robust04", "dl19", "small"])
    parser.add_argument("--workdir", default=str(REPO / "benchmarks" / "data"))
    parser.add_argument(
        "--gen", default=None, help="path of gen_trec.py (default benchmarks/gen_trec.py)"
    )
    parser.add_argument(
        "--database-url", default=DEFAULT_URL, help="DROPPED and recreated unless --skip-import"
    )
    parser.add_argument("--changes", type=int, default=200, help="random judgement changes to time")
    parser.add_argument("--seed", type=int, default=7, help="seed of the judgement changes")
    parser.add_argument("--skip-import", action="store_true", help="reuse the loaded database")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the platform steps (slower)"
    )
    parser.add_argument(
        "--no-autoanalyze",
        dest="autoanalyze",
        action="store_false",
        help="do not ANALYZE between run files in place of autovacuum",
    )
    parser.add_argument(
        "--generate-only", action="store_true", help="only make sure the data exists"
    )
    parser.add_argument(
        "--reuse-import-figures",
        action="store_true",
        help="resume after the import steps of the previous run (their figures are reused)",
    )
    parser.add_argument(
        "--phase",
        default="all",
        choices=["all", "ndcg", "measures"],
        help="after the import: nDCG@k alone, the collection keeping the measure set, or both",
    )
    parser.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.step:
        run_step_here(args)
    else:
        orchestrate(args)


if __name__ == "__main__":
    main()
