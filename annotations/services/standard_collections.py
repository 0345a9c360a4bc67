"""Standard collections loaded through ir_datasets: its queries, documents, qrels and scored
documents (as a run), through the same import services as the platform's own files."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.formats import ir_records
from annotations.models import Collection, ImportJob
from annotations.services.imports import documents_import, import_told, topics_import
from annotations.services.judgements import import_assessor, judgements_import
from annotations.services.runs import run_import

# Each part's kind in its `import.finished` event.
PART_KINDS = {
    "queries": ImportJob.TOPICS,
    "docs": ImportJob.DOCUMENTS,
    "qrels": ImportJob.QRELS,
    "scoreddocs": ImportJob.RUN,
}


@dataclass
class StandardImport:
    """What one import of a dataset did, part by part (`part: summary` lines)."""

    dataset: str
    parts: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return "\n".join(f"{part}: {summary}" for part, summary in self.parts.items())


def ir_dataset_import(
    *,
    collection: Collection,
    dataset_id: str,
    parts: Sequence[str] | None = None,
    assessor: User | None = None,
    run_name: str | None = None,
    progress: Callable[[ir_records.Progress], None] | None = None,
) -> StandardImport:
    """Import the dataset's `parts` (default: every part it has, in the order queries,
    docs, qrels, scoreddocs) in one transaction: all or nothing. Qrels become `assessor`'s
    judgements (default: the import account); scored documents one run named `run_name`
    (default: the dataset id). `progress` hears each part's records as they are read."""
    try:
        dataset = ir_records.dataset_load(dataset_id)
    except (ir_records.UnknownDataset, ir_records.DatasetUnavailable) as error:
        raise ValidationError({"dataset": str(error)}) from None
    offered = ir_records.dataset_parts(dataset)
    wanted = list(parts) if parts else offered
    missing = [part for part in wanted if part not in offered]
    if missing:
        raise ValidationError(
            {"parts": f"{dataset_id} has no {', '.join(missing)} (it has {', '.join(offered)})"}
        )
    result = StandardImport(dataset_id)
    tag = run_name or dataset_id
    try:
        with transaction.atomic():
            for part in [part for part in ir_records.PARTS if part in wanted]:
                counter = ir_records.Progress(
                    part, ir_records.part_count(dataset, part), 0, progress
                )
                stream = ir_records.part_stream(
                    dataset, dataset_id, part, tag=tag, progress=counter
                )
                if part == "queries":
                    summary = str(topics_import(collection=collection, source=stream))
                elif part == "docs":
                    summary = str(documents_import(collection=collection, source=stream))
                elif part == "qrels":
                    owner = assessor or import_assessor()
                    summary = str(
                        judgements_import(collection=collection, source=stream, assessor=owner)
                    )
                else:
                    run, results = run_import(collection=collection, source=stream, run_name=tag)
                    summary = f"run {run.name!r}, {results} results"
                if progress is not None:
                    progress(counter)
                result.parts[part] = summary
                import_told(
                    collection=collection,
                    kind=PART_KINDS[part],
                    file_name=f"{dataset_id} ({part})",
                    summary=summary,
                )
    except ir_records.DatasetUnavailable as error:  # nothing was imported
        raise ValidationError({"dataset": str(error)}) from None
    return result
