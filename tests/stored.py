"""Stored scores unpacked per cutoff, for assertions: one row per (run, query, k) or (run, k);
the kept measures' values beside trec_eval's; and random judgement changes that move them."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pytrec_eval

from annotations import selectors, services
from annotations.formats import score_bytes
from annotations.metrics.measure_names import parse_measure
from annotations.models import Collection, Document, Judgement, Query, QueryScore, Run, RunScore
from annotations.selectors import measure_values, stored_scores

# A kept measure -> (trec_eval's measure as pytrec_eval is asked for it, the key of its value,
# trec_eval's relevance level -l).
TrecNames = Mapping[str, tuple[str, str, int]]


def query_rows(**filters: Any) -> list[tuple[str, str, score_bytes.QueryValues]]:
    """(run name, qid, values at one k) of every stored per-query score matching `filters`
    (QueryScore lookups, e.g. run=..., query__qid=...), every cutoff unpacked."""
    rows = QueryScore.objects.filter(**filters).values_list(
        "run__name", "query__qid", "cutoffs", *score_bytes.QUERY_MEASURES
    )
    return [
        (run, qid, values)
        for run, qid, cutoffs, *columns in rows
        for values in score_bytes.query_values(cutoffs, *columns).values()
    ]


def query_score(*, k: int, **filters: Any) -> score_bytes.QueryValues:
    """The stored scores at k of the one (run, query) matching `filters`."""
    return QueryScore.objects.get(**filters).at(k)


def ndcg_by_key(**filters: Any) -> dict[tuple[str, str, int], float]:
    """(run name, qid, k) -> stored nDCG@k."""
    return {(run, qid, values.k): values.ndcg for run, qid, values in query_rows(**filters)}


class Means(NamedTuple):
    """A run's means at one k as every reader computes them (`stored_scores.run_means_at`)."""

    k: int
    queries: int
    ndcg: float
    ndcg_condensed: float
    judged: float


def run_rows(**filters: Any) -> list[tuple[str, Means]]:
    """(run name, means at one k) of every run scored in its collection's current cutoffs
    among the RunScore rows matching `filters`, at every cutoff."""
    found = []
    for row in RunScore.objects.filter(**filters).select_related("run__collection"):
        collection = row.run.collection
        for k in collection.sorted_cutoffs:
            for mean in stored_scores.run_means_at(collection, k, runs=[row.run]):
                found.append((row.run.name, _means(mean)))
    return found


def run_score(*, k: int, **filters: Any) -> Means:
    """The means at k of the one scored run matching `filters` (KeyError if it has none)."""
    row = RunScore.objects.select_related("run__collection").get(**filters)
    means = stored_scores.run_means_at(row.run.collection, k, runs=[row.run])
    if not means:
        raise KeyError(k)
    return _means(means[0])


def _means(mean: stored_scores.RunMean) -> Means:
    return Means(mean.k, mean.queries, mean.ndcg, mean.ndcg_condensed, mean.judged)


def packed_query_fields(ks: Sequence[int], **values: float) -> dict[str, Any]:
    """The packed fields (cutoffs, one column per measure) of a per-query row holding the values
    at every cutoff in `ks` (measure -> value, each of QUERY_MEASURES; 0.0 where absent),
    for QueryScore.objects.create(run=..., query=..., **fields)."""
    unknown = set(values) - set(score_bytes.QUERY_MEASURES)
    if unknown:
        raise ValueError(f"not a per-query measure: {sorted(unknown)}")
    matrix = np.array(
        [[float(values.get(measure, 0.0))] * len(ks) for measure in score_bytes.QUERY_MEASURES]
    )
    columns = score_bytes.pack_query(matrix)
    return {
        "cutoffs": score_bytes.layout(ks),
        **dict(zip(score_bytes.QUERY_MEASURES, columns, strict=True)),
    }


def packed_run_fields(ks: Sequence[int]) -> dict[str, Any]:
    """The fields of a run's RunScore row in the layout of `ks`, for
    RunScore.objects.create(run=..., **fields)."""
    return {"cutoffs": score_bytes.layout(ks)}


