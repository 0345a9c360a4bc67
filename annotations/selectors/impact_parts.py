"""The impact model's inputs per query (rankings, grades, machine calibration), assembled."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from annotations.metrics import ndcg
from annotations.metrics.impact import UNJUDGED, DocumentPrior, QueryTop
from annotations.models import Collection, JudgeAnswer, Judgement
from annotations.selectors import effective_grades_by_query, top_documents


@dataclass(frozen=True)
class QueryRankings:
    """One query's top k of every run: ``pool`` (document ids, first seen first, runs in id
    order) and ``matrix``, the ``(runs, k)`` pool indices `QueryTop.of` takes (kept instead
    of the model's dense ``(runs, pool)`` weights: far smaller, and quick to expand)."""

    pool: list[int]
    matrix: np.ndarray


@dataclass(frozen=True)
class QueryGrades:
    """One query's grades as the model sees them: ``people``, the effective grades (the
    people's and adjudications only where machine judges graded); and where machines
    graded, ``given`` (document -> the machines' grade combined by the aggregation rule),
    ``said`` (document -> mean of the answers' probabilities of each grade, where every
    machine grade of the pair has one) and ``calibration`` (the query's share of the
    calibration counts: row the machines' grade, column the people's, on the scale)."""

    people: dict[int, int]
    given: dict[int, int]
    said: dict[int, np.ndarray]
    calibration: np.ndarray | None


def query_rankings_read(
    *, run_ids: list[int], k: int, query_ids: Iterable[int] | None = None
) -> dict[int, QueryRankings]:
    """Query id -> its runs' top k, for every query some run ranks (of `query_ids` only)."""
    index = {run_id: a for a, run_id in enumerate(run_ids)}
    rankings: dict[int, dict[int, list[int]]] = defaultdict(dict)
    wanted = None if query_ids is None else sorted(set(query_ids))
    for run_id, query_id, documents in top_documents(run_ids=run_ids, query_ids=wanted, depth=k):
        if documents:
            rankings[query_id][run_id] = documents
    found: dict[int, QueryRankings] = {}
    for query_id in sorted(rankings):
        pool: dict[int, int] = {}
        matrix = np.full((len(run_ids), k), -1, dtype=np.int64)
        for run_id in run_ids:
            for i, document_id in enumerate(rankings[query_id].get(run_id, ())[:k]):
                matrix[index[run_id], i] = pool.setdefault(document_id, len(pool))
        matrix.flags.writeable = False  # kept between refreshes, shared by their inputs
        found[query_id] = QueryRankings(pool=list(pool), matrix=matrix)
    return found


def query_grades_read(
    *,
    collection: Collection,
    query_ids: Iterable[int],
    machines: set[int],
    scale: tuple[int, ...],
) -> dict[int, QueryGrades]:
    """Query id -> its grades as the model sees them (`QueryGrades`), for `query_ids`; a
    query with nothing judged maps to empty grades."""
    wanted = sorted(set(query_ids))
    people = dict(
        effective_grades_by_query(
            collection=collection,
            query_ids=wanted,
            machine_rule="people" if machines else None,
        )
    )
    if not machines:
        return {q: QueryGrades(people.get(q, {}), {}, {}, None) for q in wanted}
    rows = Judgement.objects.filter(query_id__in=wanted, assessor_id__in=machines)
    if collection.stale_judgements == "exclude":
        rows = rows.filter(stale=False)
    sure = _answer_probabilities(collection, wanted, scale)
    machine: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    spreads: dict[int, dict[int, list[np.ndarray | None]]] = defaultdict(lambda: defaultdict(list))
    for query_id, document_id, grade, account in rows.order_by("id").values_list(
        "query_id", "document_id", "grade", "assessor_id"
    ):
        machine[query_id][document_id].append(grade)
        answer = sure.get((account, query_id, document_id))
        spreads[query_id][document_id].append(
            answer[1] if answer is not None and answer[0] == grade else None
        )
    position = {value: i for i, value in enumerate(scale)}
    found: dict[int, QueryGrades] = {}
    for query_id in wanted:
        truth = people.get(query_id, {})
        given = {
            document_id: ndcg.effective_grade(grades, collection.aggregation)
            for document_id, grades in machine.get(query_id, {}).items()
        }
        said = {
            document_id: np.mean(np.array(known, dtype=np.float64), axis=0)
            for document_id, known in spreads.get(query_id, {}).items()
            if all(spread is not None for spread in known)
        }
        counts = np.zeros((len(scale), len(scale)))
        for document_id, grade in given.items():
            person = truth.get(document_id)
            if person is not None and max(grade, 0) in position and max(person, 0) in position:
                counts[position[max(grade, 0)], position[max(person, 0)]] += 1
        found[query_id] = QueryGrades(truth, given, said, counts)
    return found


def _answer_probabilities(
    collection: Collection, query_ids: list[int], scale: tuple[int, ...]
) -> dict[tuple[int, int, int], tuple[int, np.ndarray]]:
    """(judge account, query, document) -> (grade, its probability of each grade of the
    scale) of the latest answer of each judge that tells it: from the answer's token
    log-probabilities, else from its two prompt wordings' grades."""
    found: dict[tuple[int, int, int], tuple[int, np.ndarray]] = {}
    answers = (
        JudgeAnswer.objects.filter(
            judge__collection=collection, query_id__in=query_ids, grade__isnull=False
        )
        .filter(Q(grade_probabilities__isnull=False) | Q(variant_grade__isnull=False))
        .order_by("id")
        .values_list(
            "judge__account_id", "query_id", "document_id", "grade", "grade_probabilities",
            "variant_grade",
        )
    )  # fmt: skip
    position = {value: i for i, value in enumerate(scale)}
    for account, query_id, document_id, grade, probabilities, variant in answers:
        if grade is None:
            continue
        if isinstance(probabilities, dict):
            row = np.array([float(probabilities.get(str(value), 0.0)) for value in scale])
        else:  # the two wordings' grades, half each (the same grade twice: sure of it)
            row = np.zeros(len(scale))
            for said in (grade, variant if variant is not None else grade):
                if max(said, 0) in position:
                    row[position[max(said, 0)]] += 0.5
        if row.sum() > 0:
            found[(account, query_id, document_id)] = (grade, row)
    return found


@dataclass(frozen=True)
class AssembledQueries:
    """The per-query lists of `ImpactInputs`, in query id order."""

    query_ids: list[int]
    pools: list[list[int]]
    tops: list[QueryTop]
    grades: list[np.ndarray]
    outside: list[list[int]]
    document_priors: list[dict[int, DocumentPrior]] | None


def queries_assemble(
    *,
    rankings: Mapping[int, QueryRankings],
    grades: Mapping[int, QueryGrades],
    scale: tuple[int, ...],
    machines: bool,
    counted: bool,
) -> AssembledQueries:
    """The model's per-query inputs from the queries' parts: the queries of `rankings`
    (every query some run ranks), their grades from `grades`; where machines graded, each
    machine-only pool document's calibration (`machine_priors`), whose counts are summed
    over every query of `grades` (ranked or not)."""
    query_ids = sorted(rankings)
    empty = QueryGrades({}, {}, {}, None)
    pools, tops, rows, outside = [], [], [], []
    for query_id in query_ids:
        part = rankings[query_id]
        judged = grades.get(query_id, empty).people
        row = [max(judged[doc], 0) if doc in judged else UNJUDGED for doc in part.pool]
        members = set(part.pool)
        rows.append(np.array(row, dtype=np.int64).reshape(-1))
        outside.append(sorted(max(g, 0) for doc, g in judged.items() if doc not in members))
        tops.append(QueryTop.of(part.matrix, len(part.pool)))
        pools.append(list(part.pool))
    priors = machine_priors(query_ids, pools, grades, scale, counted=counted) if machines else None
    return AssembledQueries(query_ids, pools, tops, rows, outside, priors)


def machine_priors(
    query_ids: list[int],
    pools: list[list[int]],
    grades: Mapping[int, QueryGrades],
    scale: tuple[int, ...],
    *,
    counted: bool,
) -> list[dict[int, DocumentPrior]]:
    """Per query, pool index -> the calibration of each pool document only machines graded:
    how often people gave each grade (their effective grade, adjudications included) on the
    collection's pairs where the machines' grade (combined by the aggregation rule) was the
    same as this document's; and the grade the leaderboard counts for it now (with
    `counted`). Where every machine grade of the pair came with the answer's probabilities
    of the grades (its token log-probabilities, or its two prompt wordings' grades), their
    mean goes with it (`DocumentPrior.said`). The counts are whole numbers, so their sum
    over the queries does not depend on the order."""
    matrix = np.zeros((len(scale), len(scale)))
    for query_id in sorted(grades):
        calibration = grades[query_id].calibration
        if calibration is not None:
            matrix += calibration
    position = {value: i for i, value in enumerate(scale)}
    empty = QueryGrades({}, {}, {}, None)
    found: list[dict[int, DocumentPrior]] = []
    for query_id, pool in zip(query_ids, pools, strict=True):
        own: dict[int, DocumentPrior] = {}
        part = grades.get(query_id, empty)
        for d, document_id in enumerate(pool):
            said = part.given.get(document_id)
            if said is None or document_id in part.people:
                continue
            grade_now = said if counted else None
            mean = part.said.get(document_id)
            if mean is not None:
                own[d] = DocumentPrior(counts=matrix, counted=grade_now, said=mean)
            else:
                value = max(said, 0)
                row = matrix[position[value]] if value in position else np.zeros(len(scale))
                own[d] = DocumentPrior(counts=row, counted=grade_now)
        found.append(own)
    return found
