"""PURE: how machine judges' grades count beside people's, by the collection's rule.

- ``"assessor"``: a machine judge is one more assessor; its grade enters the aggregation
  (median, majority, mean) with the people's.
- ``"fill"``: machine grades count only on pairs no person judged; where a person judged,
  the people's grades alone count.
- ``"people"``: machine grades are not scored (kept for comparison); a pair only a machine
  judged is unjudged, and a query only machines judged is not evaluated.

An organiser's adjudication overrides every rule, as it overrides the aggregation. A new
collection scores people only (``DEFAULT_RULE``): a machine judge's grades reach its official
scores only when an organiser chooses so. `annotations.metrics.machine_rankings` compares
the leaderboard under the rules.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from annotations.metrics import ndcg

MACHINE_RULES: tuple[str, ...] = ("assessor", "fill", "people")

# Machine grades stay out of the official scores until an organiser counts them: a judge
# that agrees poorly with people would otherwise move ranks and fill judged@k unseen.
DEFAULT_RULE = "people"

# What choosing each rule does, as forms and the API describe it.
RULE_EFFECTS: dict[str, str] = {
    "assessor": "A machine judge's grade joins the people's grades of a pair and is combined "
    "with them by the aggregation rule, as one more assessor; its pairs count as judged.",
    "fill": "People's grades alone count where a person judged a pair; a pair no person "
    "judged takes the machine judges' grade and counts as judged.",
    "people": "Only people's grades are scored: machine grades are kept for comparison, a "
    "pair only a machine judged counts as unjudged and a query only machines judged is not "
    "evaluated.",
}

# The rule as reports and pages state it beside a score, and what judged@k counts under it.
RULE_STATEMENTS: dict[str, str] = {
    "assessor": "machine judges' grades counted as one assessor among the people",
    "fill": "machine judges' grades counted on the pairs no person judged",
    "people": "people's grades only (machine judges' grades not counted)",
}
JUDGED_COUNTS: dict[str, str] = {
    "assessor": "people's and machine judges' grades",
    "fill": "people's grades, and machine judges' where no person judged",
    "people": "people's grades only",
}


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
