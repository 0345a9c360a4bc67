"""Use cases that write: collections, imports, judgements, runs (each in one transaction)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, TextIO

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotations import scoring, selectors, trec
from annotations.bulk import bulk_insert
from annotations.models import (
    DEFAULT_GRADES,
    Collection,
    Document,
    GradeLevel,
    Judgement,
    JudgementHistory,
    Query,
    Result,
    Run,
)
from annotations.scores import scores_schedule

Source = str | Path | BinaryIO
LOOKUP_CHUNK = 5000
IMPORT_ASSESSOR = "trec"


@dataclass(frozen=True)
class ImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


# --- collections ------------------------------------------------------------------------


def collection_create(
    *,
    slug: str,
    name: str = "",
    description: str = "",
    gain: str = "linear",
    cutoffs: Sequence[int] | None = None,
    grades: Sequence[tuple[int, str, str]] | None = None,
    missing_queries: str = "zero",
    aggregation: str = "median",
) -> Collection:
    """Create a collection with its grade scale (default 0-3 with labels and definitions)."""
    collection = Collection(
        slug=slug,
        name=name or slug,
        description=description,
        gain=gain,
        cutoffs=list(cutoffs) if cutoffs is not None else [5, 10, 20],
        missing_queries=missing_queries,
        aggregation=aggregation,
    )
    collection.full_clean()
    levels = list(grades) if grades is not None else list(DEFAULT_GRADES)
    values = [value for value, _, _ in levels]
    if not levels or len(set(values)) != len(values):
        raise ValidationError({"grades": "The grade scale needs distinct levels."})
    with transaction.atomic():
        collection.save()
        for value, label, definition in levels:
            level = GradeLevel(
                collection=collection, value=value, label=label, definition=definition
            )
            level.full_clean(exclude=["collection"])
            level.save()
    return collection


def grade_levels_from_spec(spec: str) -> list[tuple[int, str, str]]:
    """Parse a scale such as '0-3', '0-4' or '0,1,2' into levels with default labels."""
    text = spec.strip()
    try:
        if "," in text:
            values = sorted({int(part) for part in text.split(",")})
        elif "-" in text[1:]:
            cut = text.index("-", 1)
            low, high = int(text[:cut]), int(text[cut + 1 :])
            if high < low:
                raise ValueError
            values = list(range(low, high + 1))
        else:
            raise ValueError
    except ValueError:
        raise ValidationError(
            {"grades": f"{spec!r} is not a grade scale; write it like '0-3' or '0,1,2'"}
        ) from None
    if values == [level[0] for level in DEFAULT_GRADES]:
        return list(DEFAULT_GRADES)
    return [(value, f"Grade {value}", "") for value in values]


SCORING_FIELDS = ("gain", "cutoffs", "missing_queries", "aggregation")


def collection_update(*, collection: Collection, **changes: object) -> Collection:
    """Change a collection's settings; scoring settings mark every score pending and rescore."""
    unknown = set(changes) - {"name", "description", *SCORING_FIELDS}
    if unknown:
        raise ValidationError({field: "This setting cannot be changed." for field in unknown})
    rescore = any(
        field in changes and changes[field] != getattr(collection, field) for field in SCORING_FIELDS
    )
    for field, value in changes.items():
        setattr(collection, field, value)
    collection.full_clean()
    with transaction.atomic():
        collection.save()
        if rescore:
            collection_mark_stale(collection=collection)
    return collection


def collection_mark_stale(*, collection: Collection) -> None:
    """Mark every score of the collection pending and schedule a full recomputation."""
    Query.objects.filter(collection=collection).update(
        judgements_version=F("judgements_version") + 1
    )
    Run.objects.filter(collection=collection).update(scored_at=None)
    scores_schedule(collection_ids=[collection.id])


def grade_values(collection: Collection) -> list[int]:
    return list(collection.grades.values_list("value", flat=True))


# --- ids created on the fly ------------------------------------------------------------


def _chunks(items: Sequence[str], size: int = LOOKUP_CHUNK) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def queries_ensure(*, collection: Collection, qids: Iterable[str]) -> dict[str, int]:
    """qid -> query id, creating (ids only) the queries never imported."""
    wanted = sorted(set(qids))
    found: dict[str, int] = {}
    for chunk in _chunks(wanted):
        found.update(
            Query.objects.filter(collection=collection, qid__in=chunk).values_list("qid", "id")
        )
    missing = [qid for qid in wanted if qid not in found]
    if missing:
        Query.objects.bulk_create(
            [Query(collection=collection, qid=qid) for qid in missing], batch_size=LOOKUP_CHUNK
        )
        for chunk in _chunks(missing):
            found.update(
                Query.objects.filter(collection=collection, qid__in=chunk).values_list("qid", "id")
            )
    return found


