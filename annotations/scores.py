"""Stored scores: recompute after every change, schedule after commit, verify, heal stale ones."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotations import exact, scoring, selectors
from annotations.bulk import (
    bulk_delete,
    bulk_insert,
    bulk_update,
    execute,
    pipeline,
    reads,
)
from annotations.exact import ExactSum
from annotations.models import Collection, IdealScore, Query, QueryScore, Run, RunScore

logger = logging.getLogger(__name__)

# (ndcg, ndcg_condensed, judged) of one run, query and k: the values that feed the run means.
Triple = tuple[float, float, float]
QUERY_SCORE_COLUMNS = ("run_id", "query_id", "k", "ndcg", "dcg", "judged", "ndcg_condensed")
RUN_SCORE_COLUMNS = (
    "run_id", "k", "queries", "ndcg", "ndcg_condensed", "judged",
    "ndcg_sum", "ndcg_condensed_sum", "judged_sum", "updated",
)  # fmt: skip


@dataclass
class _RunAccumulator:
    """Exact sums of one run's per-query values at one k, plus how many queries count."""

    queries: int = 0
    ndcg: ExactSum = field(default_factory=ExactSum)
    condensed: ExactSum = field(default_factory=ExactSum)
    judged: ExactSum = field(default_factory=ExactSum)

    def add(self, values: Triple) -> None:
        self.ndcg.add(values[0])
        self.condensed.add(values[1])
        self.judged.add(values[2])

    def row(self, run_id: int, k: int) -> tuple[object, ...]:
        """The stored values in RUN_SCORE_COLUMNS order, all but the time of the update."""
        n = self.queries
        return (
            run_id, k, n, self.ndcg.mean(n), self.condensed.mean(n), self.judged.mean(n),
            self.ndcg.to_text(), self.condensed.to_text(), self.judged.to_text(),
        )  # fmt: skip


def _triple(scores: scoring.CutoffScores) -> Triple:
    return (scores.ndcg, scores.ndcg_condensed, scores.judged)


def _score_query(
    collection: Collection,
    query_id: int,
    grades: Mapping[int, int],
    run_ids: Iterable[int] | None = None,
) -> tuple[dict[int, float], dict[tuple[int, int], scoring.CutoffScores]]:
    """The IDCG per k and every (run, k) score of one query, from its current grades."""
    if not grades:
        return {}, {}
    rankings = selectors.scoring_rankings(
        query_id=query_id, depth=max(collection.sorted_cutoffs), grades=grades, run_ids=run_ids
    )
    return _score_rankings(collection, grades, rankings)


def _score_rankings(
    collection: Collection, grades: Mapping[int, int], rankings: Mapping[int, Sequence[int]]
) -> tuple[dict[int, float], dict[tuple[int, int], scoring.CutoffScores]]:
    if not grades:
        return {}, {}
    ks = collection.sorted_cutoffs
    idcgs = scoring.idcgs_for(grades.values(), ks, collection.gain)
    scores: dict[tuple[int, int], scoring.CutoffScores] = {}
    for run_id, ranking in rankings.items():
        for k, value in scoring.query_scores(ranking, grades, ks, collection.gain, idcgs).items():
            scores[(run_id, k)] = value
    return idcgs, scores


def _synchronous_commit_off() -> None:
    """Scores are derived data and their transaction also clears the pending mark: if a
    crash loses its commit, the query stays pending and the sweep recomputes it, so the
    commit need not wait for the disk. Works inside `pipeline()` too."""
    if connection.vendor == "postgresql":
        execute("SET LOCAL synchronous_commit = off", [])


def _lock_collection(collection_id: int) -> Collection:
    # All score writers of a collection take this lock, so the run means (shared by every
    # query) are always updated from the latest committed per-query values.
    _synchronous_commit_off()
    return Collection.objects.select_for_update().get(id=collection_id)


