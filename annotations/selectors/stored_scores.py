"""Stored per-query scores as vectors over a collection's evaluated queries, and a run's page."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection

from annotations.bulk import fetch_binary
from annotations.formats import score_bytes
from annotations.models import Collection, IdealScore, QueryScore, Run, RunScore
from annotations.selectors.scores_state import scores_state


@dataclass(frozen=True)
class QueryValue:
    """One run's stored scores for one evaluated query; `answered` is False for a zero-fill."""

    query_id: int
    qid: str
    title: str
    ndcg: float
    dcg: float
    judged: float
    ndcg_condensed: float
    answered: bool


@dataclass(frozen=True)
class RunScores:
    run: Run
    k: int
    ndcg: float | None
    judged: float | None
    ndcg_condensed: float | None
    queries: int
    per_query: list[QueryValue]
    pending: bool


def evaluated_queries(collection: Collection, k: int) -> list[tuple[int, str, str]]:
    """(query id, qid, title) of the queries with at least one judgement, in trec_eval's
    qid order (sorted here: a database collation may order qids otherwise), the order
    every mean sums its values in."""
    rows = IdealScore.objects.filter(query__collection=collection, k=k).values_list(
        "query_id", "query__qid", "query__title"
    )
    return sorted(rows, key=lambda row: row[1])


def _cutoff_position(collection: Collection, k: int) -> tuple[str, int, int] | None:
    """(layout, position of k, number of cutoffs) of the collection's packed rows; None if
    the collection has no cutoff k."""
    ks = collection.sorted_cutoffs
    if k not in ks:
        return None
    return score_bytes.layout(ks), ks.index(k), len(ks)


def stored_rows_at(
    collection: Collection,
    k: int,
    *,
    run_ids: Sequence[int] | None = None,
    query_ids: Sequence[int] | None = None,
    measures: int = 4,
) -> list[tuple[int, int, tuple[float, ...]]]:
    """(run, query, values at k) of the packed per-query rows of some runs or queries, in
    the collection's current layout: the first `measures` of (ndcg, dcg, judged,
    ndcg_condensed). Only the 8 bytes of each value are read (SQL substr)."""
    found = _cutoff_position(collection, k)
    run_list = list(run_ids) if run_ids is not None else None
    query_list = list(query_ids) if query_ids is not None else None
    if found is None or run_list == [] or query_list == []:
        return []
    layout, i, _ = found
    table = QueryScore._meta.db_table
    columns = score_bytes.QUERY_MEASURES[:measures]
    parts = [f"substr({column}, {8 * i + 1}, 8)" for column in columns]
    where = ["cutoffs = %s"]
    params: list[Any] = [layout]
    for column, ids in (("run_id", run_list), ("query_id", query_list)):
        if ids is not None:
            where.append(f"{column} IN ({', '.join(['%s'] * len(ids))})")
            params.extend(ids)
    sql = f"SELECT run_id, query_id, {', '.join(parts)} FROM {table} WHERE {' AND '.join(where)}"
    rows = fetch_binary(sql, params)
    if not rows:
        return []
    packed = score_bytes.floats(b"".join(bytes(part) for row in rows for part in row[2:]))
    values = packed.reshape(len(rows), measures).tolist()
    return [(row[0], row[1], tuple(v)) for row, v in zip(rows, values, strict=True)]


def stored_values(
    collection: Collection, run_ids: Sequence[int], k: int
) -> dict[int, dict[int, tuple[float, float, float, float]]]:
    """run id -> query id -> (ndcg, dcg, judged, ndcg_condensed) stored at k."""
    values: dict[int, dict[int, tuple[float, float, float, float]]] = defaultdict(dict)
    for run_id, query_id, found in stored_rows_at(collection, k, run_ids=run_ids):
        values[run_id][query_id] = found  # type: ignore[assignment]
    return values


