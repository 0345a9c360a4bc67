"""Import page uploads without a broker: the upload's request with the jobs run in it
(NDCG_IMPORT_THREADS=0, the old embedded mode) beside the same upload handed to the web
process's import threads (NDCG_IMPORT_THREADS=2), and the import page's state endpoint
while the threads import, beside the same endpoint idle, all in one run.

    .venv/bin/python benchmarks/bench_import_threads.py \
        --database-url postgres://postgres@127.0.0.1:5432/ndcg_bench_threads --files 30

The database is dropped and recreated (PostgreSQL) or a fresh SQLite file is used.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run_file(tag: str, queries: int, depth: int) -> bytes:
    return "".join(
        f"q{q} Q0 doc{(d * 7 + q) % 20000} {d + 1} {depth - d}.25 {tag}\n"
        for q in range(queries)
        for d in range(depth)
    ).encode()


def _fresh_database(url: str) -> None:
    if not url.startswith("postgres"):
        return
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="")
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--depth", type=int, default=1000)
    args = parser.parse_args()
    url = args.database_url or f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    _fresh_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ["CELERY_BROKER_URL"] = ""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ndcg_platform.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    from annotations import services
    from annotations.models import ImportJob, Membership, Run
    from annotations.services.job_queue import import_jobs_wait, import_threads

    setup_test_environment()
    settings.ALLOWED_HOSTS = ["*"]
    settings.NDCG_UPLOAD_DIR = Path(tempfile.mkdtemp()) / "uploads"
    call_command("migrate", verbosity=0)
    user_model = __import__("django.contrib.auth", fromlist=["get_user_model"]).get_user_model()
    organiser = user_model.objects.create_user("bench-organiser", password="x")
    results: list[tuple[str, str]] = []

    def upload(slug: str) -> tuple[float, Client]:
        collection = services.collection_create(slug=slug, cutoffs=[10])
        Membership.objects.create(collection=collection, user=organiser, role="organiser")
        client = Client()
        client.force_login(organiser)
        files = [
            SimpleUploadedFile(
                f"{slug}-{i:03d}.txt", _run_file(f"{slug}-{i:03d}", args.queries, args.depth)
            )
            for i in range(args.files)
        ]
        started = time.perf_counter()
        response = client.post(
            reverse("collection-import-upload", args=[slug, "run"]), {"run-file": files}
        )
        assert response.status_code == 302, response.status_code
        return time.perf_counter() - started, client

    def state_times(client: Client, slug: str, count: int) -> list[float]:
        url = reverse("collection-import-jobs", args=[slug])
        times = []
        for _ in range(count):
            started = time.perf_counter()
            assert client.get(url).status_code == 200
            times.append(time.perf_counter() - started)
        return times

    settings.NDCG_IMPORT_THREADS = 0
    inline_seconds, inline_client = upload("inline")
    idle = state_times(inline_client, "inline", 50)
    settings.NDCG_IMPORT_THREADS = 2
    threaded_seconds, client = upload("threads")
    started = time.perf_counter()
    busy: list[float] = []
    url = reverse("collection-import-jobs", args=["threads"])
    while ImportJob.objects.filter(
        collection__slug="threads", state__in=["queued", "running"]
    ).exists():
        before = time.perf_counter()
        assert client.get(url).status_code == 200
        busy.append(time.perf_counter() - before)
        time.sleep(0.05)
    import_jobs_wait(timeout=600)
    all_done = threaded_seconds + time.perf_counter() - started
    done = Run.objects.filter(collection__slug="threads").count()
    assert done == args.files, done

    def p(values: list[float], q: float) -> float:
        return (
            statistics.quantiles(values, n=100)[q - 1] * 1000
            if len(values) > 1
            else values[0] * 1000
        )

    mb = args.files * len(_run_file("x", args.queries, args.depth)) / 1e6
    print(
        f"{args.files} run files x {args.queries} queries x {args.depth} ({mb:.0f} MB), "
        f"{connection.vendor}, import threads: {import_threads()}"
    )
    results += [
        ("upload request, jobs in the request (NDCG_IMPORT_THREADS=0)", f"{inline_seconds:.2f} s"),
        ("upload request, jobs on the import threads (=2)", f"{threaded_seconds:.2f} s"),
        ("  then every job done (from the upload)", f"{all_done:.2f} s"),
        ("state endpoint idle: p50 / p95", f"{p(idle, 50):.1f} / {p(idle, 95):.1f} ms"),
        (f"state endpoint while importing ({len(busy)} reads): p50 / p95",
         f"{p(busy, 50):.1f} / {p(busy, 95):.1f} ms"),
    ]  # fmt: skip
    width = max(len(name) for name, _ in results)
    for name, value in results:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
