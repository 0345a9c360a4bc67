#!/usr/bin/env python3
"""Webhooks in production mode: what a subscription costs the judgement's request, and how
soon a receiver learns of the judgement and of the query's new scores.

A script, not a test. It starts the platform as bench_production.py does (gunicorn with
``ndcg_platform/gunicorn.conf.py``, the scores worker, the derived worker that also sends
webhooks, and beat, on PostgreSQL and a Redis database of its own), with a receiver (a
Python HTTP server on 127.0.0.1, answering 204 and verifying every signature) subscribed
to the collection. One assessor judges through the API every ``--interval`` seconds, in
blocks of ``--block`` judgements that alternate between the subscription switched off (the
reference: the judgement path as it is without webhooks) and on. It prints, in one run:

* POST judgement answered, p50/p95, off and on, and their ratio;
* with the subscription on: POST answered -> the receiver holds that judgement's
  `judgement.created`/`judgement.changed`, and -> its query's `scores.updated`, p50/p95;
* deliveries lost or duplicated (each judgement must arrive exactly once, by webhook-id).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import bench_production as production  # noqa: E402  (processes, loading, the HTTP client)

from tests.webhook_receiver import Receiver, receiving  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/ndcg_webhooks_bench"
log = production.log


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="small", choices=["moderate", "robust04", "small"])
    parser.add_argument("--workdir", default=str(REPO / "benchmarks" / "data"))
    parser.add_argument("--database-url", default=DEFAULT_URL, help="recreated unless --skip-load")
    parser.add_argument("--skip-load", action="store_true", help="reuse the loaded database")
    parser.add_argument("--judgements", type=int, default=80, help="in all, half of them on")
    parser.add_argument("--block", type=int, default=10, help="judgements per off/on block")
    parser.add_argument("--interval", type=float, default=0.5, help="s between judgements")
    parser.add_argument("--web-concurrency", type=int, default=2)
    parser.add_argument("--redis-db", type=int, default=10, help="broker; the next one: cache")
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    # The services (and this process, which subscribes) may reach the receiver on 127.0.0.1.
    os.environ["NDCG_WEBHOOK_ALLOW_PRIVATE"] = "true"
    if not args.skip_load:
        log(f"load: preset {args.preset} into {args.database_url}")
        production.load(args)
    directory = production.ensure_data(args)
    production.django_setup(args)
    ctx = production.prepare(0)
    from annotations.models import WebhookSubscription
    from annotations.services.webhooks import subscription_create

    pairs = production.candidate_pairs(directory, args.seed)[: args.judgements]
    judge = production.Judge(ctx, pairs, args.seed)
    qids = {query.id: qid for qid, query in judge.queries.items()}
    WebhookSubscription.objects.filter(collection=ctx["collection"]).delete()
    port = production.free_port()
    production.flush_redis(args)
    logs = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    services = production.Services(args, port, logs)
    figures: dict[str, list[float]] = {"off": [], "on": [], "judgement": [], "scores": []}
    lost = duplicated = 0
    with receiving(Receiver()) as receiver:
        subscription = subscription_create(
            collection=ctx["collection"],
            url=receiver.url,
            events=["judgement.created", "judgement.changed", "scores.updated"],
            created_by=None,
        )
        log(f"services: gunicorn on :{port}, logs in {logs}")
        services.start()
        try:
            sent: list[tuple[str, str, float]] = []  # (qid, docno, answered at) while on
            for index, pair in enumerate(pairs):
                on = (index // args.block) % 2 == 1
                if index % args.block == 0:
                    WebhookSubscription.objects.filter(id=subscription.id).update(active=on)
                query_id, seconds, _ = judge.post(port, pair)
                answered = time.monotonic()
                figures["on" if on else "off"].append(seconds)
                if on:
                    sent.append((qids[query_id], pair[1], answered))
                time.sleep(args.interval)
            arrivals = _arrivals(receiver, sent, wait=30.0)
        finally:
            services.stop()
        receiver.verified(subscription.secret)  # raises on a bad signature
    for qid, docno, answered in sent:
        found = arrivals.get((qid, docno), [])
        if not found:
            lost += 1
            continue
        duplicated += len(found) - 1
        figures["judgement"].append(found[0] - answered)
        scored = arrivals.get(("scores", qid), [])
        later = [at - answered for at in scored if at >= answered]
        if later:
            figures["scores"].append(min(later))
    print(_report(args, figures, lost, duplicated))


def _arrivals(
    receiver: Receiver, sent: list[tuple[str, str, float]], wait: float
) -> dict[tuple[str, str], list[float]]:
    """(qid, docno) -> arrival times of its judgement events; ("scores", qid) -> of its
    scores events; waiting up to `wait` s for every sent judgement to arrive."""
    deadline = time.monotonic() + wait
    wanted = {(qid, docno) for qid, docno, _ in sent}
    while True:
        with receiver.lock:
            items = list(receiver.received)
        seen = {
            (item.event["data"]["qid"], item.event["data"]["docno"])
            for item in items
            if item.event["type"].startswith("judgement.")
        }
        if wanted <= seen or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    arrivals: dict[tuple[str, str], list[float]] = {}
    for item in items:
        event = item.event
        key = (
            (event["data"]["qid"], event["data"]["docno"])
            if event["type"].startswith("judgement.")
            else ("scores", event["data"]["qid"])
        )
        arrivals.setdefault(key, []).append(item.arrived)
    return arrivals


def _report(
    args: argparse.Namespace, figures: dict[str, list[float]], lost: int, duplicated: int
) -> str:
    def ms(values: list[float], q: float) -> str:
        return f"{production.pct(values, q / 100) * 1000:.1f} ms" if values else "n/a"

    off, on = figures["off"], figures["on"]
    ratio = production.pct(on, 0.95) / production.pct(off, 0.95) if off and on else float("nan")
    rows = [
        f"Webhooks in production mode, preset {args.preset}, {len(off) + len(on)} judgements "
        f"every {args.interval} s in blocks of {args.block} (subscription off / on)",
        "",
        "| figure | p50 | p95 |",
        "|---|---|---|",
        f"| POST judgement, no subscription (reference) | {ms(off, 50)} | {ms(off, 95)} |",
        f"| POST judgement, one subscription | {ms(on, 50)} | {ms(on, 95)} |",
        f"| answered -> receiver has the judgement event | {ms(figures['judgement'], 50)} "
        f"| {ms(figures['judgement'], 95)} |",
        f"| answered -> receiver has the query's scores.updated | {ms(figures['scores'], 50)} "
        f"| {ms(figures['scores'], 95)} |",
        "",
        f"POST p95 with / without a subscription: {ratio:.2f}x; judgement events lost: {lost}, "
        f"delivered more than once: {duplicated}.",
    ]
    return "\n".join(rows) + "\n" + json.dumps({k: len(v) for k, v in figures.items()})


if __name__ == "__main__":
    main()
