"""Import a TREC run file."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotations import services
from annotations.management.commands._base import FileImportCommand
from annotations.models import Collection


class Command(FileImportCommand):
    help = "Import a TREC run (qid Q0 docno rank score tag); the name defaults to the tag"
    label = "run"

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--name", default=None, help="run name (default: the file's tag)")
        parser.add_argument("--description", default="")
        parser.add_argument("--owner", default=None, help="username of the system owner")
        parser.add_argument(
            "--replace", action="store_true", help="replace an existing run of that name"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.options = options
        super().handle(*args, **options)

    def import_file(self, collection: Collection, path: str) -> str:
        owner = None
        if self.options["owner"]:
            owner = get_user_model().objects.filter(username=self.options["owner"]).first()
            if owner is None:
                raise CommandError(f"--owner: no user named {self.options['owner']!r}")
        run, count = services.run_import(
            collection=collection,
            source=path,
            run_name=self.options["name"],
            owner=owner,
            description=self.options["description"],
            replace=self.options["replace"],
        )
        return f"{run.name}, {count} results"
