#!/usr/bin/env python3
"""Many runs, many cutoffs: judgement -> stored scores and full rescores against pytrec_eval.

A script, not a test. It generates (once) a Robust04-shaped collection with gen_trec.py,
smaller in queries (`--queries`, default 50 instead of 249) but with Robust04's depth (1000)
and judgement density (about 1,250 per query), loads it into a freshly created PostgreSQL
database through the platform's services, twice: the first 110 runs into one collection,
all 500 into another. Then, for every shape runs x cutoffs (110x3, 500x3, 110x20, 110x100,
500x100), in a fresh child process:

* the collection's cutoffs are set (3: 5,10,20; 20: 5..100 by 5; 100: 1..100) and a full
  rescore is timed, with its peak resident memory above the process's baseline (VmHWM,
  reset through /proc/self/clear_refs after start-up);
* `--changes` random grade changes of judged pairs go through `services.judgement_record`
  with inline scoring; the clock runs from the COMMIT (the start of the on_commit callback)
  to all of the query's scores stored;
* pytrec_eval re-evaluates the changed query for every run at the same cutoffs, from
  in-memory dicts built beforehand (RelevanceEvaluator on the query's qrels, then
  `evaluate` of each run's ranking), in the same process, right after;
* every stored nDCG of the changed queries is compared with pytrec_eval's (bit for bit),
  then the changes are undone (untimed).

It also measures the qrels import (`services.judgements_import`, queries and documents
already known from the runs) against psycopg COPY of the same rows into a bare table and
into copies of the judgement and history tables with the same indexes and foreign keys.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_scoring as base  # noqa: E402  (the shared helpers: data, processes, memory)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_h_cutoffs_bench"
RUN_COUNTS = (110, 500)
CUTOFF_SETS = {3: [5, 10, 20], 20: list(range(5, 101, 5)), 100: list(range(1, 101))}
SHAPES = ((110, 3), (500, 3), (110, 20), (110, 100), (500, 100))


def slug(runs: int) -> str:
    return f"r{runs}"


def data_directory(args: argparse.Namespace) -> Path:
    return Path(args.workdir).resolve() / f"cutoffs-q{args.queries}"


def ensure_data(args: argparse.Namespace) -> Path:
    directory = data_directory(args)
    if (directory / "manifest.json").is_file():
        manifest = json.loads((directory / "manifest.json").read_text())
        if len(manifest.get("tags", [])) == max(RUN_COUNTS):
            return directory
    scratch = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    generator = base.find_generator(args.gen)
    base.log(f"data: generating into {directory}")
    subprocess.run(
        [sys.executable, str(generator), str(scratch), "--preset", "robust04",
         "--queries", str(args.queries), "--runs", str(max(RUN_COUNTS))],
        check=True,
    )  # fmt: skip
    shutil.rmtree(directory, ignore_errors=True)
    scratch.rename(directory)
    return directory


def reset_peak() -> float:
    """Reset this process's resident high-water mark; return the current RSS in MB."""
    with open("/proc/self/clear_refs", "w") as stream:
        stream.write("5")
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


# --- steps (each in its own process) -----------------------------------------------------


