#!/usr/bin/env python3
"""Impact refresh after one judgement: inputs kept and re-read where they moved, vs from scratch.

A script, not a test. It loads (once, with load_reads.py: gen_trec.py's Robust04 preset at
``--runs`` x ``--queries`` x ``--depth``, cutoffs 5, 10, 20) the collection ``bench`` into a
database whose name starts with ``ndcg_h``, builds an impact-ordered pool of depth
``--pool-depth`` on it (so impact is kept at 5, 10, 20 and the pool's depth), then for
``--changes`` random judgements (a person's grade of a pair of the pool, scored inline, not
timed) times what the worker runs after the leaderboards' refresh,
``services.impact.impacts_refresh_task``, twice on the same state:

  kept      first, with the inputs kept by the previous refresh (the worker's steady state):
            only the changed query's grades are read again
  scratch   then with the kept inputs dropped (`impact_inputs_forget`), the stored stamps
            cleared so every k is refreshed again: what every refresh cost before

and checks that the two leave the same stored impacts (every ``DocumentImpact``, pair state
and pool entry's impact, as bits) and the same flip marks. The kept refresh runs first, so it
also pays for the pool entries' and stored rows' writes that the change caused (the scratch
one rewrites the same rows, with fewer changes). It also times the inputs alone
(``impact_inputs`` from scratch vs ``impact_inputs_held`` after a change) per k.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_scoring as base  # noqa: E402  (the shared helpers: data, database, stats)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_h_impact"


def stored_digest(collection) -> str:  # type: ignore[no-untyped-def]
    """The bits of every stored impact figure and flip mark of the collection."""
    from annotations.models import DocumentImpact, ImpactSnapshot, PoolEntry

    digest = hashlib.blake2b()
    for k, pairs, adjacent in (
        ImpactSnapshot.objects.filter(collection=collection)
        .order_by("k")
        .values_list("k", "pairs", "adjacent")
    ):
        digest.update(repr((k, [[float(x).hex() for x in p] for p in pairs], adjacent)).encode())
    rows = DocumentImpact.objects.filter(snapshot__collection=collection).values_list(
        "snapshot__k", "query_id", "document_id", "impact"
    )
    for row in sorted(rows):
        digest.update(repr((*row[:3], float(row[3]).hex())).encode())
    entries = PoolEntry.objects.filter(pool__collection=collection).values_list("id", "impact")
    for entry_id, impact in sorted(entries):
        digest.update(repr((entry_id, float(impact or 0.0).hex())).encode())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=110)
    parser.add_argument("--queries", type=int, default=249)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pool-depth", type=int, default=10)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--workdir", default=str(REPO / "benchmarks" / "data"))
    parser.add_argument("--json", help="write the raw figures here")
    args = parser.parse_args()
    name = args.database_url.rsplit("/", 1)[-1]
    if not name.startswith("ndcg_h"):
        sys.exit(f"refusing database {name!r}: use a name starting ndcg_h")
    base.django_setup(argparse.Namespace(database_url=args.database_url))
    from annotations.models import Collection

    if not _loaded(Collection):
        subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "load_reads.py"), "--database-url",
             args.database_url, "--runs", str(args.runs), "--queries", str(args.queries),
             "--depth", str(args.depth), "--workdir", args.workdir],
            check=True,
        )  # fmt: skip
    measure(args)


def _loaded(collection_model) -> bool:  # type: ignore[no-untyped-def]
    try:
        return bool(collection_model.objects.filter(slug="bench").exists())
    except Exception:
        return False


def measure(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model

    from annotations import services
    from annotations.models import (
        Collection,
        Document,
        ImpactSnapshot,
        Judgement,
        Pool,
        PoolEntry,
        Query,
    )
    from annotations.selectors import impact_held
    from annotations.selectors.impact import impact_inputs
    from annotations.selectors.impact_held import impact_inputs_forget, impact_inputs_held
    from annotations.services.impact import impacts_refresh_task

    collection = Collection.objects.get(slug="bench")
    pool = Pool.objects.filter(collection=collection, name="impact-bench").first()
    if pool is None:
        started = time.perf_counter()
        pool, added = services.pool_build(
            collection=collection, name="impact-bench", depth=args.pool_depth,
            order=Pool.IMPACT, budget=args.budget,
        )  # fmt: skip
        base.log(f"pool of {added} pairs built in {time.perf_counter() - started:.1f} s")
    ks = sorted(set(collection.sorted_cutoffs) | {pool.depth})
    user, _ = get_user_model().objects.get_or_create(username="impact-bench")
    pairs = list(PoolEntry.objects.filter(pool=pool).values_list("query", "document"))
    rng = random.Random(args.seed)
    impact_inputs_forget()
    ImpactSnapshot.objects.filter(collection=collection).update(stamp="")
    started = time.perf_counter()
    impacts_refresh_task(collection_id=collection.id)  # fills the kept inputs
    base.log(f"first refresh {time.perf_counter() - started:.1f} s")
    kept_times: list[float] = []
    scratch_times: list[float] = []
    inputs_kept: dict[int, list[float]] = {k: [] for k in ks}
    inputs_scratch: dict[int, list[float]] = {k: [] for k in ks}
    mismatches = 0

    def change() -> None:
        """A person's grade of a random pair of the pool, other than the one it has."""
        query_id, document_id = rng.choice(pairs)
        had = Judgement.objects.filter(query_id=query_id, document_id=document_id, assessor=user)
        before = had.values_list("grade", flat=True).first()
        grade = rng.choice([g for g in (0, 1, 2, 3) if g != before])
        services.judgement_record(
            query=Query.objects.get(id=query_id), document=Document.objects.get(id=document_id),
            assessor=user, grade=grade, source="api",
        )  # fmt: skip
        collection.refresh_from_db()

    for step in range(args.changes):
        change()
        started = time.perf_counter()
        refreshed = impacts_refresh_task(collection_id=collection.id)
        kept_times.append(time.perf_counter() - started)
        if refreshed != len(ks):
            sys.exit(f"the change moved impact at {refreshed} of {len(ks)} cutoffs")
        kept = stored_digest(collection)
        impact_inputs_forget()
        ImpactSnapshot.objects.filter(collection=collection).update(stamp="")
        started = time.perf_counter()
        impacts_refresh_task(collection_id=collection.id)
        scratch_times.append(time.perf_counter() - started)
        same = stored_digest(collection) == kept
        mismatches += not same
        base.log(
            f"change {step + 1}: kept {kept_times[-1]:.2f} s, scratch {scratch_times[-1]:.2f} s"
            f"{'' if same else ', RESULTS DIFFER'}"
        )
    # The inputs alone, per k: one more change, then the kept read and a fresh one.
    for _ in range(max(3, args.changes // 4)):
        change()
        for k in ks:
            started = time.perf_counter()
            impact_inputs_held(collection=collection, k=k)
            inputs_kept[k].append(time.perf_counter() - started)
            started = time.perf_counter()
            impact_inputs(collection=collection, k=k)
            inputs_scratch[k].append(time.perf_counter() - started)
    held = {f"{key[1]}": entry.nbytes for key, entry in impact_held._held.items()}
    report = {
        "runs": collection.runs.count(),
        "queries": collection.queries.count(),
        "pool_depth": pool.depth,
        "pool_entries": len(pairs),
        "ks": ks,
        "changes": args.changes,
        "refresh_kept": base.percentiles(kept_times),
        "refresh_scratch": base.percentiles(scratch_times),
        "inputs_kept": {k: base.percentiles(v) for k, v in inputs_kept.items()},
        "inputs_scratch": {k: base.percentiles(v) for k, v in inputs_scratch.items()},
        "held_megabytes": {k: round(v / 1e6, 1) for k, v in held.items()},
        "mismatches": mismatches,
        "commit": base.code_version(),
        "nproc": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(json.dumps(report, indent=2, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    rows = [("impacts_refresh_task", report["refresh_kept"], report["refresh_scratch"])]
    rows += [
        (f"inputs at k={k}", report["inputs_kept"][k], report["inputs_scratch"][k]) for k in ks
    ]
    print("\n| step | kept p50 | kept p95 | scratch p50 | scratch p95 | scratch / kept (p50) |")
    print("|---|---|---|---|---|---|")
    for label, kept_stats, scratch_stats in rows:
        print(
            f"| {label} | {kept_stats['p50']:.3f} s | {kept_stats['p95']:.3f} s "
            f"| {scratch_stats['p50']:.3f} s | {scratch_stats['p95']:.3f} s "
            f"| {scratch_stats['p50'] / kept_stats['p50']:.1f}x |"
        )
    print(f"\nresults equal after every change: {'yes' if not mismatches else 'NO'}")
    if mismatches:
        sys.exit(1)


if __name__ == "__main__":
    main()
