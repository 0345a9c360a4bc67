"""The impact model's inputs read from the database, and its stored results for pages."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from annotations.metrics import ndcg
from annotations.metrics.impact import (
    UNJUDGED,
    DocumentPrior,
    ImpactResult,
    QueryTop,
    impact_compute,
)
from annotations.models import Collection, ImpactSnapshot, JudgeAnswer, Judgement, Run
from annotations.selectors import effective_grades_by_query, top_documents
from annotations.selectors.grades import machine_accounts


@dataclass(frozen=True)
class ImpactInputs:
    """What `annotations.metrics.impact.impact_compute` needs for a collection at cutoff k.

    ``run_ids`` (the rows of every ``QueryTop``) and ``query_ids`` (one ``QueryTop`` each:
    every query some run ranks) are in id order; ``pools[q]`` are the document ids of query
    ``q``'s pool (every document in some run's top k, first seen first, runs in id order),
    ``grades[q]`` their effective grades (``UNJUDGED`` when unjudged), ``outside[q]`` the
    grades of the query's judged documents in no run's top k. A negative grade (judged,
    counts as unjudged in scoring) enters the model as 0: judged, no gain. ``scale`` is the
    collection's grade values, negative ones as 0, and ``scheme`` its gain. Where machine
    judges graded, ``grades`` are the people's (and adjudications) only and
    ``document_priors[i]`` holds the calibration of query ``i``'s pool documents only a
    machine graded (`machine_priors`).
    """

    k: int
    run_ids: list[int]
    query_ids: list[int]
    pools: list[list[int]]
    tops: list[QueryTop]
    grades: list[np.ndarray]
    outside: list[list[int]]
    scale: tuple[int, ...]
    scheme: str
    document_priors: list[dict[int, DocumentPrior]] | None = None


def impact_inputs(
    *, collection: Collection, k: int, query_ids: Iterable[int] | None = None
) -> ImpactInputs:
    """The runs' top k per query from the stored rankings, the effective grades, the scale
    (of every query, or of `query_ids` only)."""
    run_ids = sorted(Run.objects.filter(collection=collection).values_list("id", flat=True))
    index = {run_id: a for a, run_id in enumerate(run_ids)}
    rankings: dict[int, dict[int, list[int]]] = defaultdict(dict)
    wanted = None if query_ids is None else sorted(set(query_ids))
    for run_id, query_id, documents in top_documents(run_ids=run_ids, query_ids=wanted, depth=k):
        if documents:
            rankings[query_id][run_id] = documents
    machines = machine_accounts(collection)
    people_only = "people" if machines else None
    graded = dict(
        effective_grades_by_query(
            collection=collection, query_ids=list(rankings), machine_rule=people_only
        )
    )
    query_ids = sorted(rankings)
    pools: list[list[int]] = []
    tops: list[QueryTop] = []
    grades: list[np.ndarray] = []
    outside: list[list[int]] = []
    for query_id in query_ids:
        pool: dict[int, int] = {}
        matrix = np.full((len(run_ids), k), -1, dtype=np.int64)
        for run_id in run_ids:
            for i, document_id in enumerate(rankings[query_id].get(run_id, ())[:k]):
                matrix[index[run_id], i] = pool.setdefault(document_id, len(pool))
        judged = graded.get(query_id, {})
        row = [max(judged[doc], 0) if doc in judged else UNJUDGED for doc in pool]
        grades.append(np.array(row, dtype=np.int64).reshape(-1))
        outside.append(sorted(max(g, 0) for doc, g in judged.items() if doc not in pool))
        tops.append(QueryTop.of(matrix, len(pool)))
        pools.append(list(pool))
    values = collection.grades.values_list("value", flat=True)
    scale = tuple(sorted({max(value, 0) for value in values} or {0}))
    document_priors = (
        machine_priors(collection, query_ids, pools, graded, scale, machines) if machines else None
    )
    return ImpactInputs(
        k=k,
        run_ids=run_ids,
        query_ids=query_ids,
        pools=pools,
        tops=tops,
        grades=grades,
        outside=outside,
        scale=scale,
        scheme=collection.gain,
        document_priors=document_priors,
    )


def machine_priors(
    collection: Collection,
    query_ids: list[int],
    pools: list[list[int]],
    people: dict[int, dict[int, int]],
    scale: tuple[int, ...],
    machines: set[int],
) -> list[dict[int, DocumentPrior]]:
    """Per query, pool index -> the calibration of each pool document only machines graded:
    how often people gave each grade (their effective grade, adjudications included) on the
    collection's pairs where the machines' grade (combined by the aggregation rule) was the
    same as this document's; and the grade the leaderboard counts for it now. Where every
    machine grade of the pair came with the answer's probabilities of the grades (its token
    log-probabilities, or its two prompt wordings' grades), their mean goes with it
    (`DocumentPrior.said`)."""
    rows = Judgement.objects.filter(query__collection=collection, assessor_id__in=machines)
    if collection.stale_judgements == "exclude":
        rows = rows.filter(stale=False)
    sure = _answer_probabilities(collection, scale)
    machine: dict[tuple[int, int], list[int]] = defaultdict(list)
    spreads: dict[tuple[int, int], list[np.ndarray | None]] = defaultdict(list)
    for query_id, document_id, grade, account in rows.values_list(
        "query_id", "document_id", "grade", "assessor_id"
    ):
        machine[(query_id, document_id)].append(grade)
        answer = sure.get((account, query_id, document_id))
        spreads[(query_id, document_id)].append(
            answer[1] if answer is not None and answer[0] == grade else None
        )
    given = {
        pair: ndcg.effective_grade(grades, collection.aggregation)
        for pair, grades in machine.items()
    }
    position = {value: i for i, value in enumerate(scale)}
    calibrating = sorted({query_id for query_id, _ in given} - set(people))
    truth = {**people, **dict(effective_grades_by_query(
        collection=collection, query_ids=calibrating, machine_rule="people"
    ))} if calibrating else people  # fmt: skip
    counts: dict[int, np.ndarray] = defaultdict(lambda: np.zeros(len(scale)))
    for (query_id, document_id), grade in given.items():
        person = truth.get(query_id, {}).get(document_id)
        if person is not None and max(grade, 0) in position and max(person, 0) in position:
            counts[max(grade, 0)][position[max(person, 0)]] += 1
    matrix = np.array([counts[value] for value in scale])
    counted = collection.machine_grades != "people"
    found: list[dict[int, DocumentPrior]] = []
    for query_id, pool in zip(query_ids, pools, strict=True):
        own: dict[int, DocumentPrior] = {}
        judged = people.get(query_id, {})
        for d, document_id in enumerate(pool):
            said = given.get((query_id, document_id))
            if said is None or document_id in judged:
                continue
            grade_now = said if counted else None
            known = spreads[(query_id, document_id)]
            if all(spread is not None for spread in known):
                mean = np.mean(np.array(known, dtype=np.float64), axis=0)
                own[d] = DocumentPrior(counts=matrix, counted=grade_now, said=mean)
            else:
                own[d] = DocumentPrior(counts=counts[max(said, 0)], counted=grade_now)
        found.append(own)
    return found


def _answer_probabilities(
    collection: Collection, scale: tuple[int, ...]
) -> dict[tuple[int, int, int], tuple[int, np.ndarray]]:
    """(judge account, query, document) -> (grade, its probability of each grade of the
    scale) of the latest answer of each judge that tells it: from the answer's token
    log-probabilities, else from its two prompt wordings' grades."""
    found: dict[tuple[int, int, int], tuple[int, np.ndarray]] = {}
    answers = (
        JudgeAnswer.objects.filter(judge__collection=collection, grade__isnull=False)
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


def impact_of(inputs: ImpactInputs) -> ImpactResult | None:
    """The model's result for these inputs; None with no run or no ranked query."""
    if not inputs.run_ids or not inputs.query_ids:
        return None
    return impact_compute(
        inputs.tops,
        inputs.grades,
        scale=inputs.scale,
        scheme=inputs.scheme,
        outside_grades=inputs.outside,
        document_priors=inputs.document_priors,
    )


@dataclass(frozen=True)
class AdjacentPair:
    """Two neighbours on the leaderboard: can more judging still flip them, and how many
    unjudged pairs of impact-ordered pools could move them."""

    upper: str
    lower: str
    can_flip: bool
    queued: int


@dataclass(frozen=True)
class FlipState:
    """The leaderboard's flip marks as stored (``stamp``: the leaderboard's they belong to)."""

    pairs: list[AdjacentPair]
    stamp: str
    digest: str = ""  # of the stored marks: the page's cache key for their table

    @property
    def decided(self) -> bool:
        """No adjacent pair can flip (and there is at least one pair)."""
        return bool(self.pairs) and not any(pair.can_flip for pair in self.pairs)


def flip_state_stored(*, collection: Collection, k: int) -> FlipState | None:
    """The stored flip marks at k (one row), None when never computed."""
    row = (
        ImpactSnapshot.objects.filter(collection=collection, k=k)
        .values_list("adjacent", "leaderboard_stamp")
        .first()
    )
    if row is None:
        return None
    adjacent, stamp = row
    pairs = [
        AdjacentPair(
            upper=item["upper"],
            lower=item["lower"],
            can_flip=bool(item["can_flip"]),
            queued=int(item["queued"]),
        )
        for item in adjacent
        if isinstance(item, dict)
    ]
    digest = hashlib.blake2s(repr(pairs).encode(), digest_size=16).hexdigest()
    return FlipState(pairs=pairs, stamp=stamp, digest=digest)