def step_load(args: argparse.Namespace, out: dict) -> None:
    """Fresh database; runs into both collections, then the qrels (timed) and COPY floors."""
    parts = urlsplit(args.database_url)
    name = parts.path.lstrip("/")
    if not name.startswith("ndcg_h_cutoffs_") or not name.replace("_", "").isalnum():
        sys.exit(f"refusing to drop database {name!r}: use a name starting ndcg_h_cutoffs_")
    with base.pg_connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
        out["server_version"] = conn.execute("SHOW server_version").fetchone()[0]
    base.django_setup(args)
    from django.core.management import call_command

    from annotations import services

    call_command("migrate", verbosity=0, interactive=False)
    base.defer_scoring()
    directory = data_directory(args)
    files = base.run_files(directory)
    assessor = services.import_assessor()
    for runs in RUN_COUNTS:
        collection = services.collection_create(
            slug=slug(runs), name=f"{runs} runs", cutoffs=CUTOFF_SETS[3]
        )
        started = time.perf_counter()
        services.runs_import(collection=collection, sources=[str(p) for p in files[:runs]])
        out[f"import_runs_{runs}_seconds"] = time.perf_counter() - started
        base.log(f"load: {runs} runs imported in {out[f'import_runs_{runs}_seconds']:.1f} s")
        with base.pg_connect(args.database_url, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE)")
        started = time.perf_counter()
        summary = services.judgements_import(
            collection=collection, source=str(directory / "qrels.txt"), assessor=assessor
        )
        out[f"import_qrels_{runs}_seconds"] = time.perf_counter() - started
        out["qrels_summary"] = str(summary)
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    qrels_floors(args, out, directory)


def qrels_floors(args: argparse.Namespace, out: dict, directory: Path) -> None:
    """COPY of the qrels rows: bare, and into tables shaped like the platform's.

    The shaped tables are `LIKE ... INCLUDING ALL` copies of the judgement and history
    tables (defaults, checks, indexes, unique constraints) plus the same foreign keys, so
    COPY pays what the database itself must do for those rows. The ids (query, document,
    assessor) are resolved beforehand, untimed: resolving them is the platform's work.
    """
    from annotations import services
    from annotations.models import Document, Judgement, JudgementHistory, Query

    lines = [line.split() for line in (directory / "qrels.txt").read_bytes().splitlines()]
    collection_slug = slug(RUN_COUNTS[0])
    queries = dict(Query.objects.filter(collection__slug=collection_slug).values_list("qid", "id"))
    documents = dict(
        Document.objects.filter(collection__slug=collection_slug).values_list("docno", "id")
    )
    assessor = services.import_assessor().pk
    now = "2026-12-01 00:00:00+00"
    judgement_rows = [
        b"\t".join((str(queries[q.decode()]).encode(), str(documents[d.decode()]).encode(),
                    str(assessor).encode(), g, b"", now.encode(), now.encode()))
        for q, _, d, g in lines
    ]  # fmt: skip
    history_rows = [
        b"\t".join((str(queries[q.decode()]).encode(), str(documents[d.decode()]).encode(),
                    str(assessor).encode(), b"\\N", b"\\N", g, b"", b"import", now.encode()))
        for q, _, d, g in lines
    ]  # fmt: skip
    judgement = Judgement._meta.db_table
    history = JudgementHistory._meta.db_table
    with base.pg_connect(args.database_url, autocommit=True) as conn:

        def copy(table: str, columns: str, rows: list[bytes]) -> None:
            with conn.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as c:
                for start in range(0, len(rows), 20000):
                    c.write(b"\n".join(rows[start : start + 20000]) + b"\n")

        conn.execute("DROP TABLE IF EXISTS bench_bare_qrels, bench_judgement, bench_history")
        conn.execute("CREATE TABLE bench_bare_qrels (qid text, docno text, grade integer)")
        bare = [b"\t".join((q, d, g)) for q, _, d, g in lines]
        started = time.perf_counter()
        with conn.transaction():
            copy("bench_bare_qrels", "qid, docno, grade", bare)
        out["copy_bare_seconds"] = time.perf_counter() - started
        for table, source in (("bench_judgement", judgement), ("bench_history", history)):
            conn.execute(f"CREATE TABLE {table} (LIKE {source} INCLUDING ALL)")
            foreign = conn.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = %s::regclass AND contype = 'f'",
                [source],
            ).fetchall()
            for (definition,) in foreign:
                conn.execute(f"ALTER TABLE {table} ADD {definition}")
            out[f"{table}_foreign_keys"] = len(foreign)
            out[f"{table}_indexes"] = conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE tablename = %s", [table]
            ).fetchone()[0]
        j_columns = "query_id, document_id, assessor_id, grade, note, created, updated"
        h_columns = (
            "query_id, document_id, assessor_id, changed_by_id, old_grade, new_grade, note, "
            "source, changed_at"
        )
        started = time.perf_counter()
        with conn.transaction():
            copy("bench_judgement", j_columns, judgement_rows)
            copy("bench_history", h_columns, history_rows)
        out["copy_shaped_seconds"] = time.perf_counter() - started
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("TRUNCATE bench_judgement, bench_history")
            copy("bench_judgement", j_columns, judgement_rows)
        out["copy_shaped_judgements_only_seconds"] = time.perf_counter() - started
        out["qrels_rows"] = len(lines)
        conn.execute("DROP TABLE bench_bare_qrels, bench_judgement, bench_history")


