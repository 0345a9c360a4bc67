"""Import queries from a TSV, JSONL or TREC topic file."""

from annotations import services
from annotations.management.commands._base import FileImportCommand
from annotations.models import Collection, ImportJob
from annotations.services import ImportSummary
from annotations.services.imports import Source


class Command(FileImportCommand):
    help = "Import topics (TSV qid<TAB>title, JSONL, or TREC <top> files) into a collection"
    label = "queries"
    kind = ImportJob.TOPICS

    def import_file(self, collection: Collection, source: Source) -> ImportSummary:
        return services.topics_import(collection=collection, source=source)
