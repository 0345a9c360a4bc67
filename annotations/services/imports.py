"""Imports of topics and documents, ids created on the fly, and exports."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import numpy.typing as npt
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations import events, selectors
from annotations.formats import trec
from annotations.ids import LOOKUP_CHUNK, ids_ensure, ids_ensure_column
from annotations.models import (
    Collection,
    Document,
    Query,
)
from annotations.models.webhooks import IMPORT_FINISHED
from annotations.services.marks import judgements_mark_stale

if TYPE_CHECKING:
    import pyarrow as pa

Source = str | Path | BinaryIO

# What a document created from a run or qrels file holds until its text is imported.
_DOCUMENT_DEFAULTS = {"title": "", "text": "", "url": "", "content_hash": ""}


@dataclass(frozen=True)
class ImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


# --- ids created on the fly ------------------------------------------------------------


def _chunks(items: Sequence[str], size: int = LOOKUP_CHUNK) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def queries_ensure(*, collection: Collection, qids: Iterable[str]) -> dict[str, int]:
    """qid -> query id, creating (ids only) the queries never imported."""
    return ids_ensure(
        Query,
        collection_id=collection.id,
        key="qid",
        values=qids,
        defaults={
            "title": "",
            "description": "",
            "narrative": "",
            "judgements_version": 0,
            "scored_version": 0,
        },
    )


def documents_ensure(*, collection: Collection, docnos: Iterable[str]) -> dict[str, int]:
    """docno -> document id, creating (ids only) the documents never imported."""
    return ids_ensure(
        Document,
        collection_id=collection.id,
        key="docno",
        values=docnos,
        defaults=_DOCUMENT_DEFAULTS,
    )


def documents_ensure_column(
    *, collection: Collection, docnos: pa.StringArray
) -> npt.NDArray[np.int64]:
    """`documents_ensure` for an Arrow column of distinct docnos: their ids, in order."""
    return ids_ensure_column(
        Document,
        collection_id=collection.id,
        key="docno",
        values=docnos,
        defaults=_DOCUMENT_DEFAULTS,
    )


# --- topics and documents ---------------------------------------------------------------


def topics_import(
    *, collection: Collection, source: Source, name: str | None = None
) -> ImportSummary:
    """Create or update queries from a TSV, JSONL or TREC topic file (all or nothing)."""
    return queries_upsert(collection=collection, topics=list(trec.read_topics(source, name=name)))


def queries_upsert(*, collection: Collection, topics: Sequence[trec.Topic]) -> ImportSummary:
    """Create or update queries by qid in one transaction (topic files and the API)."""
    created = updated = unchanged = 0
    with transaction.atomic():
        existing = {
            q.qid: q
            for q in Query.objects.filter(collection=collection, qid__in=[t.qid for t in topics])
        }
        to_create: list[Query] = []
        for topic in topics:
            query = existing.get(topic.qid)
            fields = {
                "title": topic.title,
                "description": topic.description,
                "narrative": topic.narrative,
            }
            if query is None:
                to_create.append(Query(collection=collection, qid=topic.qid, **fields))
                created += 1
            elif all(getattr(query, key) == value for key, value in fields.items()):
                unchanged += 1
            else:
                for key, value in fields.items():
                    setattr(query, key, value)
                query.save(update_fields=list(fields))
                updated += 1
        Query.objects.bulk_create(to_create, batch_size=LOOKUP_CHUNK)
    return ImportSummary(created, updated, unchanged)


def documents_import(
    *, collection: Collection, source: Source, name: str | None = None
) -> ImportSummary:
    """Create or update documents from JSONL or TSV, streamed in batches (all or nothing)."""
    created = updated = unchanged = 0
    with transaction.atomic():
        batch: list[trec.DocumentRecord] = []
        for record in trec.read_documents(source, name=name):
            batch.append(record)
            if len(batch) >= LOOKUP_CHUNK:
                c, u, n = documents_upsert(collection, batch)
                created, updated, unchanged = created + c, updated + u, unchanged + n
                batch = []
        if batch:
            c, u, n = documents_upsert(collection, batch)
            created, updated, unchanged = created + c, updated + u, unchanged + n
    return ImportSummary(created, updated, unchanged)


def documents_upsert(
    collection: Collection, records: list[trec.DocumentRecord]
) -> tuple[int, int, int]:
    existing = {
        d.docno: d
        for d in Document.objects.filter(
            collection=collection, docno__in=[r.docno for r in records]
        )
    }
    to_create: list[Document] = []
    to_update: list[Document] = []
    changed_text: list[int] = []  # documents whose judged text is no longer what it was
    unchanged = 0
    for record in records:
        values = {
            "title": record.title,
            "text": record.text,
            "url": record.url,
            "content_hash": Document.hash_of(record.title, record.text),
        }
        document = existing.get(record.docno)
        if document is None:
            to_create.append(Document(collection=collection, docno=record.docno, **values))
        elif all(getattr(document, key) == value for key, value in values.items()):
            unchanged += 1
        else:
            if document.content_hash and document.content_hash != values["content_hash"]:
                changed_text.append(document.id)
            for key, value in values.items():
                setattr(document, key, value)
            to_update.append(document)
    Document.objects.bulk_create(to_create)
    Document.objects.bulk_update(to_update, ["title", "text", "url", "content_hash"])
    if changed_text:
        judgements_mark_stale(collection=collection, document_ids=changed_text)
    return len(to_create), len(to_update), unchanged


# --- exports ----------------------------------------------------------------------------


def qrels_export(*, collection: Collection, out: trec.TextSink) -> None:
    """The effective qrels as TREC text (streamed from the database, see `qrels_lines`)."""
    for piece in selectors.qrels_lines(collection=collection):
        out.write(piece.decode())


# --- queries and documents given as records (the API's JSON bodies) ---------------------


@dataclass(frozen=True)
class QueryFields:
    qid: str
    title: str = ""
    description: str = ""
    narrative: str = ""


@dataclass(frozen=True)
class DocumentFields:
    docno: str
    title: str = ""
    text: str = ""
    url: str = ""


def _check_ids(ids: Sequence[str], field: str) -> None:
    check = trec.qid_problem if field == "qid" else trec.id_problem
    for value in ids:
        problem = check(value) if isinstance(value, str) else "not a string"
        if problem is not None:
            raise ValidationError({field: f"not a valid id: {problem}"})
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise ValidationError({field: f"{value!r} appears more than once"})
        seen.add(value)


def _check_texts(records: Sequence[object], fields: Sequence[str]) -> None:
    for index, record in enumerate(records):
        for field in fields:
            problem = trec.text_problem(getattr(record, field))
            if problem is not None:
                raise ValidationError({f"[{index}].{field}": problem})


def queries_store(*, collection: Collection, queries: Sequence[QueryFields]) -> ImportSummary:
    """Create or update queries by qid (all or nothing); like a topic file import."""
    _check_ids([q.qid for q in queries], "qid")
    _check_texts(queries, ("title", "description", "narrative"))
    topics = [trec.Topic(q.qid, q.title, q.description, q.narrative, line=0) for q in queries]
    return queries_upsert(collection=collection, topics=topics)


def documents_store(
    *, collection: Collection, documents: Sequence[DocumentFields]
) -> ImportSummary:
    """Create or update documents by docno (all or nothing); like a document file import."""
    _check_ids([d.docno for d in documents], "docno")
    _check_texts(documents, ("title", "text", "url"))
    records = [trec.DocumentRecord(d.docno, d.title, d.text, d.url, line=0) for d in documents]
    created = updated = unchanged = 0
    with transaction.atomic():
        for start in range(0, len(records), LOOKUP_CHUNK):
            c, u, n = documents_upsert(collection, records[start : start + LOOKUP_CHUNK])
            created, updated, unchanged = created + c, updated + u, unchanged + n
    return ImportSummary(created, updated, unchanged)


def import_told(
    *,
    collection: Collection,
    kind: str,
    file_name: str,
    summary: object,
    job_id: int | None = None,
) -> None:
    """The `import.finished` event of an import from any path (a job, a request, a command,
    a standard collection), written in the import's own transaction; `job` is null outside
    a job."""
    events.emit(
        collection_id=collection.id,
        event_type=IMPORT_FINISHED,
        data=lambda: {
            "collection": collection.slug,
            "job": job_id,
            "kind": kind,
            "file": file_name,
            "summary": str(summary),
        },
    )
