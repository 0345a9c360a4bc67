"""The impact model's inputs read from the database, and its stored results for pages."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from annotations.metrics.impact import DocumentPrior, ImpactResult, QueryTop, impact_compute
from annotations.models import Collection, ImpactSnapshot, Query, Run
from annotations.selectors.grades import machine_accounts
from annotations.selectors.impact_parts import (
    QueryGrades,
    QueryRankings,
    queries_assemble,
    query_grades_read,
    query_rankings_read,
)


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
    (of every query, or of `query_ids` only), read from scratch."""
    run_ids = sorted(Run.objects.filter(collection=collection).values_list("id", flat=True))
    rankings = query_rankings_read(run_ids=run_ids, k=k, query_ids=query_ids)
    machines = machine_accounts(collection)
    scale = grade_scale(collection)
    graded = set(rankings)
    if machines:  # the calibration is over every query the machines graded
        everything = Query.objects.filter(collection=collection).values_list("id", flat=True)
        graded |= set(everything)
    grades = query_grades_read(
        collection=collection, query_ids=graded, machines=machines, scale=scale
    )
    return impact_inputs_assemble(
        collection=collection,
        k=k,
        run_ids=run_ids,
        rankings=rankings,
        grades=grades,
        scale=scale,
        machines=bool(machines),
    )


def grade_scale(collection: Collection) -> tuple[int, ...]:
    """The collection's grade values, negative ones as 0, sorted (the model's scale)."""
    values = collection.grades.values_list("value", flat=True)
    return tuple(sorted({max(value, 0) for value in values} or {0}))


def impact_inputs_assemble(
    *,
    collection: Collection,
    k: int,
    run_ids: list[int],
    rankings: Mapping[int, QueryRankings],
    grades: Mapping[int, QueryGrades],
    scale: tuple[int, ...],
    machines: bool,
) -> ImpactInputs:
    """`ImpactInputs` from the queries' parts (read now or kept since, `impact_held`)."""
    queries = queries_assemble(
        rankings=rankings,
        grades=grades,
        scale=scale,
        machines=machines,
        counted=collection.machine_grades != "people",
    )
    return ImpactInputs(
        k=k,
        run_ids=list(run_ids),
        query_ids=queries.query_ids,
        pools=queries.pools,
        tops=queries.tops,
        grades=queries.grades,
        outside=queries.outside,
        scale=scale,
        scheme=collection.gain,
        document_priors=queries.document_priors,
    )


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
