"""Runs and collections rescored from scratch, verified against storage; stale ones healed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotations import scoring, selectors
from annotations.bulk import (
    bulk_delete,
    bulk_insert,
    bulk_update,
)
from annotations.models import Collection, IdealScore, Query, QueryScore, Run, RunScore
from annotations.scores.computing import (
    QUERY_SCORE_COLUMNS,
    RUN_SCORE_COLUMNS,
    RunAccumulator,
    lock_collection,
    score_query,
    triple,
)
from annotations.scores.queries import scores_recompute_query


@dataclass
class _Computed:
    """Every stored score of a collection (or of some runs of it), computed from scratch."""

    ideal: dict[tuple[int, int], float] = field(default_factory=dict)
    query_scores: dict[tuple[int, int, int], scoring.CutoffScores] = field(default_factory=dict)
    runs: dict[tuple[int, int], RunAccumulator] = field(default_factory=dict)
    versions: dict[int, int] = field(default_factory=dict)


def _compute_all(collection: Collection, run_ids: list[int] | None = None) -> _Computed:
    computed = _Computed()
    computed.versions = dict(
        Query.objects.filter(collection=collection).values_list("id", "judgements_version")
    )
    runs = (
        run_ids
        if run_ids is not None
        else list(Run.objects.filter(collection=collection).values_list("id", flat=True))
    )
    ks = collection.sorted_cutoffs
    for run_id in runs:
        for k in ks:
            computed.runs[(run_id, k)] = RunAccumulator()
    evaluated = 0
    for query_id, grades in selectors.effective_grades_by_query(collection=collection):
        idcgs, scores = score_query(collection, query_id, grades, run_ids=run_ids)
        if not idcgs:
            continue
        evaluated += 1
        for k, ideal in idcgs.items():
            computed.ideal[(query_id, k)] = ideal
        for (run_id, k), score in scores.items():
            computed.query_scores[(run_id, query_id, k)] = score
            acc = computed.runs[(run_id, k)]
            acc.add(triple(score))
            acc.queries += 1
    if collection.missing_queries == "zero":
        if run_ids is not None:
            # Some runs only: count the queries evaluated in the *stored* state (those with an
            # IDCG), the count the other runs' means and later incremental updates use. A
            # query whose first judgement is still pending joins the count when it is scored.
            evaluated = (
                IdealScore.objects.filter(query__collection=collection)
                .values("query_id")
                .distinct()
                .count()
            )
        for acc in computed.runs.values():
            acc.queries = evaluated
    return computed


def _write_all(collection: Collection, computed: _Computed, run_ids: list[int] | None) -> None:
    now = timezone.now()
    bulk_insert(
        QueryScore,
        QUERY_SCORE_COLUMNS,
        (
            (run_id, query_id, k, s.ndcg, s.dcg, s.judged, s.ndcg_condensed)
            for (run_id, query_id, k), s in computed.query_scores.items()
        ),
    )
    bulk_insert(
        RunScore,
        RUN_SCORE_COLUMNS,
        ((*acc.row(run_id, k), now) for (run_id, k), acc in computed.runs.items()),
    )
    runs = Run.objects.filter(collection=collection)
    if run_ids is not None:
        runs = runs.filter(id__in=run_ids)
    runs.update(scored_at=now)


def scores_recompute_run(*, run_id: int) -> bool:
    """Recompute every evaluated query of one run and its means (after an import)."""
    with transaction.atomic():
        collection_id = (
            Run.objects.filter(id=run_id).values_list("collection_id", flat=True).first()
        )
        if collection_id is None:
            return False
        collection = lock_collection(collection_id)
        computed = _compute_all(collection, run_ids=[run_id])
        QueryScore.objects.filter(run_id=run_id).delete()
        RunScore.objects.filter(run_id=run_id).delete()
        _write_all(collection, computed, [run_id])
    return True


def scores_rescore_collection(*, collection_id: int) -> None:
    """Recompute every stored score of a collection from scratch.

    Only rows whose values differ are written (updated in place, inserted or deleted): a
    rescore that confirms the stored scores writes nothing, and one that changes them
    leaves no dead rows behind for VACUUM, only in-place (HOT) updates that PostgreSQL
    prunes by itself.
    """
    with transaction.atomic():
        collection = lock_collection(collection_id)
        computed = _compute_all(collection)
        now = timezone.now()
        _sync_rows(
            IdealScore,
            key=("query_id", "k"),
            columns=("idcg",),
            stored={
                (query_id, k): (idcg,)
                for query_id, k, idcg in IdealScore.objects.filter(
                    query__collection=collection
                ).values_list("query_id", "k", "idcg")
            },
            fresh={key: (value,) for key, value in computed.ideal.items()},
        )
        _sync_rows(
            QueryScore,
            key=("query_id", "run_id", "k"),
            columns=("ndcg", "dcg", "judged", "ndcg_condensed"),
            stored={
                (query_id, run_id, k): tuple(values)
                for query_id, run_id, k, *values in QueryScore.objects.filter(
                    query__collection=collection
                ).values_list("query_id", "run_id", "k", "ndcg", "dcg", "judged", "ndcg_condensed")
            },
            fresh={
                (query_id, run_id, k): (s.ndcg, s.dcg, s.judged, s.ndcg_condensed)
                for (run_id, query_id, k), s in computed.query_scores.items()
            },
        )
        # Every run mean is rewritten, changed or not: `updated` tells when it was computed.
        _sync_rows(
            RunScore,
            key=("run_id", "k"),
            columns=RUN_SCORE_COLUMNS[2:-1],
            stored={
                key: ()
                for key in RunScore.objects.filter(run__collection=collection).values_list(
                    "run_id", "k"
                )
            },
            fresh={key: acc.row(*key)[2:] for key, acc in computed.runs.items()},
            constants={"updated": now},
        )
        Run.objects.filter(collection=collection).update(scored_at=now)
        bulk_update(
            Query,
            key=("id",),
            columns=("scored_version",),
            rows=sorted(computed.versions.items()),
        )


def _sync_rows(
    model: type[QueryScore | IdealScore | RunScore],
    *,
    key: tuple[str, ...],
    columns: tuple[str, ...],
    stored: Mapping[tuple[int, ...], tuple[object, ...]],
    fresh: Mapping[tuple[int, ...], tuple[object, ...]],
    constants: Mapping[str, object] | None = None,
) -> None:
    """Make the stored rows equal `fresh` (key -> values) with the fewest writes."""
    constants = dict(constants or {})
    rows = [(*k, *values) for k, values in fresh.items() if k in stored and stored[k] != values]
    bulk_update(model, key=key, columns=columns, rows=rows, constants=constants)
    bulk_insert(
        model,
        (*key, *columns, *constants),
        ((*k, *values, *constants.values()) for k, values in fresh.items() if k not in stored),
    )
    bulk_delete(model, key=key, keys=[k for k in stored if k not in fresh])


def scores_verify(*, collection: Collection) -> list[str]:
    """Every difference between the stored scores and a recomputation from scratch."""
    with transaction.atomic():
        collection = lock_collection(collection.id)
        computed = _compute_all(collection)
        return list(_differences(collection, computed))


def _differences(collection: Collection, computed: _Computed) -> Iterator[str]:
    qids = dict(Query.objects.filter(collection=collection).values_list("id", "qid"))
    names = dict(Run.objects.filter(collection=collection).values_list("id", "name"))
    stored_ideal = {
        (q, k): v
        for q, k, v in IdealScore.objects.filter(query__collection=collection).values_list(
            "query_id", "k", "idcg"
        )
    }
    for key in sorted(set(stored_ideal) | set(computed.ideal)):
        if stored_ideal.get(key) != computed.ideal.get(key):
            yield (
                f"idcg query={qids[key[0]]} k={key[1]}: stored {stored_ideal.get(key)!r}, "
                f"recomputed {computed.ideal.get(key)!r}"
            )
    fields = ("ndcg", "dcg", "judged", "ndcg_condensed")
    stored = {
        (r, q, k): vals
        for r, q, k, *vals in QueryScore.objects.filter(query__collection=collection).values_list(
            "run_id", "query_id", "k", *fields
        )
    }
    for score_key in sorted(set(stored) | set(computed.query_scores)):
        fresh = computed.query_scores.get(score_key)
        fresh_vals = None if fresh is None else [getattr(fresh, name) for name in fields]
        if stored.get(score_key) != fresh_vals:
            run_id, query_id, k = score_key
            was = stored.get(score_key)
            yield (
                f"run={names[run_id]} query={qids[query_id]} k={k}: stored "
                f"{dict(zip(fields, was, strict=True)) if was is not None else None}, "
                f"recomputed {dict(zip(fields, fresh_vals, strict=True)) if fresh_vals else None}"
            )
    run_fields = ("queries", "ndcg", "ndcg_condensed", "judged")
    stored_runs = {
        (r, k): vals
        for r, k, *vals in RunScore.objects.filter(run__collection=collection).values_list(
            "run_id", "k", *run_fields
        )
    }
    for run_key in sorted(set(stored_runs) | set(computed.runs)):
        acc = computed.runs.get(run_key)
        fresh_run = None if acc is None else list(acc.row(*run_key)[2:6])
        if stored_runs.get(run_key) != fresh_run:
            yield (
                f"run={names[run_key[0]]} k={run_key[1]} means (queries, ndcg, ndcg', judged): "
                f"stored {stored_runs.get(run_key)}, recomputed {fresh_run}"
            )
    for query_id, version in Query.objects.filter(collection=collection).values_list(
        "id", "judgements_version"
    ):
        if computed.versions.get(query_id) != version:
            yield f"query={qids[query_id]}: judgements changed during verification"


def scores_sweep_stale(*, collection: Collection | None = None) -> int:
    """Recompute every query still marked stale and every run never scored; count them."""
    queries = Query.objects.filter(judgements_version__gt=F("scored_version"))
    runs = Run.objects.filter(scored_at__isnull=True)
    if collection is not None:
        queries = queries.filter(collection=collection)
        runs = runs.filter(collection=collection)
    done = 0
    for run_id in list(runs.values_list("id", flat=True)):
        done += scores_recompute_run(run_id=run_id)
    for query_id in list(queries.values_list("id", flat=True)):
        done += scores_recompute_query(query_id=query_id)
    return done
