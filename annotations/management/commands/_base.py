"""Shared pieces of the import and export commands: collection lookup and error reporting."""

from __future__ import annotations

import os
import re
import sys
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction

from annotations.formats.trec import TrecFormatError
from annotations.management.commands._progress import (
    counted,
    progress_bars,
    quiet_option,
    wants_progress,
)
from annotations.models import Collection
from annotations.services.imports import Source, import_told

T = TypeVar("T")


def collection_get(slug: str) -> Collection:
    try:
        return Collection.objects.get(slug=slug)
    except Collection.DoesNotExist:
        known = ", ".join(Collection.objects.values_list("slug", flat=True)[:20]) or "none yet"
        raise CommandError(f"unknown collection {slug!r} (known: {known})") from None


def validation_message(error: ValidationError) -> str:
    if hasattr(error, "error_dict"):
        return "; ".join(
            f"{field}: {' '.join(m for e in errors for m in e.messages)}"
            for field, errors in error.error_dict.items()
        )
    return " ".join(error.messages)


def run_reporting_errors(action: Callable[[], T]) -> T:
    """Run a service call; turn the errors it may raise into one clear CommandError line."""
    try:
        return action()
    except TrecFormatError as error:
        raise CommandError(f"{error} (nothing was imported)") from None
    except ValidationError as error:
        raise CommandError(f"{validation_message(error)} (nothing was changed)") from None
    except IntegrityError as error:
        raise CommandError(
            f"the database refused the change ({error}); nothing was changed"
        ) from None
    except OSError as error:  # a missing or unreadable file
        raise CommandError(f"{error.filename}: {error.strerror} (nothing was imported)") from None


STDIN = "-"


def file_source(path: str) -> str | BinaryIO:
    """A file argument as the import services read it: `-` is standard input (its bytes,
    named `<stdin>` in messages), anything else a path."""
    return sys.stdin.buffer if path == STDIN else path


def negative_values_accepted(parser: ArgumentParser) -> ArgumentParser:
    """Let an option take a value that starts with a minus sign and a digit, as Python 3.13's
    argparse does: `--grades -2,-1,0` and `--grades -2..3`, not only `--grades=-2..3`.

    Before 3.13 argparse reads such a value as an unknown option unless it is one plain
    negative number. The parser's commands define no option that looks like a number.
    """
    parser._negative_number_matcher = re.compile(r"-\.?\d")  # type: ignore[attr-defined]
    return parser


class CollectionCommand(BaseCommand):
    """A command whose first argument is a collection slug."""

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("slug", help="the collection's slug")


# The exit status of a process the closing of its output pipe ends (128 + SIGPIPE), as
# trec_eval's and every other Unix tool's in `... | head`.
CLOSED_PIPE_STATUS = 141


class PrintingCommand(CollectionCommand):
    """A command whose output is data on stdout: a reader that stops early (`| head -1`)
    ends it quietly, with no traceback, as it ends trec_eval."""

    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            result = super().execute(*args, **options)
            self.stdout.flush()  # what is still buffered fails here, not at interpreter exit
        except BrokenPipeError:
            _stdout_discarded()
        else:
            return result
        # Outside the except block, so the error and the frames it holds are gone: a half-read
        # database cursor is closed now, not at interpreter exit after its connection.
        raise SystemExit(CLOSED_PIPE_STATUS)


def _stdout_discarded() -> None:
    """Point stdout at /dev/null, so that Python's final flush finds no closed pipe."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a captured stream)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


class FileImportCommand(CollectionCommand):
    """`SLUG FILE` commands that hand the file to one import service and print its summary."""

    label = "rows"
    kind = ""  # the import's kind in its `import.finished` event

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("file", help="the file to import; - reads standard input")
        quiet_option(parser)

    def import_file(self, collection: Collection, source: Source) -> Any:
        raise NotImplementedError

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            collection = collection_get(options["slug"])
        except CommandError as error:
            raise CommandError(f"{options['file']}: {error}; nothing was imported") from None
        with (
            progress_bars(wants_progress(options)) as bars,
            counted(file_source(options["file"]), bars, f"{self.label}: lines read") as source,
        ):
            summary = run_reporting_errors(lambda: self._import_told(collection, source, options))
        self.stdout.write(f"{self.label}: {summary}")

    def _import_told(self, collection: Collection, source: Source, options: Any) -> Any:
        with transaction.atomic():
            summary = self.import_file(collection, source)
            import_told(
                collection=collection, kind=self.kind, file_name=options["file"], summary=summary
            )
        return summary
