"""Import documents from a JSONL or TSV file."""

from annotations import services
from annotations.management.commands._base import FileImportCommand
from annotations.models import Collection, ImportJob
from annotations.services import ImportSummary
from annotations.services.imports import Source


class Command(FileImportCommand):
    help = 'Import documents (JSONL {"docno", "title", "text", "url"} or TSV) into a collection'
    label = "documents"
    kind = ImportJob.DOCUMENTS

    def import_file(self, collection: Collection, source: Source) -> ImportSummary:
        return services.documents_import(collection=collection, source=source)
