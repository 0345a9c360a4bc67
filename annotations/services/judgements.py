"""Judgement writes (single, deletion, qrels import): each with history and rescoring."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from itertools import islice
from typing import NotRequired, TypedDict, Unpack, cast

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotations import events
from annotations.bulk import bulk_insert
from annotations.formats import trec
from annotations.models import (
    Adjudication,
    Collection,
    Document,
    Judgement,
    JudgementHistory,
    Query,
)
from annotations.models.webhooks import JUDGEMENT_CHANGED, JUDGEMENT_CREATED
from annotations.services import judgement_rows as rows
from annotations.services.collections import grade_values
from annotations.services.imports import (
    LOOKUP_CHUNK,
    ImportSummary,
    Source,
    documents_ensure,
    queries_ensure,
)
from annotations.services.marks import queries_mark_stale
from annotations.services.members import (
    grading_members_check,
    grading_members_named,
    system_account,
)

IMPORT_ASSESSOR = "trec"

# --- judgements -------------------------------------------------------------------------


# The collection's grades where the caller has just read them (`pair_rows`): set on the
# request's own instance of the collection, for the write that follows.
GRADES_READ = "_grades_read"


def grade_check(collection: Collection, grade: int) -> None:
    levels = getattr(collection, GRADES_READ, None)
    if levels is None:
        levels = grade_values(collection)
    if grade not in levels:
        raise ValidationError(
            {"grade": f"{grade} is not on the scale of {collection.slug} ({levels})"}
        )


class JudgementChange(TypedDict):
    """One assessor's grade for a pair, as every path that writes one gives it."""

    query: Query
    document: Document
    assessor: User
    grade: int
    source: str
    note: NotRequired[str]
    changed_by: NotRequired[User | None]
    dwell_ms: NotRequired[int | None]


def judgement_record(**change: Unpack[JudgementChange]) -> Judgement:
    """Create or change one assessor's judgement, with a history row, and rescore its query.

    Safe against double submits and concurrent tabs: the row is locked (or created under the
    unique constraint) before it is compared, so every change is recorded exactly once.
    `dwell_ms` (the grading page's time on the pair) is kept with the history row, capped at
    `JudgementHistory.DWELL_CAP_MS`.
    """
    return judgement_upsert(**change)[0]


def judgement_upsert(
    *,
    query: Query,
    document: Document,
    assessor: User,
    grade: int,
    note: str = "",
    source: str,
    changed_by: User | None = None,
    dwell_ms: int | None = None,
) -> tuple[Judgement, bool]:
    """``judgement_record``, also saying whether this call created the judgement (decided on
    the locked or newly inserted row: of two identical concurrent submits, one created it)."""
    if query.collection_id != document.collection_id:
        raise ValidationError({"document": "The document belongs to another collection."})
    grade_check(query.collection, grade)
    pair = (query.id, document.id, assessor.pk)
    who = (changed_by or assessor).pk
    # No savepoint of its own inside the caller's transaction: an error here fails that
    # transaction as a whole (the API's write, the grading form's), which none catches.
    with transaction.atomic(savepoint=False):
        now = timezone.now()
        # Inserted first (most grades are a pair's first): one statement when it is new;
        # else the row in place, locked, is compared and changed. A row deleted between the
        # two (a skip withdrew it) is inserted again.
        found = None
        while found is None:
            created_id = rows.judgement_insert(*pair, grade, note, now)
            if created_id is not None:
                judgement = _instance(created_id, query, document, assessor, grade, note, now, now)
                _history(judgement, None, grade, note, source, who, dwell_ms, now)
                queries_mark_stale([query.id])
                judgement_told(
                    JUDGEMENT_CREATED, query.collection_id, judgement, None, grade, source
                )
                return judgement, True
            found = rows.judgement_locked(*pair)
        judgement_id, old_grade, old_note, was_stale, created, updated = found
        if old_grade == grade and old_note == note and not was_stale:
            judgement = _instance(
                judgement_id, query, document, assessor, grade, note, created, updated
            )
            judgement.stale = was_stale
            return judgement, False
        rows.judgement_change(judgement_id, grade, note, now)
        judgement = _instance(judgement_id, query, document, assessor, grade, note, created, now)
        _history(judgement, old_grade, grade, note, source, who, dwell_ms, now)
        # A re-judged stale judgement counts again where stale ones are left out.
        excluded = was_stale and query.collection.stale_judgements == "exclude"
        if old_grade != grade or excluded:
            queries_mark_stale([query.id])
        judgement_told(JUDGEMENT_CHANGED, query.collection_id, judgement, old_grade, grade, source)
    return judgement, False


