"""Recompute a collection's stored scores, heal pending ones, or verify them."""

from typing import Any

from django.core.management.base import CommandError

from annotations import scores
from annotations.management.commands._base import CollectionCommand, collection_get


class Command(CollectionCommand):
    help = "Recompute every score from scratch; --stale only pending ones; --verify compares"

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            "--verify",
            action="store_true",
            help="recompute in memory, compare with what is stored, change nothing; exit 1 on "
            "any difference",
        )
        mode.add_argument(
            "--stale", action="store_true", help="recompute only queries and runs still pending"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        if options["verify"]:
            differences = scores.scores_verify(collection=collection)
            for line in differences:
                self.stdout.write(line)
            if differences:
                raise CommandError(f"{len(differences)} stored scores differ from a recomputation")
            self.stdout.write(f"{collection.slug}: every stored score equals a recomputation")
            return
        if options["stale"]:
            count = scores.scores_sweep_stale(collection=collection)
            self.stdout.write(f"{collection.slug}: recomputed {count} pending queries or runs")
            return
        scores.scores_rescore_collection(collection_id=collection.id)
        self.stdout.write(f"{collection.slug}: every score recomputed")
