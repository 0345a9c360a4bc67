"""Write a collection's judgements (effective grades) as TREC qrels to stdout."""

from typing import Any

from annotations import services
from annotations.management.commands._base import PrintingCommand, collection_get
from annotations.management.commands._progress import (
    CountingSink,
    progress_bars,
    quiet_option,
    wants_progress,
)


class Command(PrintingCommand):
    help = "Export qrels (qid 0 docno grade), one line per judged pair, to stdout"

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        quiet_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        with progress_bars(wants_progress(options)) as bars:
            out = CountingSink(self.stdout, bars, "qrels: lines written", None)
            services.qrels_export(collection=collection, out=out)
