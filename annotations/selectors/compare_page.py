"""The compare page's comparison of two runs, cached under the scores stamp."""

from __future__ import annotations

import hashlib

from django.core.cache import cache

from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import Measure
from annotations.models import Run
from annotations.selectors.comparisons import Comparison, runs_compare
from annotations.selectors.scores_state import scores_state

CACHE_SECONDS = 600


def comparison_cached(*, a: Run, b: Run, k: int, measure: Measure | None = None) -> Comparison:
    """`runs_compare(a, b, k, measure)`, computed once per scores stamp (its 10,000 sign
    flips are the page's only real cost)."""
    collection = a.collection
    stamp = scores_state(collection=collection).stamp
    name = format_measure(measure) if measure is not None else ""
    # The stamp moves with runs too; the layout with the measure set (names hashed: any text).
    asked = hashlib.sha256(f"{collection.measures_layout}|{name}".encode()).hexdigest()[:16]
    key = f"compare:{a.collection_id}:{a.id}:{b.id}:{k}:{stamp}:{asked}"
    comparison = cache.get(key)
    if not isinstance(comparison, Comparison):
        comparison = runs_compare(a=a, b=b, k=k, measure=measure)
        cache.set(key, comparison, CACHE_SECONDS)
    return comparison


def sorted_differences(comparison: Comparison) -> dict[str, object]:
    """The chart's data: per-query differences a - b, largest first."""
    rows = sorted(comparison.rows, key=lambda row: (-row.difference, row.qid))
    return {
        "labels": [row.qid for row in rows],
        "differences": [row.difference for row in rows],
        "a": comparison.a.name,
        "b": comparison.b.name,
        "k": comparison.k,
        "measure": comparison.measure_label,
    }
