"""Create a collection with its grade scale, gain and cutoffs."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from annotations import services
from annotations.management.commands._base import (
    negative_values_accepted,
    run_reporting_errors,
)
from annotations.metrics.machine_grades import DEFAULT_RULE, MACHINE_RULES
from annotations.models import Collection


class Command(BaseCommand):
    help = "Create a collection: python manage.py create_collection SLUG [--name ...]"

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> Any:
        return negative_values_accepted(super().create_parser(prog_name, subcommand, **kwargs))

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("slug", help="the new collection's slug: letters, digits, - and _")
        parser.add_argument("--name", default="", help="display name (default: the slug)")
        parser.add_argument("--description", default="", help="a sentence shown on its pages")
        parser.add_argument(
            "--gain",
            choices=["linear", "exponential"],
            default="linear",
            help="gain of grade g: g (linear, trec_eval's) or 2^g - 1 (exponential)",
        )
        parser.add_argument("--cutoffs", default="5,10,20", help="comma-separated k values")
        parser.add_argument(
            "--measures",
            default="",
            help="measures kept beside nDCG@k, separated by spaces: ir_measures names "
            "(AP P@10 'AP(rel=2)@100' RR) or trec_eval's (map P_10)",
        )
        parser.add_argument(
            "--grades", default="0-3", help="grade scale: 0-3, -2..3 or -2,-1,0,1,2,3"
        )
        parser.add_argument(
            "--missing",
            choices=["zero", "skip"],
            default="zero",
            help="a judged query a run did not answer counts 0 (zero, trec_eval -c) or is skipped",
        )
        parser.add_argument(
            "--aggregation",
            choices=["median", "majority", "mean"],
            default="median",
            help="how several assessors' grades of a pair make its effective grade",
        )
        parser.add_argument(
            "--machine-grades",
            choices=list(MACHINE_RULES),
            default=DEFAULT_RULE,
            help="machine judges' grades count as one assessor, fill the pairs no person "
            "judged, or not at all (people, the default)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        if Collection.objects.filter(slug=slug).exists():
            raise CommandError(f"collection {slug!r} already exists")
        try:
            cutoffs = [int(part) for part in options["cutoffs"].split(",") if part.strip()]
        except ValueError:
            raise CommandError(
                f"--cutoffs {options['cutoffs']!r}: write integers like 5,10,20"
            ) from None
        grades = run_reporting_errors(lambda: services.grade_levels_from_spec(options["grades"]))
        collection = run_reporting_errors(
            lambda: services.collection_create(
                slug=slug,
                name=options["name"],
                description=options["description"],
                gain=options["gain"],
                cutoffs=cutoffs,
                grades=grades,
                missing_queries=options["missing"],
                aggregation=options["aggregation"],
                machine_grades=options["machine_grades"],
                measures=options["measures"].split(),
            )
        )
        levels = ", ".join(str(value) for value, _, _ in grades)
        self.stdout.write(
            f"created collection {collection.slug}: gain {collection.gain}, "
            f"cutoffs {collection.sorted_cutoffs}, grades {levels}"
            + (f", measures {' '.join(collection.measures)}" if collection.measures else "")
        )