def documents_ensure(*, collection: Collection, docnos: Iterable[str]) -> dict[str, int]:
    """docno -> document id, creating (ids only) the documents never imported."""
    wanted = sorted(set(docnos))
    found: dict[str, int] = {}
    for chunk in _chunks(wanted):
        found.update(
            Document.objects.filter(collection=collection, docno__in=chunk).values_list(
                "docno", "id"
            )
        )
    missing = [docno for docno in wanted if docno not in found]
    if missing:
        bulk_insert(
            Document,
            ("collection_id", "docno", "title", "text", "url", "content_hash"),
            ((collection.id, docno, "", "", "", "") for docno in missing),
        )
        for chunk in _chunks(missing):
            found.update(
                Document.objects.filter(collection=collection, docno__in=chunk).values_list(
                    "docno", "id"
                )
            )
    return found


# --- topics and documents ---------------------------------------------------------------


def topics_import(
    *, collection: Collection, source: Source, name: str | None = None
) -> ImportSummary:
    """Create or update queries from a TSV, JSONL or TREC topic file (all or nothing)."""
    topics = list(trec.read_topics(source, name=name))
    created = updated = unchanged = 0
    with transaction.atomic():
        existing = {q.qid: q for q in Query.objects.filter(collection=collection)}
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


def _content_hash(title: str, text: str) -> str:
    return hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()


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
                c, u, n = _documents_upsert(collection, batch)
                created, updated, unchanged = created + c, updated + u, unchanged + n
                batch = []
        if batch:
            c, u, n = _documents_upsert(collection, batch)
            created, updated, unchanged = created + c, updated + u, unchanged + n
    return ImportSummary(created, updated, unchanged)


