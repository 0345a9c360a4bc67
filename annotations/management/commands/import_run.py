"""Import TREC run files: one, or a whole track's in one all-or-nothing transaction."""

from contextlib import ExitStack
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from annotations import services
from annotations.management.commands._base import (
    STDIN,
    CollectionCommand,
    collection_get,
    file_source,
    run_reporting_errors,
)
from annotations.management.commands._progress import (
    counted,
    progress_bars,
    quiet_option,
    wants_progress,
)
from annotations.models import ImportJob


class Command(CollectionCommand):
    help = (
        "Import TREC runs (qid Q0 docno rank score tag), each named by its tag; several files "
        "are imported together, all or nothing; --split-tags makes one run per tag"
    )

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "files", nargs="+", metavar="file", help="TREC run files; - reads standard input"
        )
        parser.add_argument("--name", default=None, help="run name (one file only; default: tag)")
        parser.add_argument("--description", default="", help="a sentence shown with the run")
        parser.add_argument("--owner", default=None, help="username of the system owner")
        parser.add_argument(
            "--replace", action="store_true", help="replace existing runs of those names"
        )
        parser.add_argument(
            "--split-tags",
            action="store_true",
            help="a file holding several tags becomes one run per tag, each named by its tag",
        )
        quiet_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        files: list[str] = options["files"]
        if files.count(STDIN) > 1:
            raise CommandError("- (standard input) can be given once")
        if options["name"] and len(files) > 1:
            raise CommandError("--name names one run: give one file, or let the tags name them")
        if options["name"] and options["split_tags"]:
            raise CommandError("--name and --split-tags: with --split-tags each tag names its run")
        try:
            collection = collection_get(options["slug"])
        except CommandError as error:
            raise CommandError(f"{files[0]}: {error}; nothing was imported") from None
        owner = None
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"--owner: no user named {options['owner']!r}")

        with progress_bars(wants_progress(options)) as bars, ExitStack() as opened:
            sources = [
                opened.enter_context(counted(file_source(path), bars, f"{path}: lines read"))
                for path in files
            ]

            def run_files_import() -> list[services.RunImported]:
                with transaction.atomic():
                    imported = services.run_files_import(
                        collection=collection,
                        sources=sources,
                        run_name=options["name"],
                        split_tags=options["split_tags"],
                        owner=owner,
                        description=options["description"],
                        replace=options["replace"],
                    )
                    services.import_told(
                        collection=collection,
                        kind=ImportJob.RUN,
                        file_name=", ".join(files),
                        summary="; ".join(str(run) for run in imported),
                    )
                return imported

            imported = run_reporting_errors(run_files_import)
        for run in imported:
            self.stdout.write(str(run))
