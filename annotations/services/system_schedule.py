"""Search systems fetched on a schedule: the beat's sweep starts the fetches that are due."""

from __future__ import annotations

import logging
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotations.models import ImportJob, SearchSystem
from annotations.selectors.system_schedule import systems_due
from annotations.services.system_fetch import system_fetch_start

logger = logging.getLogger(__name__)


def system_fetches_sweep(*, now: datetime | None = None) -> list[ImportJob]:
    """Start a fetch of every system whose schedule is due (`systems_due`); the fetches
    started. Each is decided again under its system's row lock, so two sweeps at once start
    one fetch. A system that cannot be fetched now (no queries, a secret not set) is logged
    and tried at its next sweep."""
    at = now or timezone.now()
    started: list[ImportJob] = []
    for system_id in systems_due(now=at):
        try:
            with transaction.atomic():
                locked = (
                    SearchSystem.objects.select_for_update()
                    .select_related("collection")
                    .filter(id=system_id)
                    .first()
                )
                if locked is None or system_id not in systems_due(now=at, ids=[system_id]):
                    continue
                started.append(system_fetch_start(system=locked, created_by=None))
        except ValidationError as error:
            logger.warning("scheduled fetch of system %s not started: %s", system_id, error)
    return started