def scores_recompute_query(*, query_id: int, force: bool = False) -> bool:
    """Recompute one query for every run and update the run means; False if nothing to do.

    Reads the query's judgement version before its grades, stores the scores and marks that
    version scored; a judgement committed meanwhile leaves the query stale for its own
    recomputation. Without `force`, a query that is not stale is left alone (coalescing).
    """
    with transaction.atomic():
        lock = " FOR UPDATE OF c" if connection.vendor == "postgresql" else ""
        query_table = Query._meta.db_table
        statements = [
            # The query's collection, locked (see `_lock_collection`): the statements after
            # it run once the lock is held, so they see the work of a recomputation that
            # held it before.
            (
                "SELECT c.id, c.gain, c.missing_queries, c.aggregation, c.cutoffs "
                f"FROM {Collection._meta.db_table} c JOIN {query_table} q "
                f"ON q.collection_id = c.id WHERE q.id = %s{lock}",
                [query_id],
                True,
            ),
            (
                f"SELECT judgements_version, scored_version FROM {query_table} WHERE id = %s",
                [query_id],
                True,
            ),
            (*selectors.effective_grades_statement(query_id=query_id), True),
            (*selectors.ranking_heads_statement(query_id=query_id), True),
            (
                "SELECT run_id, k, ndcg, dcg, judged, ndcg_condensed "
                f"FROM {QueryScore._meta.db_table} WHERE query_id = %s",
                [query_id],
                True,
            ),
            (
                f"SELECT k, idcg FROM {IdealScore._meta.db_table} WHERE query_id = %s",
                [query_id],
                True,
            ),
            (
                "SELECT s.run_id, s.k, s.queries, s.ndcg_sum, s.ndcg_condensed_sum, s.judged_sum "
                f"FROM {RunScore._meta.db_table} s JOIN {Run._meta.db_table} r "
                f"ON r.id = s.run_id JOIN {query_table} q ON q.collection_id = r.collection_id "
                "WHERE q.id = %s",
                [query_id],
                True,
            ),
        ]
        # All of it leaves in one round trip, results in binary (no numbers as text to
        # parse back).
        with reads(statements) as results:
            found = next(results)
            if not found:
                return False  # deleted meanwhile
            collection = _collection_from_row(found[0])
            version, scored = next(results)[0]
            if version == scored and not force:
                return False
            grades = selectors.effective_grades_from_rows(next(results), collection.aggregation)
            ranking_rows = next(results)
            depth = max(collection.sorted_cutoffs)
            rankings = (
                selectors.scoring_rankings_from_rows(
                    ranking_rows, query_id=query_id, depth=depth, grades=grades
                )
                if grades
                else {}
            )
            idcgs, new = _score_rankings(collection, grades, rankings)
            stored_rows, ideal_rows, run_rows = next(results), next(results), next(results)
        stored = {
            (run_id, k): (ndcg, dcg, judged, condensed)
            for run_id, k, ndcg, dcg, judged, condensed in stored_rows
        }
        _store_query(
            collection, query_id, idcgs, new,
            stored=stored, old_ideal=dict(ideal_rows), run_rows=run_rows, version=version,
        )  # fmt: skip
    return True


def _collection_from_row(row: tuple[Any, ...]) -> Collection:
    """The scoring settings of a collection read by raw SQL (an instance not to be saved)."""
    collection_id, gain, missing_queries, aggregation, cutoffs = row
    if isinstance(cutoffs, str | bytes):  # JSON as text (SQLite, or jsonb loaded as text)
        cutoffs = json.loads(cutoffs)
    return Collection(
        id=collection_id,
        gain=gain,
        missing_queries=missing_queries,
        aggregation=aggregation,
        cutoffs=cutoffs,
    )


