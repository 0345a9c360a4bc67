"""Runs and collections rescored from scratch, verified against storage; stale ones healed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotations import selectors
from annotations.bulk import (
    bulk_delete,
    bulk_insert,
    bulk_update,
    reads,
)
from annotations.formats import score_bytes
from annotations.metrics.measure_names import format_measure
from annotations.metrics.measures import measure_value, summary
from annotations.metrics.ndcg import ordered_mean
from annotations.models import (
    Collection,
    IdealScore,
    Query,
    QueryScore,
    RankingQrels,
    Run,
    RunScore,
)
from annotations.scores.computing import (
    QUERY_SCORE_COLUMNS,
    RUN_SCORE_COLUMNS,
    QueryScores,
    lock_collection,
    score_query,
)
from annotations.scores.kept_ranks import KeptRanks, keeps_ranks, kept_ranks_write
from annotations.scores.queries import (
    scores_recompute_query,
    stored_from_rows,
    stored_statements,
)
from annotations.selectors import measure_values, stored_scores


def _scored_queries(
    collection: Collection, run_ids: list[int] | None = None
) -> Iterator[tuple[int, QueryScores, KeptRanks | None]]:
    """(query id, its scores, its kept qrels ranks if the measures read them) of every
    evaluated query, one at a time."""
    for query_id, grades in selectors.effective_grades_by_query(collection=collection):
        scores, kept = score_query(collection, query_id, grades, run_ids=run_ids)
        if scores.idcgs:
            yield query_id, scores, kept


@dataclass
class _KeptWrites:
    """The kept qrels ranks that changed, gathered over several queries."""

    batch: list[tuple[int, KeptRanks]] = field(default_factory=list)
    rows: int = 0

    def add(self, query_id: int, kept: KeptRanks | None) -> None:
        if kept is None or not (kept.inserts or kept.updates):
            return
        self.batch.append((query_id, kept))
        self.rows += len(kept.inserts) + len(kept.updates)
        if self.rows >= ROWS_PER_WRITE:
            self.flush()

    def flush(self) -> None:
        kept_ranks_write(self.batch)
        self.batch, self.rows = [], 0


def _packed_rows(
    query_id: int, scores: QueryScores, layout: str
) -> dict[tuple[int, int], tuple[Any, ...]]:
    """(query, run) -> the packed QueryScore values of one query's scores."""
    return {
        (query_id, run_id): (
            layout,
            *score_bytes.pack_query(scores.matrix[i]),
            scores.measures_layout,
            score_bytes.float_bytes(scores.measure_row(i)),
        )
        for i, run_id in enumerate(scores.run_ids)
    }


def _run_ids(collection: Collection) -> list[int]:
    return list(Run.objects.filter(collection=collection).values_list("id", flat=True))


def _versions(collection: Collection) -> dict[int, int]:
    return dict(Query.objects.filter(collection=collection).values_list("id", "judgements_version"))


def scores_recompute_run(*, run_id: int) -> bool:
    """Recompute every evaluated query of one run (after an import)."""
    with transaction.atomic():
        collection_id = (
            Run.objects.filter(id=run_id).values_list("collection_id", flat=True).first()
        )
        if collection_id is None:
            return False
        collection = lock_collection(collection_id)
        QueryScore.objects.filter(run_id=run_id).delete()
        RunScore.objects.filter(run_id=run_id).delete()
        layout = score_bytes.layout(collection.sorted_cutoffs)
        rows: list[tuple[object, ...]] = []
        kept_rows = _KeptWrites()
        for query_id, scores, kept in _scored_queries(collection, run_ids=[run_id]):
            kept_rows.add(query_id, kept)
            rows.extend(
                (run, query_id, *values)
                for (_, run), values in _packed_rows(query_id, scores, layout).items()
            )
            if len(rows) >= ROWS_PER_WRITE:
                bulk_insert(QueryScore, QUERY_SCORE_COLUMNS, rows)
                rows = []
        bulk_insert(QueryScore, QUERY_SCORE_COLUMNS, rows)
        kept_rows.flush()
        now = timezone.now()
        bulk_insert(
            RunScore, RUN_SCORE_COLUMNS, [(run_id, layout, collection.measures_layout, now)]
        )
        Run.objects.filter(id=run_id).update(scored_at=now)
    return True


# Packed rows a rescoring buffers per write (one per run and query); ids per `IN (...)`.
ROWS_PER_WRITE = 5_000
IDS_PER_STATEMENT = 500


