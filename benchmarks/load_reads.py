#!/usr/bin/env python3
"""Load the read benchmark's collection at a chosen number of runs into a fresh database.

A script, not a test. ``bench_reads.py`` reads the collection ``bench`` that
``bench_scoring.py`` loads (110 runs x 249 queries x 1000 results); to measure the read path
at other sizes (500 runs) without a 100 million-row import, this one generates gen_trec.py's
Robust04 preset with ``--runs`` runs, ``--queries`` queries and ``--depth`` results per query
(the leaderboard reads the top 20 at most), drops and creates the database (its name must
start with ``ndcg_h``), migrates, imports the runs and the qrels with scoring deferred and
rescores the collection once. Then ``bench_reads.py --database-url URL`` measures it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_scoring as base  # noqa: E402  (the shared helpers: data, database, scoring)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--queries", type=int, default=249)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--workdir", default=str(REPO / "benchmarks" / "data"))
    args = parser.parse_args()
    parts = urlsplit(args.database_url)
    name = parts.path.lstrip("/")
    if not name.startswith("ndcg_h") or not name.replace("_", "").isalnum():
        sys.exit(f"refusing to drop database {name!r}: use a name starting ndcg_h")
    directory = Path(args.workdir).resolve() / f"reads-r{args.runs}-q{args.queries}-d{args.depth}"
    if not (directory / "manifest.json").is_file():
        scratch = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        base.log(f"generating into {directory}")
        subprocess.run(
            [sys.executable, str(base.find_generator(None)), str(scratch), "--preset",
             "robust04", "--runs", str(args.runs), "--queries", str(args.queries),
             "--depth", str(args.depth)],
            check=True,
        )  # fmt: skip
        scratch.rename(directory)
    with base.pg_connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    base.django_setup(argparse.Namespace(database_url=args.database_url))
    from django.core.management import call_command

    from annotations import scores, services

    call_command("migrate", verbosity=0, interactive=False)
    base.defer_scoring()
    collection = services.collection_create(
        slug="bench", name=f"{args.runs} runs", cutoffs=[5, 10, 20]
    )
    started = time.perf_counter()
    services.runs_import(collection=collection, sources=[str(p) for p in base.run_files(directory)])
    services.judgements_import(
        collection=collection,
        source=str(directory / "qrels.txt"),
        assessor=services.import_assessor(),
    )
    base.log(f"imported in {time.perf_counter() - started:.1f} s")
    with base.pg_connect(args.database_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    started = time.perf_counter()
    scores.scores_rescore_collection(collection_id=collection.id)
    base.log(f"rescored in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
