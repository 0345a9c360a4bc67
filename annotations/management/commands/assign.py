"""Assign a judging pool's pairs to assessors, each pair to OVERLAP of them."""

from typing import Any

from django.core.management.base import CommandError

from annotations import services
from annotations.management.commands._base import (
    CollectionCommand,
    collection_get,
    run_reporting_errors,
)
from annotations.management.commands.build_pool import names, queries_named
from annotations.models import Pool


class Command(CollectionCommand):
    help = (
        "Assign the pairs of POOL still short of --overlap assessors, each an organiser or "
        "assessor of the collection already (add them with the members page or API first); "
        "run it again after extending the pool to assign the new pairs"
    )

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("pool", help="the pool's name")
        parser.add_argument(
            "--assessors",
            required=True,
            help="usernames of the collection's organisers and assessors, comma-separated",
        )
        parser.add_argument("--overlap", type=int, default=None, help="assessors per pair")
        parser.add_argument("--queries", default=None, help="qids, comma-separated")
        parser.add_argument("--pairs", type=int, default=None, help="new pairs per assessor")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        pool = Pool.objects.filter(collection=collection, name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r} in {collection.slug}")
        assessors = run_reporting_errors(
            lambda: services.grading_members_named(
                collection=collection, usernames=names(options["assessors"]), field="assessors"
            )
        )
        result = run_reporting_errors(
            lambda: services.assignment_create(
                pool=pool,
                assessors=assessors,
                overlap=options["overlap"],
                queries=queries_named(collection, options["queries"]),
                pairs=options["pairs"],
            )
        )
        for assignment, added in result:
            total = assignment.items.count()
            name = assignment.assessor.get_username()
            self.stdout.write(f"{name}: +{added} pairs ({total} in all)")
