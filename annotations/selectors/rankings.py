"""Runs' rankings of a query as scoring reads them (whole, or the in-row heads), top documents."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from django.db import connection, models
from django.db.models.functions import Substr

from annotations.bulk import fetch_binary
from annotations.formats import ranking_bytes
from annotations.models import (
    HEAD_IDS,
    Collection,
    Ranking,
    RankingQrels,
)

if TYPE_CHECKING:
    pass


def query_rankings(
    *,
    query_id: int,
    depth: int | None = None,
    run_ids: Iterable[int] | None = None,
) -> dict[int, list[int]]:
    """Run id -> document ids in effective order for one query (the top `depth` if given)."""
    sql = f"SELECT run_id, documents FROM {Ranking._meta.db_table} WHERE query_id = %s"
    params: list[object] = [query_id]
    if run_ids is not None:
        wanted = list(run_ids)
        if not wanted:
            return {}
        sql += f" AND run_id IN ({', '.join(['%s'] * len(wanted))})"
        params.extend(wanted)
    # The hottest read of the platform (every judgement): raw SQL, bytea fetched in binary.
    return {
        run_id: ranking_bytes.unpack_ids(documents, depth)
        for run_id, documents in fetch_binary(sql, params)
    }


# Scoring first reads this many times max(k) documents of each ranking; the condensed list
# (unjudged documents removed) rarely needs more, and rankings that do are read whole.
SCORING_PREFIX_FACTOR = 4
_TABLE_SPAN = 1 << 22


def _prefix(depth: int, needed: int | None) -> int | None:
    """How many ids of each ranking scoring reads first (None: all of them)."""
    return None if needed is None else max(depth * SCORING_PREFIX_FACTOR, needed)


def scoring_rankings_statement(
    *, query_id: int, depth: int, run_ids: Iterable[int] | None = None, needed: int | None = 0
) -> tuple[str, list[Any]] | None:
    """The read behind `scoring_rankings` (None: no run asked for); fetch it in binary."""
    prefix = _prefix(depth, needed)
    substring = "substring" if connection.vendor == "postgresql" else "substr"
    table = Ranking._meta.db_table
    params: list[Any]
    if prefix is None:
        sql = f"SELECT run_id, size, documents FROM {table} WHERE query_id = %s"
        params = [query_id]
    else:
        # The copy of the top kept inside the row when it is deep enough, else the prefix
        # of the whole (out-of-line) ranking.
        column = "head" if prefix <= HEAD_IDS else "documents"
        sql = f"SELECT run_id, size, {substring}({column}, 1, %s) FROM {table} WHERE query_id = %s"
        params = [prefix * 8, query_id]
    if run_ids is not None:
        wanted = list(run_ids)
        if not wanted:
            return None
        sql += f" AND run_id IN ({', '.join(['%s'] * len(wanted))})"
        params.extend(wanted)
    return sql, params


def ranking_heads_statement(*, query_id: int) -> tuple[str, list[Any]]:
    """One query's rankings of every run with their kept qrels ranks (see `RankingQrels`):
    rows of (run, size, head, ranking id, and the kept ranks' ranking id, digest and ranks,
    NULL where none are kept). The copy of the top (see `Ranking.head`) comes only where no
    ranks are kept (else NULL): scoring reads one or the other (a collection whose measures
    read whole rankings keeps ranks for all of them). Fetch them in binary."""
    return _with_kept_ranks("CASE WHEN x.ranking_id IS NULL THEN r.head END", query_id, None)


def whole_rankings(
    *, query_id: int, run_ids: Iterable[int] | None = None
) -> list[tuple[int, int, bytes, int, int | None, bytes | None, bytes | None]]:
    """One query's rankings read whole, with their kept qrels ranks: rows of (run, size,
    packed document ids, ranking id, and the kept ranks' ranking id, digest and ranks, NULL
    where none are kept); the rankings of `run_ids` only, if given."""
    wanted = None if run_ids is None else list(run_ids)
    if wanted == []:
        return []
    return fetch_binary(*_with_kept_ranks("r.documents", query_id, wanted))


def _with_kept_ranks(
    column: str, query_id: int, run_ids: list[int] | None
) -> tuple[str, list[Any]]:
    table, kept = Ranking._meta.db_table, RankingQrels._meta.db_table
    sql = (
        f"SELECT r.run_id, r.size, {column}, r.id, x.ranking_id, x.digest, x.ranks "
        f"FROM {table} r LEFT JOIN {kept} x ON x.query_id = r.query_id AND x.run_id = r.run_id "
        "WHERE r.query_id = %s"
    )
    params: list[Any] = [query_id]
    if run_ids is not None:
        sql += f" AND r.run_id IN ({', '.join(['%s'] * len(run_ids))})"
        params.extend(run_ids)
    return sql, params


def rankings_by_id(ranking_ids: list[int]) -> dict[int, npt.NDArray[np.int64]]:
    """Ranking id -> its document ids, read whole (rankings deleted meanwhile are absent)."""
    if not ranking_ids:
        return {}
    marks = ", ".join(["%s"] * len(ranking_ids))
    rows = fetch_binary(
        f"SELECT id, documents FROM {Ranking._meta.db_table} WHERE id IN ({marks})", ranking_ids
    )
    return {ranking_id: ranking_bytes.unpack_id_array(documents) for ranking_id, documents in rows}


def scoring_rankings_from_rows(
    rows: Iterable[tuple[int, int, bytes]],
    *,
    query_id: int,
    depth: int,
    grades: Mapping[int, int],
    needed: int | None = 0,
) -> dict[int, npt.NDArray[np.int64]]:
    """Rankings (arrays of document ids) from rows of (run, size, prefix of the packed ids);
    only the first `depth` times SCORING_PREFIX_FACTOR ids are used (at least `needed`, the
    depth the collection's other measures read; None: all), and the few rankings whose
    prefix holds too few judged documents, or fewer than `needed` ids, are read whole."""
    graded = np.fromiter(grades.keys(), dtype=np.int64, count=len(grades))
    values = np.fromiter(grades.values(), dtype=np.int64, count=len(grades))
    judged = graded[values >= 0]  # ndcg.is_judged
    rankings: dict[int, npt.NDArray[np.int64]] = {}
    prefix = _prefix(depth, needed)
    sizes: list[int] = []
    for run_id, size, documents in rows:
        rankings[run_id] = ranking_bytes.unpack_id_array(documents, prefix)
        sizes.append(size)
    if not rankings:
        return rankings
    # Judged documents in each prefix, all runs at once.
    arrays = list(rankings.values())
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    # A lookup table over the judged ids' span is ten times faster than sorting, and small
    # for the ids of one query's judgements; very spread ids are sorted instead.
    span = int(judged.max() - judged.min()) if judged.size else 0
    found = np.isin(np.concatenate(arrays), judged, kind="table" if span < _TABLE_SPAN else "sort")
    hits = np.concatenate(([0], np.cumsum(found)))
    ends = np.cumsum(lengths)
    seen = hits[ends] - hits[ends - lengths]
    short = [
        run_id
        for run_id, size, length, count in zip(rankings, sizes, lengths, seen, strict=True)
        if size > length and (count < depth or needed is None or length < needed)
    ]
    if short:
        statement = scoring_rankings_statement(
            query_id=query_id, depth=depth, run_ids=short, needed=None
        )
        assert statement is not None
        # Straight into arrays: a query's whole rankings as Python ints cost more than
        # reading them (measured by bench_scoring.py's measure set).
        for run_id, _, documents in fetch_binary(*statement):
            rankings[run_id] = ranking_bytes.unpack_id_array(documents)
    return rankings


def scoring_rankings(
    *,
    query_id: int,
    depth: int,
    grades: Mapping[int, int],
    run_ids: Iterable[int] | None = None,
    needed: int | None = 0,
) -> dict[int, npt.NDArray[np.int64]]:
    """Run id -> as much of each ranking as scoring at cutoffs up to `depth` needs.

    nDCG@k and judged@k need the top `depth` documents; the condensed list needs the first
    `depth` judged ones; the collection's other measures the top `needed` (None: whole
    rankings). A prefix of every ranking is read (SQL substring: with uncompressed storage
    only those bytes are fetched), then the few rankings whose prefix holds fewer than
    `depth` judged documents are read whole.
    """
    statement = scoring_rankings_statement(
        query_id=query_id, depth=depth, run_ids=run_ids, needed=needed
    )
    if statement is None:
        return {}
    return scoring_rankings_from_rows(
        fetch_binary(*statement), query_id=query_id, depth=depth, grades=grades, needed=needed
    )


def top_documents(
    *,
    run_ids: Iterable[int] | None = None,
    query_ids: Iterable[int] | None = None,
    collection: Collection | None = None,
    depth: int | None = None,
) -> Iterator[tuple[int, int, list[int]]]:
    """(run id, query id, document ids in effective order, cut at `depth`) per ranking.

    The reads of pooling, bounds and side-by-side pages; streamed in (run, query) order.
    """
    rows = Ranking.objects.all()
    if collection is not None:
        rows = rows.filter(run__collection=collection)
    if run_ids is not None:
        rows = rows.filter(run_id__in=list(run_ids))
    if query_ids is not None:
        rows = rows.filter(query_id__in=list(query_ids))
    if depth is not None:
        # Only the top `depth` ids leave the database (8 bytes each), not whole rankings.
        rows = rows.annotate(
            top=Substr("documents", 1, depth * 8, output_field=models.BinaryField())
        )
    column = "documents" if depth is None else "top"
    for run_id, query_id, documents in (
        rows.order_by("run_id", "query_id")
        .values_list("run_id", "query_id", column)
        .iterator(chunk_size=500)
    ):
        yield run_id, query_id, ranking_bytes.unpack_ids(documents, depth)
