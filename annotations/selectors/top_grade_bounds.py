"""Each run's best case on a query: its nDCG@k had every unjudged document of its top k the
scale's highest grade (the leaderboard's *best case* column)."""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Collection as Container
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from django.db.models import Max

from annotations.metrics import ndcg
from annotations.models import Collection
from annotations.selectors import effective_grades_by_query, top_documents

BoundsByQuery = dict[int, dict[int, float]]  # query id -> run id -> top-grade nDCG@k
QUERY_BATCH = 250  # queries whose rankings are held at once
# The same as arrays per query: (run ids, their top-grade nDCG@k).
BoundArrays = dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]


def top_grade_bounds_by_query(
    *,
    collection: Collection,
    k: int,
    run_ids: Sequence[int],
    query_ids: Container[int] | None = None,
) -> BoundsByQuery:
    """query id -> run id -> nDCG@k if every unjudged document of the run's top k had the
    scale's highest grade, for the given queries (all evaluated ones when None).

    The what-if is scored like any real judging would be: the promoted documents join the
    query's ideal list too, so the value is the score the run would get had they been judged
    at the top grade. Because the ideal list grows, a run whose unjudged documents sit low in
    an already good top k can score *less* than reported; pages show both values as a range.
    A run with no unjudged document in a query's top k has no entry there: its reported
    value stands. Computed from current judgements, so while scores are pending it can be
    ahead of the stored values.
    """
    top_grade = collection.grades.aggregate(top=Max("value"))["top"]
    bounds: BoundsByQuery = defaultdict(dict)
    if top_grade is None or not run_ids:
        return bounds
    wanted = (
        sorted(set(query_ids))
        if query_ids is not None
        else list(collection.queries.order_by("id").values_list("id", flat=True))
    )
    # A batch of queries at a time: every run's top k of the batch's queries is held until
    # their grades stream by, as packed 8-byte ids (about 220 bytes a ranking at k = 20, not
    # 780 as a list of ints), so memory stays at a batch's rankings whatever the query count
    # (at 110 runs x 2,500 queries all of them at once were 85 MB at k = 20).
    for start in range(0, len(wanted), QUERY_BATCH):
        batch = wanted[start : start + QUERY_BATCH]
        rankings: dict[int, dict[int, array[int]]] = defaultdict(dict)
        for run_id, query_id, documents in top_documents(
            run_ids=list(run_ids), query_ids=batch, depth=k
        ):
            rankings[query_id][run_id] = array("q", documents)
        for query_id, grades in effective_grades_by_query(collection=collection, query_ids=batch):
            found = query_top_grade_bounds(
                rankings.pop(query_id, {}), grades, top_grade=top_grade, k=k, scheme=collection.gain
            )
            if found:
                bounds[query_id] = found
    return bounds


def query_top_grade_bounds(
    rankings: Mapping[int, Sequence[int]],
    grades: Mapping[int, int],
    *,
    top_grade: int,
    k: int,
    scheme: str,
) -> dict[int, float]:
    """run id -> one query's top-grade bound (see `top_grade_bounds_by_query`) of every run
    with an unjudged document in its top k.

    The same bits as scoring the run against all of the query's grades with its unjudged
    documents promoted, without copying those grades per run: the promoted ideal list is the
    top grade once per promoted document (no judged grade is higher), then the judged grades
    in descending order, of which IDCG@k reads at most k; the ranking's DCG reads only its
    own documents' grades."""
    best = sorted((grade for grade in grades.values() if grade > 0), reverse=True)[:k]
    found: dict[int, float] = {}
    for run_id, ranking in rankings.items():
        promoted: dict[int, int] = {}
        unjudged = 0
        for doc in ranking:
            grade = grades.get(doc)
            if grade is not None and grade >= 0:  # judged (`ndcg.is_judged`)
                promoted[doc] = grade
            else:
                promoted[doc] = top_grade
                unjudged += 1
        if not unjudged:
            continue
        ideal = ndcg.idcgs_for([top_grade] * unjudged + best, [k], scheme)
        scores = ndcg.query_scores(ranking, promoted, [k], scheme, idcgs=ideal)
        found[run_id] = scores[k].ndcg
    return found


def bound_arrays(bounds: Mapping[int, Mapping[int, float]]) -> BoundArrays:
    """`BoundsByQuery` as arrays per query: (run ids, values), read-only (a process holds
    and shares them between computations)."""
    arrays: BoundArrays = {}
    for query_id, by_run in bounds.items():
        if by_run:
            ids = np.fromiter(by_run.keys(), dtype=np.int64, count=len(by_run))
            values = np.fromiter(by_run.values(), dtype=np.float64, count=len(by_run))
            ids.setflags(write=False)
            values.setflags(write=False)
            arrays[query_id] = (ids, values)
    return arrays