def query_vector(
    collection: Collection, evaluated: Sequence[int], stored: dict[int, float]
) -> dict[int, float]:
    """query id -> nDCG@k over the queries that count for the run's mean.

    With ``missing_queries == "zero"`` every evaluated query counts, 0.0 where the run gave
    no result (trec_eval -c); with ``"skip"`` only the queries the run answered.
    """
    if collection.missing_queries == "zero":
        return {query_id: stored.get(query_id, 0.0) for query_id in evaluated}
    return {query_id: stored[query_id] for query_id in evaluated if query_id in stored}


def paired_values(
    first: dict[int, float], second: dict[int, float]
) -> tuple[list[float], list[float]]:
    """Two runs' values on the queries both count (all evaluated ones in zero mode)."""
    shared = [query_id for query_id in first if query_id in second]
    return [first[q] for q in shared], [second[q] for q in shared]


def is_judged(grade: int | None) -> bool:
    return grade is not None and grade >= 0


def stored_columns(
    collection: Collection, run_ids: Sequence[int], k: int, columns: Sequence[str]
) -> dict[int, tuple[list[int], list[list[float]]]]:
    """run id -> (query ids, one list of values per column) of the measures `columns`
    stored at k (``score_bytes.QUERY_MEASURES`` names).

    On PostgreSQL each run's values arrive as one row (its query ids and, per column, their
    8-byte values joined in one order), not one row per query: a few hundred rows instead
    of tens of thousands at TREC scale. The order is the one the rows were read in, the same
    for every aggregate of the row (they are fed the same rows in turn), not sorted: callers
    map values by query id, and sorting each aggregate's input apart cost more than the read.
    """
    found = _cutoff_position(collection, k)
    ids = list(run_ids)
    out: dict[int, tuple[list[int], list[list[float]]]] = {}
    if connection.vendor != "postgresql" or found is None or not ids:
        wanted = [score_bytes.QUERY_MEASURES.index(column) for column in columns]
        for run_id, query_id, at in stored_rows_at(collection, k, run_ids=ids):
            query_ids, lists = out.setdefault(run_id, ([], [[] for _ in columns]))
            query_ids.append(query_id)
            for values, m in zip(lists, wanted, strict=True):
                values.append(at[m])
        return out
    layout, i, _ = found
    joined = ", ".join(
        f"string_agg(substr({column}, {8 * i + 1}, 8), ''::bytea)" for column in columns
    )
    sql = (
        f"SELECT run_id, array_agg(query_id), {joined} "
        f"FROM {QueryScore._meta.db_table} WHERE cutoffs = %s AND run_id = ANY(%s) "
        "GROUP BY run_id"
    )
    for run_id, query_ids, *packed in fetch_binary(sql, [layout, ids]):
        out[run_id] = (list(query_ids), [score_bytes.floats(p).tolist() for p in packed])
    return out


def stored_ndcg(
    collection: Collection, run_ids: Sequence[int], k: int
) -> dict[int, dict[int, float]]:
    """run id -> query id -> nDCG@k stored at k (one read: the leaderboard's hot input)."""
    values: dict[int, dict[int, float]] = defaultdict(dict)
    for run_id, (query_ids, (ndcg,)) in stored_columns(collection, run_ids, k, ["ndcg"]).items():
        values[run_id] = dict(zip(query_ids, ndcg, strict=True))
    return values


@dataclass(frozen=True)
class RunMean:
    """A run's means at one k, computed from its stored per-query values (`run_means_at`)."""

    run: Run
    k: int
    queries: int
    ndcg: float
    ndcg_condensed: float
    judged: float
    updated: datetime

    @property
    def run_id(self) -> int:
        return self.run.id


def run_means_at(
    collection: Collection, k: int, *, runs: Sequence[Run] | None = None
) -> list[RunMean]:
    """The means at k of the collection's runs (or of `runs`); see `run_means_and_ndcg`."""
    return run_means_and_ndcg(collection, k, runs=runs)[0]


