"""Write a collection's judgements (effective grades) as TREC qrels to stdout."""

from typing import Any

from annotations import services
from annotations.management.commands._base import PrintingCommand, collection_get


class Command(PrintingCommand):
    help = "Export qrels (qid 0 docno grade), one line per judged pair, to stdout"

    def handle(self, *args: Any, **options: Any) -> None:
        services.qrels_export(collection=collection_get(options["slug"]), out=self.stdout)