def _measure_shape(args: argparse.Namespace, out: dict) -> None:
    import pytrec_eval

    base.django_setup(args)
    from django.db import connection

    from annotations import scores, services
    from annotations.models import Collection, Document, Query, Run
    from annotations.selectors import evaluation

    runs, width = args.runs, args.width
    cutoffs = CUTOFF_SETS[width]
    collection = Collection.objects.get(slug=slug(runs))
    Collection.objects.filter(id=collection.id).update(cutoffs=cutoffs)
    collection.refresh_from_db()
    directory = data_directory(args)
    # pytrec_eval's inputs, built untimed; the changes, drawn from the judged pairs.
    qrels = base._parse_qrels(directory / "qrels.txt")
    rng = random.Random(args.seed)
    pairs = sorted((q, d) for q, docs in qrels.items() for d in docs)
    changes = []
    for qid, docno in rng.sample(pairs, args.changes):
        old = qrels[qid][docno]
        changes.append((qid, docno, old, rng.choice([g for g in range(4) if g != old])))
    touched = {qid for qid, *_ in changes}
    by_query: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for path in base.run_files(directory)[:runs]:
        tag, run = base._parse_run(path, keep=touched)
        for qid, ranking in run.items():
            by_query[qid][tag] = ranking
    measures = {"ndcg_cut." + ",".join(map(str, cutoffs))}
    connection.ensure_connection()
    resync(collection, qrels)

    # The full rescore from nothing stored (the stored scores are cleared untimed first, so
    # every shape and every version of the code writes all of them): time, and peak memory
    # above what the process held before it.
    clear_scores(args, collection.id)
    baseline = reset_peak()
    started = time.perf_counter()
    scores.scores_rescore_collection(collection_id=collection.id)
    out["rescore_seconds"] = time.perf_counter() - started
    out["rescore_peak_mb"] = base.maxrss_mb() - baseline
    out["baseline_mb"] = baseline
    base.log(f"{runs}x{width}: rescore {out['rescore_seconds']:.1f} s")

    if args.rescore_only:
        return
    # pytrec_eval's inputs (millions of dict entries for the touched queries) belong to the
    # reference, not to the platform: moved out of the cycle collector's reach, as the app
    # does with its start-up state, so that collections walking them do not land inside
    # the recomputations measured below.
    gc.collect()
    gc.freeze()
    # Judgement -> scores stored, measured from the COMMIT (the on_commit callback starts).
    module = sys.modules[scores.scores_schedule.__module__]
    original = module._dispatch
    clock: dict[str, float] = {}

    def dispatch() -> None:
        clock["committed"] = time.perf_counter()
        original()
        clock["stored"] = time.perf_counter()

    module._dispatch = dispatch
    query_of = {q.qid: q for q in Query.objects.filter(collection=collection, qid__in=touched)}
    document_of = {
        d.docno: d
        for d in Document.objects.filter(
            collection=collection, docno__in={docno for _, docno, *_ in changes}
        )
    }
    assessor = services.import_assessor()

    def record(qid: str, docno: str, grade: int) -> float | None:
        query = query_of[qid]
        query.collection = collection
        clock.clear()
        services.judgement_record(
            query=query, document=document_of[docno], assessor=assessor, grade=grade, source="api"
        )
        if "stored" not in clock:
            return None  # nothing changed, nothing recomputed
        return (clock["stored"] - clock["committed"]) * 1000

    platform = [record(qid, docno, new) for qid, docno, _, new in changes]
    out["not_recomputed"] = sum(value is None for value in platform)
    platform = [value for value in platform if value is not None]
    reference = []
    for qid, docno, _, new in changes:
        qrels[qid][docno] = new
        started = time.perf_counter()
        evaluator = pytrec_eval.RelevanceEvaluator({qid: qrels[qid]}, measures)
        for ranking in by_query[qid].values():
            evaluator.evaluate({qid: ranking})
        reference.append((time.perf_counter() - started) * 1000)
    out["commit_to_stored_ms"] = base.percentiles(platform)
    out["pytrec_reevaluate_ms"] = base.percentiles(reference)

    # Every stored nDCG of the changed queries against pytrec_eval's, bit for bit.
    evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in touched}, measures)
    compared = different = 0
    stored_ndcg = {
        (row.run, row.qid, row.k): row.ndcg
        for row in evaluation.stored_query_scores(
            collection=collection, runs=list(Run.objects.filter(collection=collection)), ks=cutoffs
        )
        if row.qid in touched
    }
    for qid in touched:
        for tag, ranking in by_query[qid].items():
            result = evaluator.evaluate({qid: ranking})[qid]
            for k in cutoffs:
                compared += 1
                different += stored_ndcg.get((tag, qid, k)) != result[f"ndcg_cut_{k}"]
    out["compared"], out["different"] = compared, different
    module._dispatch = original
    for qid, docno, old, _ in reversed(changes):
        record(qid, docno, old)


