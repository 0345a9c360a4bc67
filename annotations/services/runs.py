"""Run imports, replacement and deletion."""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations import packing, scoring, selectors, trec
from annotations.bulk import bulk_insert
from annotations.models import (
    Collection,
    Ranking,
    Run,
)
from annotations.scores import scores_schedule
from annotations.services.imports import Source, documents_ensure, queries_ensure

# --- runs -------------------------------------------------------------------------------


def run_import(
    *,
    collection: Collection,
    source: Source,
    name: str | None = None,
    run_name: str | None = None,
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
) -> tuple[Run, int]:
    """Import a TREC run file (all or nothing); returns the run and its number of results.

    The run is named by `run_name`, else by the file's tag. An existing run of that name is
    replaced only with `replace`.
    """
    by_query: dict[str, list[tuple[str, float | None, int]]] = defaultdict(list)
    tag: str | None = None
    with _cyclic_gc_paused():
        for rows in trec.read_run_blocks(source, name=name):
            tag = rows[0][4]  # every line carries the same tag (checked)
            for qid, docno, rank, score, _, _ in rows:
                by_query[qid].append((docno, score, rank))
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


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a run file becomes a few hundred thousand tuples.

    The collector runs after every few hundred new objects and each full pass walks every
    live one, so building many long-lived objects costs it time that grows with their
    number; these tuples form no cycles, and it catches up when resumed.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_store(
    *,
    collection: Collection,
    run_name: str,
    results: dict[str, list[tuple[str, float | None, int]]],
    owner: User | None = None,
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
                {
                    "name": f"run {run_name!r} already exists in {collection.slug}; replace it "
                    "explicitly (--replace, or PUT in the API)"
                }
            )
        if run is None:
            run = Run.objects.create(
                collection=collection, name=run_name, owner=owner, description=description
            )
        else:
            run.rankings.all().delete()
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
        bulk_insert(
            Ranking,
            ("run_id", "query_id", "size", "documents", "scores", "ranks"),
            _ranking_rows(run.id, results, query_ids, doc_ids),
            binary=True,
        )
        count = sum(len(docs) for docs in results.values())
        Run.objects.filter(id=run.id).update(scored_at=None)
        scores_schedule(run_ids=[run.id])
    return run, count


def _ranking_rows(
    run_id: int,
    results: dict[str, list[tuple[str, float | None, int]]],
    query_ids: dict[str, int],
    doc_ids: dict[str, int],
) -> Iterable[tuple[object, ...]]:
    """One packed row per query, documents in trec_eval's order (fixed here, once)."""
    for qid, docs in results.items():
        docnos, scores, ranks = zip(*scoring.order_results(docs), strict=True)
        yield (
            run_id,
            query_ids[qid],
            len(docnos),
            packing.pack_ids(list(map(doc_ids.__getitem__, docnos))),
            b"" if scores[0] is None else packing.pack_scores(scores),
            packing.pack_ranks(ranks),
        )


def run_delete(*, run: Run) -> None:
    """Delete a run with its results and scores; other runs' scores are unaffected."""
    run.delete()


def run_export(*, run: Run, out: trec.TextSink) -> None:
    trec.write_run(selectors.run_rows(run=run), out)
