"""PURE: how machine judges' grades count beside people's, by the collection's rule.

- ``"assessor"``: a machine judge is one more assessor; its grade enters the aggregation
  (median, majority, mean) with the people's.
- ``"fill"``: machine grades count only on pairs no person judged; where a person judged,
  the people's grades alone count.
- ``"people"``: machine grades are not scored (kept for comparison); a pair only a machine
  judged is unjudged, and a query only machines judged is not evaluated.

An organiser's adjudication overrides every rule, as it overrides the aggregation.
`annotations.metrics.machine_rankings` compares the leaderboard under the rules.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from annotations.metrics import ndcg

MACHINE_RULES: tuple[str, ...] = ("assessor", "fill", "people")


def counted_grades(people: Sequence[int], machine: Sequence[int], rule: str) -> list[int]:
    """The grades of one pair that count under `rule` (empty: the pair counts as unjudged).

    Unknown rule: ``ValueError``.
    """
    if rule == "assessor":
        return [*people, *machine]
    if rule == "fill":
        return list(people) if people else list(machine)
    if rule == "people":
        return list(people)
    raise ValueError(f"unknown rule for machine grades {rule!r}; expected one of {MACHINE_RULES}")


def pair_grade(
    people: Sequence[int],
    machine: Sequence[int],
    adjudicated: int | None,
    *,
    aggregation: str,
    rule: str,
) -> int | None:
    """The effective grade of a judged pair: its adjudication, else the counted grades
    combined by `aggregation`; None when nothing counts (no judgement, or only machine
    grades under ``"people"``)."""
    if not people and not machine:
        return None
    if adjudicated is not None:
        return adjudicated
    counted = counted_grades(people, machine, rule)
    return ndcg.effective_grade(counted, aggregation) if counted else None


def assessed_pair_grade(
    grades: Iterable[tuple[int, int]],
    machines: Container[int],
    adjudicated: int | None,
    *,
    aggregation: str,
    rule: str,
) -> int | None:
    """`pair_grade` of a pair's (assessor, grade) judgements, the assessors in `machines`
    being machine judges."""
    held = list(grades)
    return pair_grade(
        [grade for assessor, grade in held if assessor not in machines],
        [grade for assessor, grade in held if assessor in machines],
        adjudicated,
        aggregation=aggregation,
        rule=rule,
    )
