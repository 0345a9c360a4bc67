"""Write a run as a TREC run file to stdout."""

from typing import Any

from django.core.management.base import CommandError

from annotations import services
from annotations.management.commands._base import PrintingCommand, collection_get
from annotations.management.commands._progress import (
    CountingSink,
    progress_bars,
    quiet_option,
    wants_progress,
)
from annotations.models import Run


class Command(PrintingCommand):
    help = "Export a run (qid Q0 docno rank score tag) to stdout"

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("name", help="the run's name")
        quiet_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        try:
            run = Run.objects.get(collection=collection, name=options["name"])
        except Run.DoesNotExist:
            raise CommandError(f"no run {options['name']!r} in {collection.slug}") from None
        with progress_bars(wants_progress(options)) as bars:
            out = CountingSink(self.stdout, bars, f"{run.name}: lines written", None)
            services.run_export(run=run, out=out)
