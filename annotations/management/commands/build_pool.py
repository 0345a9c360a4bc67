"""Build a judging pool by depth-k pooling of a collection's runs, or extend an existing one."""

from typing import Any

from django.core.management.base import CommandError

from annotations import services
from annotations.management.commands._base import (
    CollectionCommand,
    collection_get,
    run_reporting_errors,
)
from annotations.models import Collection, Pool, Query, Run
from annotations.services.stale import pool_of_stale_build


def names(raw: str | None) -> list[str]:
    return [part.strip() for part in (raw or "").split(",") if part.strip()]


def runs_named(collection: Collection, raw: str | None) -> list[Run] | None:
    wanted = names(raw)
    if not wanted:
        return None
    found = {run.name: run for run in Run.objects.filter(collection=collection, name__in=wanted)}
    missing = [name for name in wanted if name not in found]
    if missing:
        raise CommandError(f"unknown runs in {collection.slug}: {', '.join(missing)}")
    return [found[name] for name in wanted]


def queries_named(collection: Collection, raw: str | None) -> list[Query]:
    wanted = names(raw)
    found = {q.qid: q for q in Query.objects.filter(collection=collection, qid__in=wanted)}
    missing = [qid for qid in wanted if qid not in found]
    if missing:
        raise CommandError(f"unknown queries in {collection.slug}: {', '.join(missing)}")
    return [found[qid] for qid in wanted]


class Command(CollectionCommand):
    help = (
        "Pool the top DEPTH documents of every run (or --runs) per query (or --queries) into "
        "a judging pool; an existing pool of that --name is extended instead"
    )

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--name", default="main", help="pool name (default: main)")
        parser.add_argument("--depth", type=int, default=10, help="k per run (default: 10)")
        parser.add_argument("--runs", default=None, help="run names, comma-separated")
        parser.add_argument("--queries", default=None, help="qids, comma-separated")
        parser.add_argument(
            "--include-judged", action="store_true", help="also queue pairs already judged"
        )
        parser.add_argument(
            "--by-impact",
            action="store_true",
            help="keep only the --budget pairs of highest impact at k = --depth",
        )
        parser.add_argument("--budget", type=int, default=None, help="pairs, with --by-impact")
        parser.add_argument(
            "--per-query",
            type=int,
            default=None,
            help="with --by-impact: most pairs of one query (default: twice the even share)",
        )
        parser.add_argument(
            "--stale",
            action="store_true",
            help="instead: the pairs with a stale judgement (their document changed)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        if options["budget"] is not None and not options["by_impact"]:
            raise CommandError("--budget goes with --by-impact")
        if options["by_impact"] and (options["budget"] is None or options["budget"] < 1):
            raise CommandError("--by-impact needs --budget N (N >= 1)")
        if options["stale"]:
            stale_pool, added = run_reporting_errors(
                lambda: pool_of_stale_build(collection=collection, name=options["name"])
            )
            self.stdout.write(f"pool {stale_pool.name}: {added} stale pairs added")
            return
        runs = runs_named(collection, options["runs"])
        queries = queries_named(collection, options["queries"])
        pool = Pool.objects.filter(collection=collection, name=options["name"]).first()
        if pool is None:
            pool, added = run_reporting_errors(
                lambda: services.pool_build(
                    collection=collection,
                    name=options["name"],
                    depth=options["depth"],
                    runs=runs,
                    queries=queries,
                    include_judged=options["include_judged"],
                    order=Pool.IMPACT if options["by_impact"] else Pool.DEPTH,
                    budget=options["budget"],
                    per_query=options["per_query"],
                )
            )
            order = f" by impact at k={pool.depth}" if pool.order == Pool.IMPACT else ""
            self.stdout.write(f"pool {pool.name}: built{order}, {added} pairs")
            return
        extended = pool
        added = run_reporting_errors(
            lambda: services.pool_extend(
                pool=extended,
                depth=options["depth"],
                runs=runs,
                queries=queries or None,
                include_judged=options["include_judged"],
            )
        )
        self.stdout.write(f"pool {pool.name}: extended, {added} new pairs")