def rewrite_query_scores(*, k: int, values: Mapping[str, float], **filters: Any) -> int:
    """Overwrite, in their packed bytes, the stored values at k (measure -> value, e.g.
    {"ndcg": 0.5}) of every (run, query) matching `filters`: the values at the other cutoffs
    and the other measures stay as they were (a stored value gone wrong on purpose). The
    number of rows rewritten; KeyError if a row has no value at k."""
    rows = list(QueryScore.objects.filter(**filters))
    for row in rows:
        where = score_bytes.position(row.cutoffs, k)
        if where is None:
            raise KeyError(k)
        columns = [getattr(row, measure) for measure in score_bytes.QUERY_MEASURES]
        matrix = score_bytes.unpack_query(*columns).copy()
        for measure, value in values.items():
            matrix[score_bytes.QUERY_MEASURES.index(measure), where] = value
        for measure, column in zip(
            score_bytes.QUERY_MEASURES, score_bytes.pack_query(matrix), strict=True
        ):
            setattr(row, measure, column)
        row.save(update_fields=list(score_bytes.QUERY_MEASURES))
    return len(rows)


def packed_query_rows(**filters: Any) -> dict[int, tuple[Any, ...]]:
    """QueryScore id -> (cutoffs, one column per measure) as stored, bytes compared bit for
    bit."""
    return {
        pk: (cutoffs, *map(bytes, columns))
        for pk, cutoffs, *columns in QueryScore.objects.filter(**filters).values_list(
            "id", "cutoffs", *score_bytes.QUERY_MEASURES
        )
    }


def judge_at_random(
    rng: random.Random,
    queries: Sequence[Query],
    documents: Sequence[Document],
    assessors: Sequence[Any],
    *,
    delete_share: float,
) -> None:
    """One random judgement change through the services: a grade recorded for a random
    pair and assessor, or (with probability `delete_share`) their judgement deleted."""
    query, document = rng.choice(queries), rng.choice(documents)
    assessor = rng.choice(assessors)
    existing = Judgement.objects.filter(query=query, document=document, assessor=assessor).first()
    if existing is not None and rng.random() < delete_share:
        services.judgement_delete(judgement=existing, source="api")
    else:
        services.judgement_record(
            query=query,
            document=document,
            assessor=assessor,
            grade=rng.randint(0, 3),
            source="api",
        )


def trec_eval_values(collection: Collection, names: TrecNames) -> dict[tuple[str, str, str], float]:
    """(run, qid, measure) -> pytrec_eval's value on the effective qrels of every kept measure
    (named in `names`), for every judged query: 0 for one the run did not answer (trec_eval
    -c)."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, docno, grade in selectors.qrels_rows(collection=collection):
        qrels.setdefault(qid, {})[docno] = grade
    out: dict[tuple[str, str, str], float] = {}
    if not qrels:
        return out
    for run in Run.objects.filter(collection=collection):
        ranking: dict[str, dict[str, float]] = {}
        for qid, docno, _, score, _ in selectors.run_rows(run=run):
            ranking.setdefault(qid, {})[docno] = score
        for name in collection.measures:
            asked, key, level = names[name]
            evaluator = pytrec_eval.RelevanceEvaluator(qrels, {asked}, relevance_level=level)
            result = evaluator.evaluate(ranking)
            for qid in qrels:
                out[(run.name, qid, name)] = result[qid][key] if qid in result else 0.0
    return out


def kept_values(collection: Collection) -> dict[tuple[str, str, str], float]:
    """(run, qid, measure) -> the stored value of every kept measure as the run-scores read
    gives it."""
    out: dict[tuple[str, str, str], float] = {}
    for run in Run.objects.filter(collection=collection):
        for name in collection.measures:
            rows, _ = measure_values.run_measure_values(collection, parse_measure(name), run)
            assert rows is not None, f"{run.name} {name} pending"
            for qid, value, _ in rows:
                out[(run.name, qid, name)] = value
    return out