def _stored_query(query_id: int) -> tuple[dict[int, float], dict[int, tuple[Any, ...]]]:
    """One query's stored IDCGs (k -> value) and packed scores (run -> layout, columns)."""
    with reads(stored_statements(query_id)) as results:
        stored, ideal = next(results), next(results)
    return dict(ideal), stored_from_rows(stored)


def scores_rescore_collection(*, collection_id: int) -> None:
    """Recompute every stored score of a collection from scratch, one query at a time.

    Memory holds one query's scores (every run and k), never the collection's. Only rows
    whose values differ are written (updated in place, inserted or deleted): a rescore that
    confirms the stored scores writes nothing but each run's RunScore row.
    """
    with transaction.atomic():
        collection = lock_collection(collection_id)
        versions = _versions(collection)  # read before the judgements: marked scored below
        run_ids = _run_ids(collection)
        layout = score_bytes.layout(collection.sorted_cutoffs)
        seen: set[int] = set()
        ideal_rows = _Writes(IdealScore, key=("query_id", "k"), columns=("idcg",))
        score_rows = _Writes(
            QueryScore, key=("query_id", "run_id"), columns=QUERY_SCORE_COLUMNS[2:]
        )
        kept_rows = _KeptWrites()
        for query_id, scores, kept in _scored_queries(collection):
            kept_rows.add(query_id, kept)
            ideal, stored = _stored_query(query_id)
            ideal_rows.sync(
                stored={(query_id, k): (value,) for k, value in ideal.items()},
                fresh={(query_id, k): (value,) for k, value in scores.idcgs.items()},
            )
            score_rows.sync(
                stored={(query_id, run_id): values for run_id, values in stored.items()},
                fresh=_packed_rows(query_id, scores, layout),
            )
            seen.add(query_id)
        ideal_rows.flush()
        score_rows.flush()
        kept_rows.flush()
        if not keeps_ranks(collection.kept_measures):
            # Ranks kept for a former measure set: nothing reads them any more.
            RankingQrels.objects.filter(query__collection=collection).delete()
        # Queries no longer evaluated (their judgements are gone) keep no scores.
        unjudged = [query_id for query_id in versions if query_id not in seen]
        for start in range(0, len(unjudged), IDS_PER_STATEMENT):
            chunk = unjudged[start : start + IDS_PER_STATEMENT]
            QueryScore.objects.filter(query_id__in=chunk).delete()
            IdealScore.objects.filter(query_id__in=chunk).delete()
        now = timezone.now()
        # Every run's row is rewritten, changed or not: `updated` tells when it was computed.
        _sync_rows(
            RunScore,
            key=("run_id",),
            columns=RUN_SCORE_COLUMNS[1:-1],
            stored={
                (run_id,): ()
                for run_id in RunScore.objects.filter(run__collection=collection).values_list(
                    "run_id", flat=True
                )
            },
            fresh={(run_id,): (layout, collection.measures_layout) for run_id in run_ids},
            constants={"updated": now},
        )
        Run.objects.filter(collection=collection).update(scored_at=now)
        bulk_update(
            Query,
            key=("id",),
            columns=("scored_version",),
            rows=sorted(versions.items()),
        )


@dataclass
class _Writes:
    """The writes that make stored rows equal fresh ones, gathered over several queries and
    sent a few thousand rows at a time."""

    model: type[QueryScore | IdealScore]
    key: tuple[str, ...]
    columns: tuple[str, ...]
    updates: list[tuple[object, ...]] = field(default_factory=list)
    inserts: list[tuple[object, ...]] = field(default_factory=list)
    deletes: list[tuple[int, ...]] = field(default_factory=list)

    def sync(
        self,
        *,
        stored: Mapping[Any, tuple[Any, ...]],
        fresh: Mapping[Any, tuple[Any, ...]],
    ) -> None:
        for key, values in fresh.items():
            was = stored.get(key)
            if was is None:
                self.inserts.append((*key, *values))
            elif was != values:
                self.updates.append((*key, *values))
        self.deletes.extend(key for key in stored if key not in fresh)
        if len(self.updates) + len(self.inserts) + len(self.deletes) >= ROWS_PER_WRITE:
            self.flush()

    def flush(self) -> None:
        bulk_update(self.model, key=self.key, columns=self.columns, rows=self.updates)
        bulk_insert(self.model, (*self.key, *self.columns), self.inserts)
        bulk_delete(self.model, key=self.key, keys=self.deletes)
        self.updates, self.inserts, self.deletes = [], [], []