def resync(collection, qrels: dict[str, dict[str, int]]) -> None:  # type: ignore[no-untyped-def]
    """Grades an interrupted earlier run left changed are set back to qrels.txt (untimed)."""
    from annotations import services
    from annotations.models import Judgement

    assessor = services.import_assessor()
    rows = Judgement.objects.filter(query__collection=collection, assessor=assessor)
    for judgement in rows.select_related("query", "document").iterator(chunk_size=5000):
        grade = qrels[judgement.query.qid][judgement.document.docno]
        if judgement.grade != grade:
            services.judgement_record(
                query=judgement.query, document=judgement.document, assessor=assessor,
                grade=grade, source="import",
            )  # fmt: skip


def clear_scores(args: argparse.Namespace, collection_id: int) -> None:
    """Delete a collection's stored scores and vacuum them away (untimed)."""
    tables = ("annotations_queryscore", "annotations_idealscore", "annotations_runscore")
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        for table in tables:
            by = "query_id IN (SELECT id FROM annotations_query WHERE collection_id = %s)"
            if table == "annotations_runscore":
                by = "run_id IN (SELECT id FROM annotations_run WHERE collection_id = %s)"
            conn.execute(f"DELETE FROM {table} WHERE {by}", [collection_id])
        for table in tables:
            conn.execute(f"VACUUM (ANALYZE) {table}")


def step_shape(args: argparse.Namespace, out: dict) -> None:
    _measure_shape(args, out)


STEPS = {"load": step_load, "shape": step_shape}


def run_step(args: argparse.Namespace, name: str, *extra: str) -> dict:
    result = data_directory(args) / f"cutoffs_{name}{'_'.join(extra)}.json"
    result.unlink(missing_ok=True)
    command = [
        sys.executable, str(Path(__file__).resolve()), "--step", name, "--result", str(result),
        "--database-url", args.database_url, "--workdir", args.workdir,
        "--queries", str(args.queries), "--changes", str(args.changes), "--seed", str(args.seed),
        *(["--rescore-only"] if args.rescore_only else []), *extra,
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=REPO)
    report = json.loads(result.read_text())
    report["wall_seconds"] = time.perf_counter() - started
    report["load"] = round(os.getloadavg()[0], 2)
    return report


