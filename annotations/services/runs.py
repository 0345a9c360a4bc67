"""Run imports, replacement and deletion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from annotations import selectors
from annotations.formats import trec
from annotations.models import Collection, Run
from annotations.scores import scores_schedule
from annotations.scores.refresh_queue import leaderboards_refresh_after_commit
from annotations.services.imports import Source
from annotations.services.run_files import RunFiles, RunImported
from annotations.services.run_storage import (
    PackedRanking,
    Results,
    RunCheck,
    packed_rankings_store,
    rankings_store,
    run_prepared,
)

__all__ = [
    "RunCheck",
    "RunImported",
    "run_delete",
    "run_export",
    "run_files_import",
    "run_import",
    "run_store",
    "runs_import",
]


def run_files_import(
    *,
    collection: Collection,
    sources: Sequence[Source],
    names: Sequence[str | None] | None = None,
    run_name: str | None = None,
    split_tags: bool = False,
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
    may_replace: RunCheck | None = None,
) -> list[RunImported]:
    """Import TREC run files in one transaction (all or nothing): one run per file, named
    by `run_name` (one file only) or its tag; with `split_tags`, one run per tag of each
    file, each named by its tag.

    An existing run of a name is replaced only with `replace`, and `may_replace` decides,
    on the locked run inside the writing transaction, whether the caller may replace it
    (else PermissionDenied). Two files (or tags) naming one run are refused. A plain file
    up to `run_arrow.MAX_BYTES` is read whole into columns (and split by tag there); any
    other file, and any file with a problem (to name its line), goes through the streaming
    line reader. A document
    id is looked up only by the first file that retrieves it, and the next file is read
    while the current one is stored. Returns the runs stored, with the ranks each ignored.
    """
    if run_name is not None and (len(sources) != 1 or split_tags):
        problem = "one file's run only" if len(sources) != 1 else "no run: each tag names its run"
        raise ValidationError({"name": f"a run name names {problem}"})
    if not sources:
        return []
    display = list(names) if names is not None else [None] * len(sources)
    files = RunFiles(
        collection=collection,
        owner=owner,
        description=description,
        replace=replace,
        may_replace=may_replace,
        split_tags=split_tags,
    )
    imported: list[RunImported] = []
    with transaction.atomic(), ThreadPoolExecutor(max_workers=1) as reader:
        upcoming = [reader.submit(files.read, sources[0])]
        for index, source in enumerate(sources):
            read = upcoming.pop().result()
            if index + 1 < len(sources):
                upcoming.append(reader.submit(files.read, sources[index + 1]))
            imported += files.add(source, display[index], run_name, read)
        Run.objects.filter(id__in=files.runs).update(scored_at=None)
        scores_schedule(run_ids=files.runs)
    return imported


def run_import(
    *,
    collection: Collection,
    source: Source,
    name: str | None = None,
    run_name: str | None = None,
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
    may_replace: RunCheck | None = None,
) -> tuple[Run, int]:
    """Import one TREC run file (all or nothing); returns the run and its number of results.

    `run_files_import` for a single file holding a single run (`name` names the file in
    errors, `run_name` the run; default: its tag).
    """
    (imported,) = run_files_import(
        collection=collection,
        sources=[source],
        names=[name],
        run_name=run_name,
        owner=owner,
        description=description,
        replace=replace,
        may_replace=may_replace,
    )
    return imported.run, imported.results


def runs_import(
    *,
    collection: Collection,
    sources: Sequence[Source],
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
) -> list[tuple[Run, int]]:
    """Import several run files in one transaction (all or nothing), each named by its tag
    (`run_files_import`, a whole track's runs); returns each run and its number of results."""
    imported = run_files_import(
        collection=collection,
        sources=sources,
        owner=owner,
        description=description,
        replace=replace,
    )
    return [(item.run, item.results) for item in imported]


def run_store(
    *,
    collection: Collection,
    run_name: str,
    results: Results,
    owner: User | None = None,
    description: str = "",
    replace: bool = False,
    may_replace: RunCheck | None = None,
) -> tuple[Run, int]:
    """Store a run's results {qid: [(docno, score, rank)]} and schedule its scoring
    (`may_replace` as in `run_files_import`). A run needs at least one result."""
    if not any(results.values()):
        raise ValidationError({"results": "a run needs at least one result"})
    with transaction.atomic():
        run = run_prepared(collection, run_name, owner, description, replace, may_replace)
        count = rankings_store(collection, run, results)
        Run.objects.filter(id=run.id).update(scored_at=None)
        scores_schedule(run_ids=[run.id])
    return run, count


def run_store_packed(
    *,
    collection: Collection,
    run_name: str,
    rankings: Mapping[str, PackedRanking],
    owner: User | None = None,
    description: str = "",
) -> tuple[Run, int]:
    """`run_store` of a new run whose rankings were packed already (`ranking_packed`: a
    fetch packs each query's as soon as its documents have ids), its scoring scheduled."""
    if not rankings:
        raise ValidationError({"results": "a run needs at least one result"})
    with transaction.atomic():
        run = run_prepared(collection, run_name, owner, description, replace=False)
        count = packed_rankings_store(collection, run, rankings)
        Run.objects.filter(id=run.id).update(scored_at=None)
        scores_schedule(run_ids=[run.id])
    return run, count


def run_delete(*, run: Run, may_delete: RunCheck | None = None) -> None:
    """Delete a run with its results and scores; other runs' scores are unaffected.

    `may_delete` decides on the locked row, inside the deleting transaction.
    """
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(id=run.id).first()
        if locked is None:
            return
        if may_delete is not None and not may_delete(locked):
            raise PermissionDenied("System owners may change only their own runs.")
        locked.delete()
        leaderboards_refresh_after_commit(collection_id=locked.collection_id)


def run_export(*, run: Run, out: trec.TextSink) -> None:
    trec.write_run(selectors.run_rows(run=run), out)