_JUDGEMENT_FIELDS = (
    "id", "query_id", "document_id", "assessor_id", "grade", "note", "stale", "created", "updated",
)  # fmt: skip


def _instance(
    judgement_id: int,
    query: Query,
    document: Document,
    assessor: User,
    grade: int,
    note: str,
    created: datetime,
    updated: datetime,
) -> Judgement:
    """The judgement as stored (not stale), with its pair and assessor attached."""
    values = (
        judgement_id,
        query.id,
        document.id,
        assessor.pk,
        grade,
        note,
        False,
        created,
        updated,
    )
    judgement = Judgement.from_db(transaction.get_connection().alias, _JUDGEMENT_FIELDS, values)
    judgement.query, judgement.document, judgement.assessor = query, document, assessor
    return judgement


def judgement_delete(*, judgement: Judgement, source: str, changed_by: User | None = None) -> None:
    """Delete a judgement, keeping a history row, and rescore its query."""
    with transaction.atomic():
        locked = Judgement.objects.select_for_update().filter(id=judgement.id).first()
        if locked is None:
            return
        _history(locked, locked.grade, None, locked.note, source, getattr(changed_by, "pk", None))
        locked._recorded_by_service = True  # type: ignore[attr-defined]
        locked.delete()
        queries_mark_stale([locked.query_id])
        collection_id = Query.objects.values_list("collection_id", flat=True).get(
            id=locked.query_id
        )
        judgement_told(JUDGEMENT_CHANGED, collection_id, locked, locked.grade, None, source)


def judgement_told(
    event_type: str,
    collection_id: int,
    judgement: Judgement | Adjudication,
    old: int | None,
    new: int | None,
    source: str,
) -> None:
    """The webhook event of one pair's change (written with it, sent after commit): a
    judgement's, or an adjudication's with the organiser as its assessor."""

    def body() -> dict[str, object]:
        person = judgement.organiser if isinstance(judgement, Adjudication) else judgement.assessor
        return {
            "collection": judgement.query.collection.slug,
            "qid": judgement.query.qid,
            "docno": judgement.document.docno,
            "assessor": person.username,
            "old_grade": old,
            "grade": new,
            "source": source,
        }

    events.emit(collection_id=collection_id, event_type=event_type, data=body)


def _history(
    judgement: Judgement,
    old: int | None,
    new: int | None,
    note: str,
    source: str,
    changed_by_id: int | None,
    dwell_ms: int | None = None,
    now: datetime | None = None,
) -> None:
    if dwell_ms is not None:
        dwell_ms = max(0, min(int(dwell_ms), JudgementHistory.DWELL_CAP_MS))
    rows.history_insert(
        query_id=judgement.query_id,
        document_id=judgement.document_id,
        assessor_id=judgement.assessor_id,
        changed_by_id=changed_by_id,
        old=old,
        new=new,
        note=note,
        source=source,
        dwell_ms=dwell_ms,
        now=now or timezone.now(),
    )


def import_assessor() -> User:
    """The import account, a non-login account judgements are imported under by default."""
    return cast(User, system_account(IMPORT_ASSESSOR))


def qrels_assessor(
    *, collection: Collection, username: str | None, default: User | None = None
) -> User:
    """Whose judgements a qrels import into `collection` records, from the name given: no
    name (or `default`'s own) gives `default` (the API's caller), or the import account
    when there is none; the import account's name gives it; any other name must be an
    organiser or assessor of the collection, and every name that is not gets the same
    `NOT_A_MEMBER` answer, so an import tells nothing about accounts elsewhere."""
    if default is not None and username in (None, default.get_username()):
        return default
    if not username or username == IMPORT_ASSESSOR:
        return import_assessor()
    [member] = grading_members_named(collection=collection, usernames=[username], field="assessor")
    return member