def _store_query(
    collection: Collection,
    query_id: int,
    idcgs: dict[int, float],
    new: dict[tuple[int, int], scoring.CutoffScores],
    *,
    stored: dict[tuple[int, int], tuple[float, float, float, float]],
    old_ideal: dict[int, float],
    run_rows: list[tuple[Any, ...]],
    version: int,
) -> None:
    """Write what changed for one query, fold the differences into the run means and mark
    `version` scored.

    `stored`, `old_ideal` and `run_rows` are the query's stored scores, its stored IDCGs and
    the collection's stored run means, read under the collection lock. Rows are updated in
    place (see `bulk_update`); only runs whose values changed are touched, unless the number
    of evaluated queries changed, which moves every mean.
    """
    # One pass over the new scores: rows to insert, rows to update (and which of their
    # columns moved), and the (run, k) whose run means move, with their values before and
    # after (nDCG, nDCG', judged@k).
    inserts: list[tuple[object, ...]] = []
    updates: list[tuple[object, ...]] = []
    parts = [False, False, False, False]  # ndcg, dcg, judged, ndcg_condensed
    moved: dict[tuple[int, int], tuple[Triple | None, Triple | None]] = {}
    for key, score in new.items():
        values = (score.ndcg, score.dcg, score.judged, score.ndcg_condensed)
        was = stored.get(key)
        if was == values:
            continue
        after = (score.ndcg, score.ndcg_condensed, score.judged)
        if was is None:
            inserts.append((key[0], query_id, key[1], *values))
            moved[key] = (None, after)
            continue
        updates.append((query_id, *key, *values))
        for i in range(4):
            if values[i] != was[i]:
                parts[i] = True
        before = (was[0], was[3], was[2])
        if before != after:
            moved[key] = (before, after)
    gone = [key for key in stored if key not in new]
    for key in gone:
        was = stored[key]
        moved[key] = ((was[0], was[3], was[2]), None)
    # Inserts and deletes first (rare: a query's first or last judgement, a run's first
    # result for it); COPY cannot run inside the pipeline below.
    bulk_insert(QueryScore, QUERY_SCORE_COLUMNS, inserts)
    bulk_delete(
        QueryScore, key=("query_id", "run_id", "k"), keys=[(query_id, *key) for key in gone]
    )
    bulk_delete(
        IdealScore, key=("query_id", "k"), keys=[(query_id, k) for k in old_ideal if k not in idcgs]
    )
    bulk_insert(
        IdealScore,
        ("query_id", "k", "idcg"),
        [(query_id, k, v) for k, v in idcgs.items() if k not in old_ideal],
    )
    count_delta = int(bool(idcgs)) - int(bool(old_ideal))
    zero_mode = collection.missing_queries == "zero"
    moved_runs = {run_id for run_id, _ in moved}
    every_mean = zero_mode and count_delta != 0
    # The updates go out without waiting: the server applies the per-query scores while
    # the run means are folded here.
    with pipeline():
        _synchronous_commit_off()
        # Only the columns that change in some row (a change of the ideal DCG moves nDCG
        # and nDCG' of every run, but no DCG and no judged@k).
        picked = [3 + i for i in range(4) if parts[i]]
        bulk_update(
            QueryScore,
            key=("query_id", "run_id", "k"),
            columns=tuple(QUERY_SCORE_COLUMNS[j] for j in picked),
            rows=[(row[0], row[1], row[2], *(row[j] for j in picked)) for row in updates],
        )
        bulk_update(
            IdealScore,
            key=("query_id", "k"),
            columns=("idcg",),
            rows=[(query_id, k, v) for k, v in idcgs.items() if old_ideal.get(k, v) != v],
        )
        columns, rows = _fold_means(
            run_rows,
            moved,
            runs=None if every_mean else moved_runs,
            zero_mode=zero_mode,
            count_delta=count_delta,
        )
        bulk_update(
            RunScore,
            key=("run_id", "k"),
            columns=columns,
            rows=rows,
            constants={"updated": timezone.now()},
        )
        execute(
            f"UPDATE {Query._meta.db_table} SET scored_version = %s WHERE id = %s",
            [version, query_id],
        )


