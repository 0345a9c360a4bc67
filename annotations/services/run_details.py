"""A run's description: the one part of a run changed without importing it again."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from annotations.formats import trec
from annotations.models import Run
from annotations.services.runs import RunCheck

DESCRIPTION_MAX = 10_000


def run_describe(*, run: Run, description: str, may_change: RunCheck | None = None) -> Run:
    """Set a run's description; `may_change` decides on the locked row (organisers, owner)."""
    problem = trec.text_problem(description)
    if problem is not None:
        raise ValidationError({"description": problem})
    if len(description) > DESCRIPTION_MAX:
        raise ValidationError({"description": f"at most {DESCRIPTION_MAX} characters"})
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(id=run.id)
        if may_change is not None and not may_change(locked):
            raise PermissionDenied("System owners may change only their own runs.")
        # Not `updated`: it marks a change of results (the scores stamp and bounds key on it).
        Run.objects.filter(id=locked.id).update(description=description)
    run.description = description
    return run