def qrels_assessor_check(*, collection: Collection, assessor: User, uploader: User | None) -> None:
    """Refuse an account `qrels_assessor` would not give for this uploader (an import job's
    own check on the account it is handed)."""
    if uploader is not None and assessor.pk == uploader.pk:
        return
    if assessor.get_username() == IMPORT_ASSESSOR:
        return
    grading_members_check(collection=collection, users=[assessor], field="assessor")


QRELS_BATCH = 50_000


def judgements_import(
    *,
    collection: Collection,
    source: Source,
    name: str | None = None,
    assessor: User,
    history_source: str = "import",
    changed_by: User | None = None,
) -> ImportSummary:
    """Import TREC qrels as one assessor's judgements: all or nothing, every change in history.

    Pairs this assessor already judged get the new grade (a history row each); pairs not in
    the file are left alone. The file is read in batches inside one transaction, so memory
    does not grow with the file and a bad line anywhere rolls everything back.
    """
    counts = [0, 0, 0]  # created, updated, unchanged
    changed_queries: set[int] = set()
    lines = trec.read_qrels(source, name=name, grades=grade_values(collection))
    with transaction.atomic():
        now = timezone.now()
        who = getattr(changed_by or assessor, "pk", None)
        while batch := list(islice(lines, QRELS_BATCH)):
            _judgements_import_batch(
                collection, batch, assessor, who, now, history_source, counts, changed_queries
            )
        queries_mark_stale(changed_queries)
    return ImportSummary(*counts)


def _judgements_import_batch(
    collection: Collection,
    lines: list[trec.QrelLine],
    assessor: User,
    who: int | None,
    now: datetime,
    history_source: str,
    counts: list[int],
    changed_queries: set[int],
) -> None:
    query_ids = queries_ensure(collection=collection, qids=(line.qid for line in lines))
    doc_ids = documents_ensure(collection=collection, docnos=(line.docno for line in lines))
    by_query: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for line in lines:
        by_query[query_ids[line.qid]].append((doc_ids[line.docno], line.grade))
    new_rows: list[tuple[object, ...]] = []
    history_rows: list[tuple[object, ...]] = []
    # The assessor's judgements of the batch's queries, locked, a few thousand queries per
    # statement (a lookup per query of its judged documents cost more in building the
    # statements than in running them).
    existing: dict[tuple[int, int], int] = {}
    batch_queries = list(by_query)
    for start in range(0, len(batch_queries), LOOKUP_CHUNK):
        chunk = batch_queries[start : start + LOOKUP_CHUNK]
        mine = Judgement.objects.select_for_update().filter(assessor=assessor, query_id__in=chunk)
        rows = mine.order_by().values_list("query_id", "document_id", "grade")
        existing.update(((query_id, document_id), grade) for query_id, document_id, grade in rows)
    for query_id, pairs in by_query.items():
        updates: dict[int, list[int]] = defaultdict(list)
        for document_id, grade in pairs:
            old = existing.get((query_id, document_id))
            if old is None:
                new_rows.append((query_id, document_id, assessor.pk, grade, "", now, now))
                history_rows.append((query_id, document_id, assessor.pk, who, None, grade))
                counts[0] += 1
            elif old == grade:
                counts[2] += 1
                continue
            else:
                updates[grade].append(document_id)
                history_rows.append((query_id, document_id, assessor.pk, who, old, grade))
                counts[1] += 1
            changed_queries.add(query_id)
        for grade, documents in updates.items():
            Judgement.objects.filter(
                query_id=query_id, assessor=assessor, document_id__in=documents
            ).update(grade=grade, stale=False, updated=now)
    bulk_insert(
        Judgement,
        ("query_id", "document_id", "assessor_id", "grade", "note", "created", "updated"),
        new_rows,
        binary=True,
    )
    bulk_insert(
        JudgementHistory,
        (
            "query_id",
            "document_id",
            "assessor_id",
            "changed_by_id",
            "old_grade",
            "new_grade",
            "note",
            "source",
            "changed_at",
        ),
        ((*row, "", history_source, now) for row in history_rows),
        binary=True,
    )
