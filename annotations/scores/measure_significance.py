"""The all-pairs significance of each kept measure: one randomised Tukey HSD pass per measure.

nDCG@k's letters come from a second pass over its snapshot's per-query matrix
(`scores.significance`). A kept measure's board is computed when read
(`selectors.measure_values.measure_board`), but testing every pair of runs costs seconds, so
a worker runs it, one measure per task after the cutoffs' passes
(`refresh_work.significance_task`), over the measure's stored values at the current scores
stamp, and stores it in `MeasureSignificance`; pages and the API read that row and never
compute it. The test, its seed, alpha and permutation budget are nDCG@k's
(`significance.significance_compute`). The counts trec_eval sums over queries (NumRel,
NumRet, NumRelRet) get no pass, as they get no interval: their `all` value is a total, not
the mean the test compares.
"""

from __future__ import annotations

import numpy as np
from django.utils import timezone

from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import SUMMED, Measure
from annotations.models import Collection, MeasureSignificance, Query
from annotations.scores.significance import (
    SignificanceDetail,
    significance_compute,
    significance_of,
)
from annotations.selectors.leaderboards import Significance
from annotations.selectors.measure_values import measure_matrix
from annotations.selectors.scores_state import scores_state


def tested(measure: Measure) -> bool:
    """Whether the measure gets an all-pairs pass (every kept measure but the summed counts)."""
    return measure.name not in SUMMED


def tested_measures(collection: Collection) -> list[Measure]:
    """The kept measures that get an all-pairs pass, in the collection's order."""
    return [measure for measure in collection.kept_measures if tested(measure)]


def tested_measure(collection: Collection, name: str) -> Measure | None:
    """The tested kept measure stored under `name` (None: no longer kept). Found among the
    kept measures rather than parsed again, so that a pass is stored under the very name its
    being behind was found by."""
    return next(
        (measure for measure in tested_measures(collection) if format_measure(measure) == name),
        None,
    )


def measure_significance_behind(collection: Collection) -> tuple[str, str] | None:
    """The first tested kept measure (its name) whose stored pass is not at the current
    scores stamp, and that stamp; None when every one is current (or none is kept)."""
    measures = tested_measures(collection)
    if not measures:
        return None
    stamp = scores_state(collection=collection).stamp
    stored = dict(
        MeasureSignificance.objects.filter(collection=collection).values_list("measure", "stamp")
    )
    for measure in measures:
        name = format_measure(measure)
        if stored.get(name) != stamp:
            return name, stamp
    return None


def measure_significance_refresh(*, collection: Collection, measure: Measure) -> bool:
    """Run the HSD pass of one kept measure over its stored values if its stored pass is not
    at the current scores stamp, and store it; True when it computed. The stored passes of
    measures the collection no longer tests are dropped."""
    names = [format_measure(kept) for kept in tested_measures(collection)]
    MeasureSignificance.objects.filter(collection=collection).exclude(measure__in=names).delete()
    name = format_measure(measure)
    if name not in names:
        return False
    # The stamp is read before the values: a pass over values newer than its stamp is
    # computed again at the next one, never served as newer than it is.
    stamp = scores_state(collection=collection).stamp
    stored = MeasureSignificance.objects.filter(collection=collection, measure=name)
    if stored.values_list("stamp", flat=True).first() == stamp:
        return False
    matrix = measure_matrix(collection, measure)
    document, pairs = significance_compute(
        stamp=stamp, run_ids=[run_id for run_id, _, _ in matrix.runs], matrix=matrix.values
    )
    values = {
        "stamp": stamp,
        "rows": [list(run) for run in matrix.runs],
        "query_ids": matrix.query_ids,
        "per_query": np.ascontiguousarray(matrix.values, dtype="<f8").tobytes(),
        "significance": document,
        "pairs": pairs,
        "computed_at": timezone.now(),
    }
    MeasureSignificance.objects.bulk_create(
        [MeasureSignificance(collection=collection, measure=name, **values)],
        update_conflicts=True,
        unique_fields=["collection", "measure"],
        update_fields=list(values),
    )
    return True


def measure_significance_read(*, collection: Collection, measure: Measure) -> Significance | None:
    """The stored pass of a kept measure (its ``stamp`` says the scores it is for); None
    before the first. One small read: the letters, not the matrices."""
    document = (
        MeasureSignificance.objects.filter(collection=collection, measure=format_measure(measure))
        .values_list("significance", flat=True)
        .first()
    )
    return significance_of(document or {})


def measure_significance_detail(
    *, collection: Collection, measure: Measure
) -> SignificanceDetail | None:
    """What the significance page draws for a kept measure, from its stored pass (None
    before the first): the runs tested with their means, the adjusted p-values and the
    per-query matrix. ``stamp`` is the current scores stamp, so that a pass computed at
    another is marked as being recomputed. Nothing is computed."""
    stored = MeasureSignificance.objects.filter(
        collection=collection, measure=format_measure(measure)
    ).first()
    if stored is None:
        return None
    significance = significance_of(stored.significance or {})
    runs = [(int(run[0]), str(run[1]), float(run[2])) for run in stored.rows]
    row_ids = [run_id for run_id, _, _ in runs]
    count = len(row_ids)
    raw_pairs = bytes(stored.pairs)
    if (
        significance is not None
        and list(significance.run_ids) == row_ids
        and count
        and (len(raw_pairs) == 8 * count * count)
    ):
        p_adjusted = np.frombuffer(raw_pairs, dtype="<f8").reshape(count, count)
        pair_ids = row_ids
    else:
        p_adjusted, pair_ids = np.ones((0, 0)), []
    query_ids = [int(query_id) for query_id in stored.query_ids]
    raw = bytes(stored.per_query)
    if len(raw) == 8 * count * len(query_ids):
        per_query = np.frombuffer(raw, dtype="<f8").reshape(count, len(query_ids))
    else:
        per_query, query_ids = np.zeros((count, 0)), []
    labels = {
        query_id: (qid, title)
        for query_id, qid, title in Query.objects.filter(id__in=query_ids)
        .values_list("id", "qid", "title")
        .order_by()
    }
    return SignificanceDetail(
        significance=significance,
        names={run_id: name for run_id, name, _ in runs},
        means={run_id: mean for run_id, _, mean in runs},
        pair_ids=pair_ids,
        p_adjusted=p_adjusted,
        row_ids=row_ids,
        # A query deleted since the pass keeps its column until the next pass.
        queries=[labels.get(query_id, ("(deleted)", "")) for query_id in query_ids],
        per_query=per_query,
        stamp=scores_state(collection=collection).stamp,
        computed_at=stored.computed_at,
    )
