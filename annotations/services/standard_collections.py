"""Standard collections loaded through ir_datasets: its queries, documents, qrels and scored
documents (as a run), through the same import services as the platform's own files, from
the command (in its process) or as an import job (the import page and the API)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.formats import ir_records
from annotations.models import Collection, ImportJob
from annotations.services.imports import documents_import, import_told, topics_import
from annotations.services.job_queue import import_jobs_start
from annotations.services.judgements import (
    import_assessor,
    judgements_import,
    qrels_assessor_check,
)
from annotations.services.runs import run_import

if TYPE_CHECKING:
    from django.contrib.auth.models import User

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
        return "\n".join(self.lines())

    def lines(self) -> list[str]:
        return [f"{part}: {summary}" for part, summary in self.parts.items()]


def _dataset(dataset_id: str) -> object:
    try:
        return ir_records.dataset_load(dataset_id)
    except (ir_records.UnknownDataset, ir_records.DatasetUnavailable) as error:
        raise ValidationError({"dataset": str(error)}) from None


def _parts_wanted(dataset: object, dataset_id: str, parts: Sequence[str] | None) -> list[str]:
    offered = ir_records.dataset_parts(dataset)
    wanted = list(parts) if parts else offered
    unknown = [part for part in wanted if part not in ir_records.PARTS]
    if unknown:
        raise ValidationError(
            {"parts": f"unknown {', '.join(unknown)} (of {', '.join(ir_records.PARTS)})"}
        )
    missing = [part for part in wanted if part not in offered]
    if missing:
        raise ValidationError(
            {"parts": f"{dataset_id} has no {', '.join(missing)} (it has {', '.join(offered)})"}
        )
    return [part for part in ir_records.PARTS if part in wanted]


def ir_dataset_parts(*, dataset_id: str, parts: Sequence[str] | None = None) -> list[str]:
    """The parts of the dataset an import of `parts` reads (default: every part it has), in
    import order; ValidationError (`dataset`, `parts`) when ir_datasets is not installed,
    knows no such dataset or the dataset lacks a part. Nothing is downloaded."""
    return _parts_wanted(_dataset(dataset_id), dataset_id, parts)


def ir_dataset_records(*, dataset_id: str, parts: Sequence[str]) -> int | None:
    """How many records the parts hold together, when ir_datasets knows without reading."""
    return ir_records.records_total(_dataset(dataset_id), parts)


def ir_dataset_job_start(
    *,
    collection: Collection,
    dataset_id: str,
    parts: Sequence[str] | None = None,
    assessor: User | None = None,
    run_name: str = "",
    created_by: User | None,
) -> ImportJob:
    """Record an import of the dataset as a job, queued for a worker once it commits (the
    import page and the API). The dataset and its parts are checked first, as
    `ir_dataset_import` checks them; what is not on disk is read (or downloaded) by the job,
    and a dataset out of reach fails it with the files missing and where to place them."""
    if not ir_records.installed():
        raise ValidationError({"dataset": ir_records.NOT_INSTALLED})
    wanted = ir_dataset_parts(dataset_id=dataset_id, parts=parts)
    if assessor is not None:
        qrels_assessor_check(collection=collection, assessor=assessor, uploader=created_by)
    job = ImportJob(
        collection=collection,
        kind=ImportJob.DATASET,
        file_name=dataset_id,
        size=0,
        parts=wanted,
        created_by=created_by,
        assessor=assessor,
        run_name=run_name,
    )
    job.full_clean(exclude=["upload_path"])
    job.save()
    import_jobs_start(jobs=[job])
    return job


def ir_dataset_import(
    *,
    collection: Collection,
    dataset_id: str,
    parts: Sequence[str] | None = None,
    assessor: User | None = None,
    run_name: str | None = None,
    progress: Callable[[ir_records.Progress], None] | None = None,
    changed_by: User | None = None,
    job_id: int | None = None,
) -> StandardImport:
    """Import the dataset's `parts` (default: every part it has, in the order queries,
    docs, qrels, scoreddocs) in one transaction: all or nothing. Qrels become `assessor`'s
    judgements (default: the import account), recorded as changed by `changed_by`; scored
    documents one run named `run_name` (default: the dataset id). `progress` hears each
    part as it starts, as its records are read and when it is done; each part's
    `import.finished` names `job_id` (an import job's) or none."""
    dataset = _dataset(dataset_id)
    wanted = _parts_wanted(dataset, dataset_id, parts)
    result = StandardImport(dataset_id)
    tag = run_name or dataset_id
    try:
        with transaction.atomic():
            for part in wanted:
                counter = ir_records.Progress(
                    part, ir_records.part_count(dataset, part), 0, progress
                )
                if progress is not None:
                    progress(counter)
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
                        judgements_import(
                            collection=collection,
                            source=stream,
                            assessor=owner,
                            changed_by=changed_by,
                        )
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
                    job_id=job_id,
                )
    except ir_records.DatasetUnavailable as error:  # nothing was imported
        raise ValidationError({"dataset": str(error)}) from None
    return result
