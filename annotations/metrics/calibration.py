"""A machine judge calibrated against people: agreement, bias per grade, disputed queries."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from annotations.metrics.agreement import Agreement, agreement_between

__all__ = [
    "Calibration",
    "GradeBias",
    "Pair",
    "QueryDispute",
    "judge_calibration",
    "reference_agreement",
]

Pair = tuple[str, str]
"""A judged (query, document): the query's key first (its qid), which groups the disputes."""

ADJUDICATED = "adjudicated"
# The judge's side of its agreements (``Agreement.first``); the page names it.
JUDGE = "judge"


@dataclass(frozen=True)
class GradeBias:
    """Where a person gave ``grade``: how many comparisons, the judge's mean grade there and
    ``difference = judge_mean - grade`` (positive: the judge grades higher)."""

    grade: int
    items: int
    judge_mean: float
    difference: float


@dataclass(frozen=True)
class QueryDispute:
    """A query the judge disputes: ``pairs`` it shares with people there, and the mean over
    those pairs of each pair's ``|judge - person|`` averaged over the pair's people."""

    qid: str
    pairs: int
    mean_absolute_difference: float


@dataclass(frozen=True)
class Calibration:
    """Everything ``judge_calibration`` finds; see there for the conventions."""

    levels: list[int]
    pairs: int
    comparisons: int
    people: list[Agreement]
    adjudicated: Agreement
    bias: list[GradeBias]
    mean_difference: float | None
    queries: list[QueryDispute]


def _scale(levels: Sequence[int]) -> list[int]:
    scale = list(levels)
    if not scale:
        raise ValueError("levels must list at least one grade")
    if any(later <= earlier for earlier, later in pairwise(scale)):
        raise ValueError(f"levels must be strictly increasing, got {scale!r}")
    return scale


def _checked(grades: Mapping[Pair, int], on_scale: set[int], *, whose: str) -> None:
    for pair, grade in grades.items():
        if grade not in on_scale:
            raise ValueError(f"{whose}, pair {pair!r}: grade {grade!r} is not one of the levels")


def reference_agreement(
    reference: str, graded: Sequence[tuple[int, int]], levels: Sequence[int]
) -> Agreement:
    """The judge (first) against ``reference``: ``agreement_between`` on ``(judge's grade,
    reference's grade)`` tuples, the scale checked."""
    return agreement_between(JUDGE, reference, graded, _scale(levels))


def _disputes(
    differences: Mapping[Pair, list[int]], *, top: int, min_pairs: int
) -> list[QueryDispute]:
    by_query: dict[str, list[float]] = defaultdict(list)
    for (qid, _), absolute in differences.items():
        by_query[qid].append(math.fsum(absolute) / len(absolute))
    found = [
        QueryDispute(qid=qid, pairs=len(values), mean_absolute_difference=mean)
        for qid, values in by_query.items()
        if len(values) >= min_pairs and (mean := math.fsum(values) / len(values)) > 0
    ]
    found.sort(key=lambda d: (-d.mean_absolute_difference, -d.pairs, d.qid))
    return found[:top]


def judge_calibration(
    *,
    judge: Mapping[Pair, int],
    people: Mapping[str, Mapping[Pair, int]],
    adjudicated: Mapping[Pair, int],
    levels: Sequence[int],
    top: int = 10,
    min_pairs: int = 2,
) -> Calibration:
    """Calibrate a judge's grades (``judge``: pair -> grade) against each person's
    (``people``: name -> pair -> grade) and the adjudicated grades.

    Conventions:
    - A *comparison* is one (pair, person) both the judge and that person graded; a pair two
      people graded is two comparisons. ``pairs`` counts the distinct pairs behind them.
    - ``people`` lists, by name, each person with at least one pair in common (no entry for
      a person with none); ``adjudicated`` is the judge against the adjudicated grades, with
      ``items`` 0 when it graded no adjudicated pair (an object either way: the API's schema
      has no nullable object). Kappa and alpha as ``reference_agreement`` gives them.
    - ``bias``: per grade a person gave (ascending, only grades given on common pairs), the
      judge's mean grade over those comparisons and the mean difference judge - person, in
      grade values (not level positions). ``mean_difference`` is the mean of judge - person
      over every comparison, None without one.
    - ``queries``: the ``top`` queries with at least ``min_pairs`` common pairs and a mean
      absolute difference above 0, highest first (then more pairs, then qid). Each pair's
      absolute difference is averaged over its people first, so every pair weighs the same.

    Grades must be on ``levels`` (strictly increasing, at least one): any other is a
    ``ValueError``, as are ``top`` below 0 and ``min_pairs`` below 1.
    """
    scale = _scale(levels)
    if top < 0:
        raise ValueError(f"top must be 0 or more, got {top!r}")
    if min_pairs < 1:
        raise ValueError(f"min_pairs must be at least 1, got {min_pairs!r}")
    on_scale = set(scale)
    _checked(judge, on_scale, whose="judge")
    _checked(adjudicated, on_scale, whose=ADJUDICATED)
    for name, grades in people.items():
        _checked(grades, on_scale, whose=f"person {name!r}")

    agreements: list[Agreement] = []
    differences: dict[Pair, list[int]] = defaultdict(list)
    judge_by_grade: dict[int, list[int]] = defaultdict(list)
    signed: list[int] = []
    for name in sorted(people):
        grades = people[name]
        common = sorted(pair for pair in grades if pair in judge)
        if not common:
            continue
        graded = [(judge[pair], grades[pair]) for pair in common]
        agreements.append(reference_agreement(name, graded, scale))
        for pair, (mine, theirs) in zip(common, graded, strict=True):
            differences[pair].append(abs(mine - theirs))
            judge_by_grade[theirs].append(mine)
            signed.append(mine - theirs)

    settled = [(judge[pair], adjudicated[pair]) for pair in sorted(adjudicated) if pair in judge]
    bias = [
        GradeBias(
            grade=grade,
            items=len(given),
            judge_mean=math.fsum(given) / len(given),
            difference=math.fsum(given) / len(given) - grade,
        )
        for grade, given in sorted(judge_by_grade.items())
    ]
    return Calibration(
        levels=scale,
        pairs=len(differences),
        comparisons=len(signed),
        people=agreements,
        adjudicated=reference_agreement(ADJUDICATED, settled, scale),
        bias=bias,
        mean_difference=math.fsum(signed) / len(signed) if signed else None,
        queries=_disputes(differences, top=top, min_pairs=min_pairs),
    )
