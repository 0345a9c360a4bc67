"""Tests for the app's start-up: what it leaves the cycle collector to walk."""

from __future__ import annotations

import gc

from django.apps import apps


def test_start_up_objects_are_frozen_out_of_the_cycle_collector() -> None:
    """Django, the models and the app registry loaded at start-up sit in the permanent
    generation, so a full collection walks only what the process made since."""
    assert apps.ready
    assert gc.get_freeze_count() > 50_000  # about 80,000 objects after django.setup() alone
