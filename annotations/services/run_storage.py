"""A run's rows: the run created or emptied for an import, and its packed rankings."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from annotations.bulk import bulk_insert
from annotations.formats import ranking_bytes, trec
from annotations.metrics import ndcg
from annotations.models import Collection, Ranking, Run
from annotations.services.imports import documents_ensure, queries_ensure

if TYPE_CHECKING:
    from annotations.formats.run_arrow import RunColumns

# Decides whether the caller may replace or delete a run (given the locked row).
RunCheck = Callable[[Run], bool]
# {qid: [(docno, score, rank)]}; a rank None was not a 32-bit integer and is ignored.
Results = Mapping[str, Sequence[tuple[str, float | None, int | None]]]

RANKING_COLUMNS = ("run_id", "query_id", "size", "documents", "scores", "ranks")


def run_prepared(
    collection: Collection,
    run_name: str,
    owner: User | None,
    description: str,
    replace: bool,
    may_replace: RunCheck | None = None,
) -> Run:
    """The run to fill, created or (with `replace`) emptied and locked; inside a transaction.

    Whether an existing run may be replaced is decided here, on the locked row: a run
    created meanwhile by someone else is never replaced by a caller who may not.
    """
    problem = trec.id_problem(run_name)
    if problem is not None:
        raise ValidationError({"name": f"not a valid run name: {problem}"})
    run = Run.objects.select_for_update().filter(collection=collection, name=run_name).first()
    if run is not None and not replace:
        raise ValidationError(
            {
                "name": f"run {run_name!r} already exists in {collection.slug}; replace it "
                "explicitly (the import page's 'Replace runs of the same name', import_run "
                "--replace, or PUT in the API)"
            }
        )
    if run is None:
        try:
            with transaction.atomic():
                return Run.objects.create(
                    collection=collection, name=run_name, owner=owner, description=description
                )
        except IntegrityError:  # created by a concurrent request: decide on that run
            run = Run.objects.select_for_update().get(collection=collection, name=run_name)
            if not replace:
                raise ValidationError(
                    {"name": f"run {run_name!r} was just created in {collection.slug}"}
                ) from None
    if may_replace is not None and not may_replace(run):
        raise PermissionDenied("System owners may change only their own runs.")
    run.rankings.all().delete()
    run.ranking_qrels.all().delete()
    run.query_scores.all().delete()
    run.run_scores.all().delete()
    run.description = description or run.description
    run.scored_at = None
    run.save()
    return run


class PackedRanking(NamedTuple):
    """One query's results as its Ranking row holds them (`ranking_packed`)."""

    size: int
    documents: bytes
    scores: bytes
    ranks: bytes


def rankings_store(collection: Collection, run: Run, results: Results) -> int:
    """Store a run's results as one packed ranking per query; returns their number."""
    query_ids = queries_ensure(collection=collection, qids=results.keys())
    doc_ids = documents_ensure(
        collection=collection,
        docnos=(docno for docs in results.values() for docno, _, _ in docs),
    )
    rows = (
        (run.id, query_ids[qid], *ranking_packed(docs, doc_ids)) for qid, docs in results.items()
    )
    bulk_insert(Ranking, RANKING_COLUMNS, rows, binary=True)
    return sum(len(docs) for docs in results.values())


def packed_rankings_store(
    collection: Collection, run: Run, rankings: Mapping[str, PackedRanking]
) -> int:
    """Store a run's rankings packed already, one row per query; the number of results."""
    query_ids = queries_ensure(collection=collection, qids=rankings.keys())
    rows = ((run.id, query_ids[qid], *packed) for qid, packed in rankings.items())
    bulk_insert(Ranking, RANKING_COLUMNS, rows, binary=True)
    return sum(packed.size for packed in rankings.values())


def ranking_packed(
    docs: Sequence[tuple[str, float | None, int | None]], doc_ids: Mapping[str, int]
) -> PackedRanking:
    """One query's results packed, documents in trec_eval's order (fixed here, once).

    An ignored rank is stored as the result's place in that order, the rank trec_eval
    gives it.
    """
    docnos, scores, ranks = zip(*ndcg.order_results(docs), strict=True)
    if None in ranks:
        ranks = tuple(place if rank is None else rank for place, rank in enumerate(ranks, start=1))
    return PackedRanking(
        len(docnos),
        ranking_bytes.pack_ids(list(map(doc_ids.__getitem__, docnos))),
        b"" if scores[0] is None else ranking_bytes.pack_scores(scores),
        ranking_bytes.pack_ranks(ranks),
    )


def column_ranking_rows(
    run_id: int,
    columns: RunColumns,
    query_ids: dict[str, int],
    doc_ids: npt.NDArray[np.int64],
) -> Iterable[tuple[object, ...]]:
    """`ranking_packed`'s rows for a file read into columns (already in effective order)."""
    ids = ranking_bytes.pack_column("q", doc_ids[columns.documents])
    scores = ranking_bytes.pack_column("d", columns.scores)
    ranks = ranking_bytes.pack_column("i", columns.ranks)
    edges = columns.bounds.tolist()
    for index, qid in enumerate(columns.qids):
        start, end = edges[index], edges[index + 1]
        yield (
            run_id,
            query_ids[qid],
            end - start,
            ids[start * 8 : end * 8],
            scores[start * 8 : end * 8],
            ranks[start * 4 : end * 4],
        )
