"""Import TREC qrels as one assessor's judgements."""

from typing import Any

from django.db import transaction

from annotations import services
from annotations.management.commands._base import FileImportCommand
from annotations.models import Collection, ImportJob
from annotations.services import ImportSummary
from annotations.services.imports import Source


class Command(FileImportCommand):
    help = "Import TREC qrels (qid iter docno grade); re-importing updates, with history"
    label = "judgements"
    kind = ImportJob.QRELS

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--assessor",
            default=None,
            help="username the judgements belong to, an organiser or assessor of the collection "
            "already (add them with the members page or API first); default: the "
            f"'{services.IMPORT_ASSESSOR}' import account, created without a password",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # One transaction: a failed import must not leave the default import account behind.
        with transaction.atomic():
            self.assessor_name: str | None = options["assessor"]
            super().handle(*args, **options)

    def import_file(self, collection: Collection, source: Source) -> ImportSummary:
        assessor = services.qrels_assessor(collection=collection, username=self.assessor_name)
        return services.judgements_import(collection=collection, source=source, assessor=assessor)