def run_means_and_ndcg(
    collection: Collection, k: int, *, runs: Sequence[Run] | None = None
) -> tuple[list[RunMean], dict[int, dict[int, float]]]:
    """The means at k of the collection's runs (or of `runs`) that have stored scores in
    the current layout, best first (nDCG@k descending, then name).

    Each mean is trec_eval's: the run's stored per-query values summed one by one in qid
    order (``ndcg.ordered_mean``; an unanswered judged query adds 0.0 in zero mode and
    is left out in skip mode), divided by the number of queries that count (every
    evaluated query in zero mode, those the run answered in skip mode). So the ``all``
    values equal trec_eval's bit for bit; nothing of them is stored. Also, from the same
    read, run id -> query id -> nDCG@k stored (what `stored_ndcg` gives), for the
    leaderboard's statistics.
    """
    found = _cutoff_position(collection, k)
    if found is None:
        return [], {}
    layout, _, _ = found
    rows = (
        RunScore.objects.filter(cutoffs=layout)
        .only("run", "updated", "run__name", "run__owner", "run__collection", "run__scored_at")
        .select_related("run", "run__owner")
    )
    if runs is not None:
        rows = rows.filter(run__in=list(runs))
    else:
        rows = rows.filter(run__collection=collection)
    stored = list(rows)
    if not stored:
        return [], {}
    order = {query_id: i for i, (query_id, _, _) in enumerate(evaluated_queries(collection, k))}
    position = {row.run_id: r for r, row in enumerate(stored)}
    # (runs, measures, queries) in qid order; 0.0 where a run has no value, which adds
    # nothing to a sequential sum (x + 0.0 == x for every x that is not -0.0)
    values = np.zeros((len(stored), 3, len(order)))
    zero = collection.missing_queries == "zero"
    counts = [len(order) if zero else 0] * len(stored)
    columns = stored_columns(
        collection, [row.run_id for row in stored], k, ["ndcg", "ndcg_condensed", "judged"]
    )
    for run_id, (query_ids, measures) in columns.items():
        places = [order.get(query_id, -1) for query_id in query_ids]
        kept = [n for n, place in enumerate(places) if place >= 0]
        if not zero:
            counts[position[run_id]] = len(kept)
        if kept:
            targets = [places[n] for n in kept]
            values[position[run_id], :, targets] = np.array(measures)[:, kept].T
    # numpy's cumsum adds left to right (no pairwise summation): its last column is the
    # sequential sum; an empty row of queries sums to 0.0.
    sums = np.cumsum(values, axis=2)[:, :, -1] if order else np.zeros((len(stored), 3))
    means = []
    for r, row in enumerate(stored):
        count = counts[r]
        ndcg, condensed, judged = (
            (float(total) / count if count else 0.0) for total in sums[r].tolist()
        )
        means.append(RunMean(row.run, k, count, ndcg, condensed, judged, row.updated))
    means.sort(key=lambda mean: (-mean.ndcg, mean.run.name))
    ndcg_by_run: dict[int, dict[int, float]] = defaultdict(dict)
    for run_id, (query_ids, (ndcg_values, _, _)) in columns.items():
        ndcg_by_run[run_id] = dict(zip(query_ids, ndcg_values, strict=True))
    return means, ndcg_by_run


def run_scores(*, run: Run, k: int) -> RunScores:
    """A run's stored per-query scores at k (zero-filled per the collection's rule) and means."""
    collection = run.collection
    evaluated = evaluated_queries(collection, k)
    stored = stored_values(collection, [run.id], k)[run.id]
    per_query: list[QueryValue] = []
    for query_id, qid, title in evaluated:
        values = stored.get(query_id)
        if values is not None:
            per_query.append(QueryValue(query_id, qid, title, *values, answered=True))
        elif collection.missing_queries == "zero":
            per_query.append(QueryValue(query_id, qid, title, 0.0, 0.0, 0.0, 0.0, answered=False))
    mean = next(iter(run_means_at(collection, k, runs=[run])), None)
    state = scores_state(collection=collection)
    return RunScores(
        run=run,
        k=k,
        ndcg=mean.ndcg if mean else None,
        judged=mean.judged if mean else None,
        ndcg_condensed=mean.ndcg_condensed if mean else None,
        queries=mean.queries if mean else 0,
        per_query=per_query,
        pending=run.scored_at is None or state.pending_queries > 0,
    )