def _sync_rows(
    model: type[QueryScore | IdealScore | RunScore],
    *,
    key: tuple[str, ...],
    columns: tuple[str, ...],
    stored: Mapping[Any, tuple[Any, ...]],
    fresh: Mapping[Any, tuple[Any, ...]],
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
    """Every difference between the stored scores and a recomputation from scratch.

    Computed one query at a time, like a rescore; only the differences are kept.
    """
    with transaction.atomic():
        collection = lock_collection(collection.id)
        return _differences(collection)


def _per_cutoff(packed: tuple[Any, ...] | None) -> dict[int, tuple[float, ...]]:
    """k -> (ndcg, dcg, judged, ndcg_condensed) of a packed per-query row (None: absent)."""
    if packed is None:
        return {}
    columns = packed[: 1 + len(score_bytes.QUERY_MEASURES)]
    return {k: tuple(values[1:]) for k, values in score_bytes.query_values(*columns).items()}


def _measures_of(packed: tuple[Any, ...] | None, collection: Collection) -> dict[str, float]:
    """name -> value of the other measures of a packed per-query row (None: absent; a row
    in another measure set than the collection's holds none of its measures)."""
    if packed is None or packed[-2] != collection.measures_layout:
        return {}
    names = [format_measure(measure) for measure in collection.kept_measures]
    values = score_bytes.floats(packed[-1]).tolist()
    return dict(zip(names, values, strict=True))


def _differences(collection: Collection) -> list[str]:
    qids = dict(Query.objects.filter(collection=collection).values_list("id", "qid"))
    names = dict(Run.objects.filter(collection=collection).values_list("id", "name"))
    versions = _versions(collection)
    layout = score_bytes.layout(collection.sorted_cutoffs)
    ideal_differences: list[tuple[tuple[int, int], str]] = []
    score_differences: list[tuple[tuple[int, int, int], str]] = []
    kept_differences: list[str] = []

    def compare(query_id: int, scores: QueryScores | None) -> None:
        ideal, stored = _stored_query(query_id)
        idcgs = scores.idcgs if scores is not None else {}
        for k in sorted(set(ideal) | set(idcgs)):
            if ideal.get(k) != idcgs.get(k):
                ideal_differences.append(
                    (
                        (query_id, k),
                        f"idcg query={qids[query_id]} k={k}: stored {ideal.get(k)!r}, "
                        f"recomputed {idcgs.get(k)!r}",
                    )
                )
        fresh_rows = (
            {run: values for (_, run), values in _packed_rows(query_id, scores, layout).items()}
            if scores is not None
            else {}
        )
        for run_id in set(stored) | set(fresh_rows):
            if stored.get(run_id) == fresh_rows.get(run_id):
                continue
            was_measures = _measures_of(stored.get(run_id), collection)
            fresh_measures = _measures_of(fresh_rows.get(run_id), collection)
            for name in sorted(set(was_measures) | set(fresh_measures)):
                was_value, fresh_value = was_measures.get(name), fresh_measures.get(name)
                if (
                    was_value is None
                    or fresh_value is None
                    or _bits(was_value) != _bits(fresh_value)
                ):
                    score_differences.append(
                        (
                            (run_id, query_id, 0),
                            f"run={names[run_id]} query={qids[query_id]} {name}: stored "
                            f"{was_value!r}, recomputed {fresh_value!r}",
                        )
                    )
            was_at = _per_cutoff(stored.get(run_id))
            fresh_at = _per_cutoff(fresh_rows.get(run_id))
            for k in sorted(set(was_at) | set(fresh_at)):
                was, fresh = was_at.get(k), fresh_at.get(k)
                if was == fresh:
                    continue
                score_differences.append(
                    (
                        (run_id, query_id, k),
                        f"run={names[run_id]} query={qids[query_id]} k={k}: stored "
                        f"{dict(zip(_VALUES, was, strict=True)) if was is not None else None}, "
                        "recomputed "
                        f"{dict(zip(_VALUES, fresh, strict=True)) if fresh is not None else None}",
                    )
                )

    seen: set[int] = set()
    for query_id, scores, kept in _scored_queries(collection):
        seen.add(query_id)
        compare(query_id, scores)
        for run_id in kept.mismatched if kept is not None else ():
            kept_differences.append(
                f"run={names[run_id]} query={qids[query_id]}: kept qrels ranks differ from "
                "those of its ranking"
            )
    for query_id in qids:
        if query_id not in seen:
            compare(query_id, None)
    lines = [line for _, line in sorted(ideal_differences)]
    lines += [line for _, line in sorted(score_differences)]
    lines += sorted(kept_differences)
    lines += _mean_differences(collection, names)
    lines += _measure_mean_differences(collection, names)
    for query_id, version in _versions(collection).items():
        if versions.get(query_id) != version:
            lines.append(f"query={qids[query_id]}: judgements changed during verification")
    return lines


def _bits(value: float) -> bytes:
    return score_bytes.float_bytes([value])


# The per-query values of a packed row at one k, in the order of `_per_cutoff`.
_VALUES = ("ndcg", "dcg", "judged", "ndcg_condensed")


def _mean_differences(collection: Collection, names: Mapping[int, str]) -> list[str]:
    """Each run mean as every reader gets it (`stored_scores.run_means_at`) against the
    reference, `ndcg.ordered_mean` of the stored per-query values in trec_eval's order
    (those values are checked against a recomputation above); a run without means in the
    current layout is a difference too."""
    lines = []
    zero = collection.missing_queries == "zero"
    for k in collection.sorted_cutoffs:
        evaluated = [query_id for query_id, _, _ in stored_scores.evaluated_queries(collection, k)]
        read = {mean.run_id: mean for mean in stored_scores.run_means_at(collection, k)}
        stored = stored_scores.stored_values(collection, list(read), k)
        for run_id, name in sorted(names.items(), key=lambda item: item[1]):
            mean = read.get(run_id)
            if mean is None:
                lines.append(f"run={name} k={k}: no means (not scored in the current cutoffs)")
                continue
            values = stored.get(run_id, {})
            absent = (0.0, 0.0, 0.0, 0.0) if zero else None
            rows = [values.get(query_id, absent) for query_id in evaluated]
            counted = [row for row in rows if row is not None]
            reference = [
                len(counted),
                *(ordered_mean(row[m] for row in counted) for m in _MEAN_COLUMNS),
            ]
            got = [mean.queries, mean.ndcg, mean.ndcg_condensed, mean.judged]
            if got != reference:
                lines.append(
                    f"run={name} k={k} means (queries, ndcg, ndcg', judged): as read {got}, "
                    f"in trec_eval's order {reference}"
                )
    return lines


# Positions in `_VALUES` of nDCG, nDCG' and judged@k, the order of a run's means.
_MEAN_COLUMNS = (0, 3, 2)


def _measure_mean_differences(collection: Collection, names: Mapping[int, str]) -> list[str]:
    """Each run's `all` value of every kept measure as readers get it
    (`measure_values.measure_means`) against trec_eval -c's, computed as
    `measures.run_values` does from the stored per-query values (checked above): an
    unanswered query, in zero mode, counting the reference's value of an empty ranking on
    its own grades; a run whose values are not all in the current measure set is a
    difference too."""
    kept = collection.kept_measures
    if not kept:
        return []
    qids = measure_values.evaluated_qids(collection)
    grades = {
        qids[query_id]: list(values.values())
        for query_id, values in selectors.effective_grades_by_query(
            collection=collection, query_ids=list(qids)
        )
    }
    zero = collection.missing_queries == "zero"
    lines = []
    for measure in kept:
        name = format_measure(measure)
        means, pending = measure_values.measure_means(collection, measure)
        lines += [f"run={run.name} {name}: no mean (values pending)" for run in pending]
        stored = measure_values.stored_measure(collection, measure)
        for mean in means:
            values = {qids[query_id]: value for query_id, value in stored[mean.run.id].items()}
            if zero:
                for qid in qids.values():
                    if qid not in values:
                        values[qid] = measure_value(measure, [], grades.get(qid, []))
            if not values:
                reference = [0, 0.0]
            else:
                reference = [
                    len(values),
                    summary(measure, values, list(values), grades if zero else None),
                ]
            got = [mean.queries, mean.value]
            if [got[0], _bits(got[1])] != [reference[0], _bits(reference[1])]:
                lines.append(
                    f"run={names[mean.run.id]} {name} mean (queries, value): as read {got}, "
                    f"trec_eval -c's {reference}"
                )
    return lines


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