def orchestrate(args: argparse.Namespace) -> None:
    ensure_data(args)
    report: dict = {"queries": args.queries, "changes": args.changes, "code": base.code_version()}
    if not args.skip_load:
        base.log("load: database, runs, qrels and COPY floors")
        report["load"] = run_step(args, "load")
    shapes = SHAPES if not args.shapes else [tuple(map(int, s.split("x"))) for s in args.shapes]
    report["shapes"] = {}
    for runs, width in shapes:
        base.log(f"shape {runs} runs x {width} cutoffs")
        report["shapes"][f"{runs}x{width}"] = run_step(
            args, "shape", "--runs", str(runs), "--width", str(width)
        )
    (data_directory(args) / "cutoffs_report.json").write_text(json.dumps(report, indent=1))
    print_report(report)


def print_report(report: dict) -> None:
    print(f"\ncode {report['code']}; {report['queries']} queries x up to 1000 results per run; "
          f"{report['changes']} judgement changes per shape\n")  # fmt: skip
    print(
        "| runs x cutoffs | commit -> stored p50 / p95 ms | pytrec_eval p50 / p95 ms "
        "| p95 ratio | target <= 0.5x | rescore s | rescore peak MB | nDCG vs trec_eval |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---|")
    for shape, r in report["shapes"].items():
        if "commit_to_stored_ms" not in r:  # --rescore-only
            print(f"| {shape} | - | - | - | - | {r['rescore_seconds']:.1f} | "
                  f"{r['rescore_peak_mb']:.0f} | - |")  # fmt: skip
            continue
        ours, ref = r["commit_to_stored_ms"], r["pytrec_reevaluate_ms"]
        ratio = ours["p95"] / ref["p95"]
        print(
            f"| {shape} | {ours['p50']:.1f} / {ours['p95']:.1f} | {ref['p50']:.1f} / "
            f"{ref['p95']:.1f} | {ratio:.2f}x | {'met' if ratio <= 0.5 else 'not met'} | "
            f"{r['rescore_seconds']:.1f} | {r['rescore_peak_mb']:.0f} | "
            f"{r['compared'] - r['different']}/{r['compared']} identical |"
        )
    load = report.get("load")
    if load:
        rows = load["qrels_rows"]
        ours = load[f"import_qrels_{RUN_COUNTS[0]}_seconds"]
        print(f"\nqrels import ({rows} judgements, queries and documents known):")
        print("| step | seconds | vs ours |")
        print("|---|---:|---:|")
        for label, key in (
            ("judgements_import (ours, 110 runs)", "import_qrels_110_seconds"),
            ("judgements_import (ours, 500 runs)", "import_qrels_500_seconds"),
            ("COPY into judgement + history copies (same indexes, FKs)", "copy_shaped_seconds"),
            ("COPY into the judgement copy only", "copy_shaped_judgements_only_seconds"),
            ("COPY into a bare table", "copy_bare_seconds"),
        ):  # fmt: skip
            print(f"| {label} | {load[key]:.3f} | {ours / load[key]:.1f}x |")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--workdir", default=str(REPO / "benchmarks" / "data"))
    parser.add_argument("--gen", help="path of gen_trec.py")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--changes", type=int, default=40, help="judgement changes per shape")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-load", action="store_true", help="reuse the loaded database")
    parser.add_argument(
        "--rescore-only", action="store_true", help="time the rescores, not the judgements"
    )
    parser.add_argument("--shapes", nargs="*", help="e.g. 110x3 500x100 (default: all five)")
    parser.add_argument("--step", choices=sorted(STEPS), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--width", type=int, choices=sorted(CUTOFF_SETS), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.step:
        out: dict = {"step": args.step}
        STEPS[args.step](args, out)
        Path(args.result).write_text(json.dumps(out))
        return
    orchestrate(args)


if __name__ == "__main__":
    main()
