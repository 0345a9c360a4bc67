"""Template filters that state which grades a score counts, by the machine-grade rule."""

from __future__ import annotations

from django import template

from annotations.metrics.machine_grades import JUDGED_COUNTS, RULE_STATEMENTS

register = template.Library()


@register.filter
def grades_scored(rule: str) -> str:
    """The grades scores count under `rule`, as a phrase ("people's grades only ...")."""
    return RULE_STATEMENTS.get(rule, "")


@register.filter
def judged_counts(rule: str) -> str:
    """The grades judged@k counts under `rule`, as a phrase."""
    return JUDGED_COUNTS.get(rule, "")