# The three run means (each with its exact sum) in RunScore, in the order of a Triple.
_MEANS = (("ndcg", "ndcg_sum"), ("ndcg_condensed", "ndcg_condensed_sum"), ("judged", "judged_sum"))


def _fold_means(
    run_rows: list[tuple[Any, ...]],
    moved: Mapping[tuple[int, int], tuple[Triple | None, Triple | None]],
    *,
    runs: set[int] | None,
    zero_mode: bool,
    count_delta: int,
) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
    """The run mean rows that change when one query's values move as in `moved` ((run, k)
    -> values before and after; None: absent), and the RunScore columns that change in any
    of them.

    `run_rows` are the stored rows (run, k, queries, the three exact sums) of the `runs`
    concerned (None: all). A sum whose value did not change, with an unchanged
    count, is kept as stored and its column left out: parsing and formatting exact sums is
    the costly part of this path, and a grade change rarely moves judged@k.
    """
    unmoved: tuple[Triple | None, Triple | None] = (None, None)
    columns_moved = [False, False, False]
    count_moved = False
    rows: list[list[Any]] = []
    # Only stored means are folded: a run without one is pending its own scoring, which
    # builds it.
    for run_id, k, queries, *stored in run_rows:
        if runs is not None and run_id not in runs:
            continue
        before, after = moved.get((run_id, k), unmoved)
        if zero_mode:
            count = queries + count_delta
        else:
            count = queries + (after is not None) - (before is not None)
        # run, k, count, three means (None: unchanged, not written), three sums
        row: list[Any] = [run_id, k, count, None, None, None, *stored]
        changed = count != queries
        touched = changed
        for i in range(3):
            old_value = 0.0 if before is None else before[i]
            new_value = 0.0 if after is None else after[i]
            if old_value == new_value and not changed:
                continue
            row[3 + i], row[6 + i] = exact.fold(stored[i], old_value, new_value, count)
            columns_moved[i] = touched = True
        if touched:
            count_moved = count_moved or changed
            rows.append(row)
    if count_moved:
        columns_moved = [True, True, True]  # every mean divides by the new count
    picked = [i for i in range(3) if columns_moved[i]]
    for row in rows:  # a column written for some rows needs its value in all of them
        for i in picked:
            if row[3 + i] is None:
                row[3 + i], row[6 + i] = exact.fold(row[6 + i], 0.0, 0.0, row[2])
    columns = (("queries",) if count_moved else ()) + tuple(
        name for i in picked for name in _MEANS[i]
    )
    indexes = ([2] if count_moved else []) + [j for i in picked for j in (3 + i, 6 + i)]
    return columns, [(row[0], row[1], *(row[j] for j in indexes)) for row in rows]


@dataclass
class _Computed:
    """Every stored score of a collection (or of some runs of it), computed from scratch."""

    ideal: dict[tuple[int, int], float] = field(default_factory=dict)
    query_scores: dict[tuple[int, int, int], scoring.CutoffScores] = field(default_factory=dict)
    runs: dict[tuple[int, int], _RunAccumulator] = field(default_factory=dict)
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
            computed.runs[(run_id, k)] = _RunAccumulator()
    evaluated = 0
    for query_id, grades in selectors.effective_grades_by_query(collection=collection):
        idcgs, scores = _score_query(collection, query_id, grades, run_ids=run_ids)
        if not idcgs:
            continue
        evaluated += 1
        for k, ideal in idcgs.items():
            computed.ideal[(query_id, k)] = ideal
        for (run_id, k), score in scores.items():
            computed.query_scores[(run_id, query_id, k)] = score
            acc = computed.runs[(run_id, k)]
            acc.add(_triple(score))
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
        collection = _lock_collection(collection_id)
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
        collection = _lock_collection(collection_id)
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
        collection = _lock_collection(collection.id)
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


# --- scheduling -------------------------------------------------------------------------

_pending = threading.local()


