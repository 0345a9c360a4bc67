"""Load a standard collection through ir_datasets: queries, documents, qrels, a run."""

from __future__ import annotations

from typing import Any

from annotations.formats import ir_records
from annotations.management.commands._base import (
    CollectionCommand,
    collection_get,
    run_reporting_errors,
)
from annotations.management.commands._progress import progress_bars, quiet_option, wants_progress
from annotations.services.judgements import qrels_assessor
from annotations.services.standard_collections import ir_dataset_import


class Command(CollectionCommand):
    help = (
        "Import a dataset ir_datasets knows (e.g. msmarco-passage/trec-dl-2019/judged): its "
        "queries with their fields, documents, qrels (as one assessor's judgements) and "
        "scored documents (as a run), streamed through the same imports as files, all or "
        "nothing (the import page and the API run the same import as a job). ir_datasets "
        "downloads what it does not have in IR_DATASETS_HOME."
    )

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("dataset", help="the ir_datasets id, e.g. vaswani or antique/test")
        parser.add_argument(
            "--parts",
            default="",
            help=f"comma-separated parts to import, of {','.join(ir_records.PARTS)} "
            "(default: every part the dataset has)",
        )
        parser.add_argument(
            "--assessor",
            default=None,
            help="username the qrels belong to, an organiser or assessor of the collection "
            "already (default: the import account)",
        )
        parser.add_argument(
            "--run-name", default=None, help="name of the run of scored documents (default: id)"
        )
        quiet_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        parts = [part.strip() for part in options["parts"].split(",") if part.strip()]
        assessor = None
        if options["assessor"]:
            assessor = run_reporting_errors(
                lambda: qrels_assessor(collection=collection, username=options["assessor"])
            )
        with progress_bars(wants_progress(options)) as bars:

            def report(progress: ir_records.Progress) -> None:
                bars.update(progress.part, progress.lines, progress.total)

            done = run_reporting_errors(
                lambda: ir_dataset_import(
                    collection=collection,
                    dataset_id=options["dataset"],
                    parts=parts,
                    assessor=assessor,
                    run_name=options["run_name"],
                    progress=report,
                )
            )
        self.stdout.write(str(done))