def _documents_upsert(
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
    unchanged = 0
    for record in records:
        values = {
            "title": record.title,
            "text": record.text,
            "url": record.url,
            "content_hash": _content_hash(record.title, record.text),
        }
        document = existing.get(record.docno)
        if document is None:
            to_create.append(Document(collection=collection, docno=record.docno, **values))
        elif all(getattr(document, key) == value for key, value in values.items()):
            unchanged += 1
        else:
            for key, value in values.items():
                setattr(document, key, value)
            to_update.append(document)
    Document.objects.bulk_create(to_create)
    Document.objects.bulk_update(to_update, ["title", "text", "url", "content_hash"])
    return len(to_create), len(to_update), unchanged


# --- judgements -------------------------------------------------------------------------


def _check_grade(collection: Collection, grade: int) -> None:
    levels = grade_values(collection)
    if grade not in levels:
        raise ValidationError(
            {"grade": f"{grade} is not on the scale of {collection.slug} ({levels})"}
        )


def judgement_record(
    *,
    query: Query,
    document: Document,
    assessor: AbstractBaseUser,
    grade: int,
    note: str = "",
    source: str,
    changed_by: AbstractBaseUser | None = None,
) -> Judgement:
    """Create or change one assessor's judgement, with a history row, and rescore its query.

    Safe against double submits and concurrent tabs: the row is locked (or created under the
    unique constraint) before it is compared, so every change is recorded exactly once.
    """
    if query.collection_id != document.collection_id:
        raise ValidationError({"document": "The document belongs to another collection."})
    _check_grade(query.collection, grade)
    with transaction.atomic():
        judgement = (
            Judgement.objects.select_for_update()
            .filter(query=query, document=document, assessor=assessor)
            .first()
        )
        old_grade: int | None = None
        if judgement is None:
            try:
                with transaction.atomic():
                    judgement = Judgement(
                        query=query, document=document, assessor=assessor, grade=grade, note=note
                    )
                    judgement._recorded_by_service = True  # type: ignore[attr-defined]
                    judgement.save()
            except IntegrityError:  # another request created it first: change that one
                judgement = Judgement.objects.select_for_update().get(
                    query=query, document=document, assessor=assessor
                )
            else:
                _history(judgement, None, grade, note, source, changed_by or assessor)
                _mark_changed([query.id])
                return judgement
        if judgement.grade == grade and judgement.note == note:
            return judgement
        old_grade = judgement.grade
        judgement.grade, judgement.note = grade, note
        judgement._recorded_by_service = True  # type: ignore[attr-defined]
        judgement.save(update_fields=["grade", "note", "updated"])
        _history(judgement, old_grade, grade, note, source, changed_by or assessor)
        if old_grade != grade:
            _mark_changed([query.id])
    return judgement


def judgement_delete(
    *, judgement: Judgement, source: str, changed_by: AbstractBaseUser | None = None
) -> None:
    """Delete a judgement, keeping a history row, and rescore its query."""
    with transaction.atomic():
        locked = Judgement.objects.select_for_update().filter(id=judgement.id).first()
        if locked is None:
            return
        _history(locked, locked.grade, None, locked.note, source, changed_by)
        locked._recorded_by_service = True  # type: ignore[attr-defined]
        locked.delete()
        _mark_changed([locked.query_id])


def _history(
    judgement: Judgement,
    old: int | None,
    new: int | None,
    note: str,
    source: str,
    changed_by: AbstractBaseUser | None,
) -> None:
    JudgementHistory.objects.create(
        query_id=judgement.query_id,
        document_id=judgement.document_id,
        assessor_id=judgement.assessor_id,
        changed_by=changed_by,
        old_grade=old,
        new_grade=new,
        note=note,
        source=source,
    )


def _mark_changed(query_ids: Iterable[int]) -> None:
    """Mark queries stale in the writing transaction and rescore them after it commits."""
    ids = sorted(set(query_ids))
    for start in range(0, len(ids), LOOKUP_CHUNK):
        Query.objects.filter(id__in=ids[start : start + LOOKUP_CHUNK]).update(
            judgements_version=F("judgements_version") + 1
        )
    scores_schedule(query_ids=ids)


def import_assessor(username: str | None = None) -> AbstractBaseUser:
    """The account judgements are imported under (a non-login account by default)."""
    user_model = get_user_model()
    if username:
        try:
            return user_model.objects.get(username=username)
        except user_model.DoesNotExist:
            raise ValidationError({"assessor": f"no user named {username!r}"}) from None
    user, created = user_model.objects.get_or_create(username=IMPORT_ASSESSOR)
    if created:
        user.set_unusable_password()
        user.save()
    return user


def judgements_import(
    *,
    collection: Collection,
    source: Source,
    name: str | None = None,
    assessor: AbstractBaseUser,
    history_source: str = "import",
    changed_by: AbstractBaseUser | None = None,
) -> ImportSummary:
    """Import TREC qrels as one assessor's judgements: all or nothing, every change in history.

    Pairs this assessor already judged get the new grade (a history row each); pairs not in
    the file are left alone.
    """
    lines = list(trec.read_qrels(source, name=name, grades=grade_values(collection)))
    created = updated = unchanged = 0
    with transaction.atomic():
        query_ids = queries_ensure(collection=collection, qids=(line.qid for line in lines))
        doc_ids = documents_ensure(collection=collection, docnos=(line.docno for line in lines))
        by_query: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for line in lines:
            by_query[query_ids[line.qid]].append((doc_ids[line.docno], line.grade))
        del lines
        new_rows: list[tuple[object, ...]] = []
        history_rows: list[tuple[object, ...]] = []
        changed_queries: set[int] = set()
        now = timezone.now()
        who = getattr(changed_by or assessor, "pk", None)
        for query_id, pairs in by_query.items():
            existing = dict(
                Judgement.objects.select_for_update()
                .filter(query_id=query_id, assessor=assessor)
                .values_list("document_id", "grade")
            )
            updates: dict[int, list[int]] = defaultdict(list)
            for document_id, grade in pairs:
                old = existing.get(document_id)
                if old is None:
                    new_rows.append((query_id, document_id, assessor.pk, grade, "", now, now))
                    history_rows.append((query_id, document_id, assessor.pk, who, None, grade))
                    created += 1
                elif old == grade:
                    unchanged += 1
                    continue
                else:
                    updates[grade].append(document_id)
                    history_rows.append((query_id, document_id, assessor.pk, who, old, grade))
                    updated += 1
                changed_queries.add(query_id)
            for grade, documents in updates.items():
                Judgement.objects.filter(
                    query_id=query_id, assessor=assessor, document_id__in=documents
                ).update(grade=grade, updated=now)
        bulk_insert(
            Judgement,
            ("query_id", "document_id", "assessor_id", "grade", "note", "created", "updated"),
            new_rows,
        )
        bulk_insert(
            JudgementHistory,
            (
                "query_id", "document_id", "assessor_id", "changed_by_id", "old_grade",
                "new_grade", "note", "source", "changed_at",
            ),  # fmt: skip
            (row + ("", history_source, now) for row in history_rows),
        )
        _mark_changed(changed_queries)
    return ImportSummary(created, updated, unchanged)


# --- runs -------------------------------------------------------------------------------


def run_import(
    *,
    collection: Collection,
    source: Source,
    name: str | None = None,
    run_name: str | None = None,
    owner: AbstractBaseUser | None = None,
    description: str = "",
    replace: bool = False,
) -> tuple[Run, int]:
    """Import a TREC run file (all or nothing); returns the run and its number of results.

    The run is named by `run_name`, else by the file's tag. An existing run of that name is
    replaced only with `replace`.
    """
    by_query: dict[str, list[tuple[str, float | None, int]]] = defaultdict(list)
    tag: str | None = None
    for line in trec.read_run(source, name=name):
        tag = line.tag
        by_query[line.qid].append((line.docno, line.score, line.rank))
    if tag is None:  # read_run already refuses an empty file; this keeps the type honest
        raise ValidationError({"file": "the run file has no results"})
    return run_store(
        collection=collection,
        run_name=run_name or tag,
        results=by_query,
        owner=owner,
        description=description,
        replace=replace,
    )


def run_store(
    *,
    collection: Collection,
    run_name: str,
    results: dict[str, list[tuple[str, float | None, int]]],
    owner: AbstractBaseUser | None = None,
    description: str = "",
    replace: bool = False,
) -> tuple[Run, int]:
    """Store a run's results {qid: [(docno, score, rank)]} and schedule its scoring."""
    if not run_name or len(run_name) > 200 or any(ch.isspace() for ch in run_name):
        raise ValidationError({"name": f"{run_name!r} is not a valid run name"})
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(collection=collection, name=run_name).first()
        if run is not None and not replace:
            raise ValidationError(
                {"name": f"run {run_name!r} already exists in {collection.slug}; replace it "
                 "explicitly (--replace, or PUT in the API)"}
            )
        if run is None:
            run = Run.objects.create(
                collection=collection, name=run_name, owner=owner, description=description
            )
        else:
            run.results.all().delete()
            run.query_scores.all().delete()
            run.run_scores.all().delete()
            run.description = description or run.description
            run.scored_at = None
            run.save()
        query_ids = queries_ensure(collection=collection, qids=results.keys())
        doc_ids = documents_ensure(
            collection=collection,
            docnos=(docno for docs in results.values() for docno, _, _ in docs),
        )
        count = bulk_insert(
            Result,
            ("run_id", "query_id", "document_id", "rank", "score", "position"),
            _result_rows(run.id, results, query_ids, doc_ids),
        )
        Run.objects.filter(id=run.id).update(scored_at=None)
        scores_schedule(run_ids=[run.id])
    return run, count


def _result_rows(
    run_id: int,
    results: dict[str, list[tuple[str, float | None, int]]],
    query_ids: dict[str, int],
    doc_ids: dict[str, int],
) -> Iterable[tuple[object, ...]]:
    for qid, docs in results.items():
        query_id = query_ids[qid]
        info = {docno: (score, rank) for docno, score, rank in docs}
        ordered = scoring.order_ranking((docno, score) for docno, score, _ in docs)
        for position, docno in enumerate(ordered, start=1):
            score, rank = info[docno]
            yield run_id, query_id, doc_ids[docno], rank, score, position


def run_delete(*, run: Run) -> None:
    """Delete a run with its results and scores; other runs' scores are unaffected."""
    run.delete()


# --- exports ----------------------------------------------------------------------------


def qrels_export(*, collection: Collection, out: TextIO | IO[str]) -> None:
    trec.write_qrels(selectors.qrels_rows(collection=collection), out)  # type: ignore[arg-type]


def run_export(*, run: Run, out: TextIO | IO[str]) -> None:
    trec.write_run(selectors.run_rows(run=run), out)  # type: ignore[arg-type]