def _pending_sets() -> tuple[set[int], set[int], set[int]]:
    if not hasattr(_pending, "queries"):
        _pending.queries, _pending.runs, _pending.collections = set(), set(), set()
    return _pending.queries, _pending.runs, _pending.collections


def scores_schedule(
    *,
    query_ids: Iterable[int] = (),
    run_ids: Iterable[int] = (),
    collection_ids: Iterable[int] = (),
) -> None:
    """Recompute these after the current transaction commits, once each however often asked.

    The caller has already marked them stale in its transaction, so a lost recomputation is
    healed by the sweep; duplicates are harmless because a recomputation reads current state.
    """
    queries, runs, collections = _pending_sets()
    queries.update(query_ids)
    runs.update(run_ids)
    collections.update(collection_ids)
    transaction.on_commit(_dispatch)


def _dispatch() -> None:
    queries, runs, collections = _pending_sets()
    batch = (set(queries), set(runs), set(collections))
    queries.clear()
    runs.clear()
    collections.clear()
    if not any(batch):
        return
    if settings.CELERY_BROKER_URL:
        from annotations import tasks

        for collection_id in batch[2]:
            _publish(tasks.rescore_collection, collection_id)
        for run_id in batch[1]:
            _publish(tasks.recompute_run, run_id)
        for query_id in batch[0]:
            _publish(tasks.recompute_query, query_id, coalesce=f"recompute-query:{query_id}")
        return
    run_inline(*batch)


# A queued recomputation of a query covers every change made before it starts, so while one
# is queued (the mark below, cleared by the task when it starts) no second one is published.
COALESCE_SECONDS = 60


def _publish(task: Any, object_id: int, *, coalesce: str | None = None) -> None:
    """Queue a recomputation, best effort: after commit, a publish failure must not fail the
    request. What is not queued stays marked pending, and the sweep (or the next change)
    heals it once the broker is back."""
    if not settings.NDCG_COORDINATION_SHARED:
        coalesce = None  # a per-process mark would never be cleared by the worker
    try:
        if coalesce is not None and not caches["coordination"].add(
            coalesce, 1, timeout=COALESCE_SECONDS
        ):
            return
        task.apply_async((object_id,), retry=False)
    except Exception as error:
        logger.warning(
            "could not queue %s(%s), its scores stay pending: %r", task.name, object_id, error
        )
        if coalesce is not None:
            coalesce_release(coalesce)


def coalesce_release(key: str) -> None:
    """Clear a queued mark (the task calls this as it starts)."""
    try:
        caches["coordination"].delete(key)
    except Exception:  # the mark expires by itself
        logger.warning("could not clear %s", key)


def run_inline(query_ids: set[int], run_ids: set[int], collection_ids: set[int]) -> None:
    """Run scheduled recomputations in this process, each on its own and retried once.

    A failure (a run deleted under a rescore, say) leaves that one marked stale and the
    others go on; the retry sees the state the failure raced with. What still fails stays
    pending for the reads that heal it (`annotations.services.healing`).
    """
    covered = set(Run.objects.filter(collection_id__in=collection_ids).values_list("id", flat=True))
    jobs: list[tuple[str, Any]] = [
        *(("collection", collection_id) for collection_id in sorted(collection_ids)),
        *(("run", run_id) for run_id in sorted(run_ids - covered)),
        *(("query", query_id) for query_id in sorted(query_ids)),
    ]
    recompute = {
        "collection": lambda object_id: scores_rescore_collection(collection_id=object_id),
        "run": lambda object_id: scores_recompute_run(run_id=object_id),
        "query": lambda object_id: scores_recompute_query(query_id=object_id),
    }
    for kind, object_id in jobs:
        for attempt in (1, 2):
            try:
                recompute[kind](object_id)
                break
            except Exception:
                if attempt == 2:
                    logger.exception(
                        "score recomputation of %s %s failed; its scores stay marked pending",
                        kind,
                        object_id,
                    )
