"""Reads for leaderboards, run and query pages and comparisons, built from stored scores."""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Max, Q, Sum

from annotations import scoring, statistics
from annotations.exact import ExactSum
from annotations.models import (
    Collection,
    Document,
    IdealScore,
    Query,
    QueryScore,
    Ranking,
    Run,
    RunScore,
)
from annotations.selectors import (
    effective_grades,
    effective_grades_by_query,
    query_rankings,
    top_documents,
)

# Fixed so that a page reload never moves an interval or a tier by chance alone.
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
PERMUTATIONS = 10_000
PERMUTATION_SEED = 0
ALPHA = 0.05


# --- shapes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoresState:
    """What changes whenever a page showing scores should refresh."""

    stamp: str
    pending: bool
    pending_queries: int
    pending_runs: int
    last_recomputed: datetime | None


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    tier: int
    run: Run
    ndcg: float
    ci_low: float | None
    ci_high: float | None
    judged: float
    ndcg_condensed: float
    queries: int
    # nDCG@k if every unjudged document of the run's top k had the scale's highest grade.
    ndcg_top_grade: float
    # Holm-adjusted p-value of the paired test against the next run down (None for the last).
    p_next: float | None
    pending: bool


@dataclass(frozen=True)
class Leaderboard:
    collection: Collection
    k: int
    rows: list[LeaderboardRow]
    unscored: list[Run]
    state: ScoresState
    resamples: int = BOOTSTRAP_RESAMPLES
    bootstrap_seed: int = BOOTSTRAP_SEED
    confidence: float = CONFIDENCE
    permutations: int = PERMUTATIONS
    permutation_seed: int = PERMUTATION_SEED
    alpha: float = ALPHA


@dataclass(frozen=True)
class QueryValue:
    """One run's stored scores for one evaluated query; `answered` is False for a zero-fill."""

    query_id: int
    qid: str
    title: str
    ndcg: float
    dcg: float
    judged: float
    ndcg_condensed: float
    answered: bool


@dataclass(frozen=True)
class RunScores:
    run: Run
    k: int
    ndcg: float | None
    judged: float | None
    ndcg_condensed: float | None
    queries: int
    per_query: list[QueryValue]
    pending: bool


@dataclass(frozen=True)
class RunOnQuery:
    run: Run
    ndcg: float | None
    judged: float | None
    answered: bool


@dataclass(frozen=True)
class JudgedDocument:
    docno: str
    title: str
    grade: int
    judgements: int


@dataclass(frozen=True)
class RankedDocument:
    position: int
    docno: str
    title: str
    grade: int | None  # None: unjudged (no grade, or a negative "pooled, not judged" one)


@dataclass(frozen=True)
class QueryOverview:
    query: Query
    k: int
    idcg: float | None
    runs: list[RunOnQuery]
    judged: list[JudgedDocument]
    pending: bool


@dataclass(frozen=True)
class ComparisonRow:
    qid: str
    a: float
    b: float
    difference: float


@dataclass(frozen=True)
class Comparison:
    a: Run
    b: Run
    k: int
    rows: list[ComparisonRow]
    mean_a: float | None
    mean_b: float | None
    p_value: float | None
    wins: int
    ties: int
    losses: int
    pending: bool
    permutations: int = PERMUTATIONS
    seed: int = PERMUTATION_SEED

    @property
    def mean_difference(self) -> float | None:
        if self.mean_a is None or self.mean_b is None:
            return None
        return self.mean_a - self.mean_b


# --- state --------------------------------------------------------------------------------


def scores_state(*, collection: Collection) -> ScoresState:
    """A stamp that changes with every judgement, run or score change, and the pending state.

    Five aggregate queries, no per-row reads: pages poll it to know when to refresh.
    """
    queries = Query.objects.filter(collection=collection).aggregate(
        count=Count("id"),
        versions=Sum("judgements_version"),
        scored=Sum("scored_version"),
        stale=Count("id", filter=Q(judgements_version__gt=F("scored_version"))),
    )
    runs = Run.objects.filter(collection=collection).aggregate(
        count=Count("id"),
        updated=Max("updated"),
        unscored=Count("id", filter=Q(scored_at__isnull=True)),
        scored=Max("scored_at"),
    )
    run_scores = RunScore.objects.filter(run__collection=collection).aggregate(
        count=Count("id"), updated=Max("updated")
    )
    parts = (
        collection.updated, *queries.values(), *runs.values(), *run_scores.values(),
    )  # fmt: skip
    stamp = hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
    stale, unscored = int(queries["stale"] or 0), int(runs["unscored"] or 0)
    recomputed = [t for t in (runs["scored"], run_scores["updated"]) if t is not None]
    return ScoresState(
        stamp=stamp,
        pending=bool(stale or unscored),
        pending_queries=stale,
        pending_runs=unscored,
        last_recomputed=max(recomputed) if recomputed else None,
    )


# --- per-query vectors --------------------------------------------------------------------


def _evaluated_queries(collection: Collection, k: int) -> list[tuple[int, str, str]]:
    """(query id, qid, title) of the queries with at least one judgement, in qid order."""
    return list(
        IdealScore.objects.filter(query__collection=collection, k=k)
        .order_by("query__qid")
        .values_list("query_id", "query__qid", "query__title")
    )


def _stored_values(
    run_ids: Sequence[int], k: int
) -> dict[int, dict[int, tuple[float, float, float, float]]]:
    """run id -> query id -> (ndcg, dcg, judged, ndcg_condensed) stored at k."""
    values: dict[int, dict[int, tuple[float, float, float, float]]] = defaultdict(dict)
    rows = QueryScore.objects.filter(run_id__in=list(run_ids), k=k).values_list(
        "run_id", "query_id", "ndcg", "dcg", "judged", "ndcg_condensed"
    )
    for run_id, query_id, ndcg, dcg, judged, condensed in rows:
        values[run_id][query_id] = (ndcg, dcg, judged, condensed)
    return values


def _vector(
    collection: Collection, evaluated: Sequence[int], stored: dict[int, float]
) -> dict[int, float]:
    """query id -> nDCG@k over the queries that count for the run's mean.

    With ``missing_queries == "zero"`` every evaluated query counts, 0.0 where the run gave
    no result (trec_eval -c); with ``"skip"`` only the queries the run answered.
    """
    if collection.missing_queries == "zero":
        return {query_id: stored.get(query_id, 0.0) for query_id in evaluated}
    return {query_id: stored[query_id] for query_id in evaluated if query_id in stored}


def _paired(first: dict[int, float], second: dict[int, float]) -> tuple[list[float], list[float]]:
    """Two runs' values on the queries both count (all evaluated ones in zero mode)."""
    shared = [query_id for query_id in first if query_id in second]
    return [first[q] for q in shared], [second[q] for q in shared]


def _p_value(first: dict[int, float], second: dict[int, float]) -> float:
    a, b = _paired(first, second)
    if not a:
        return 1.0  # nothing in common: no evidence of a difference
    return statistics.paired_randomization_test(
        a, b, permutations=PERMUTATIONS, seed=PERMUTATION_SEED
    )


# --- bounds -------------------------------------------------------------------------------


def top_grade_bounds(
    *, collection: Collection, k: int, runs: Sequence[Run], evaluated: Sequence[int]
) -> dict[int, dict[int, float]]:
    """run id -> query id -> nDCG@k if every unjudged document of the run's top k had the
    scale's highest grade, for every evaluated query the run answered.

    The what-if is scored like any real judging would be: the promoted documents join the
    query's ideal list too, so the value is the score the run would get had they been judged
    at the top grade. Because the ideal list grows, a run whose unjudged documents sit low in
    an already good top k can score *less* than reported; pages show both values as a range.
    Queries with no unjudged document in the top k keep their reported value unchanged.

    Reads: one query for every run's top k across queries, one streaming pass over the
    collection's judgements. Computed from current judgements, so while scores are pending
    it can be ahead of the stored values.
    """
    run_ids = [run.id for run in runs]
    top_grade = collection.grades.aggregate(top=Max("value"))["top"]
    wanted = set(evaluated)
    rankings: dict[int, dict[int, list[int]]] = defaultdict(dict)
    for run_id, query_id, documents in top_documents(run_ids=run_ids, query_ids=wanted, depth=k):
        rankings[run_id][query_id] = documents
    bounds: dict[int, dict[int, float]] = defaultdict(dict)
    if top_grade is None:
        return bounds
    for query_id, grades in effective_grades_by_query(collection=collection):
        if query_id not in wanted:
            continue
        for run_id in run_ids:
            ranking = rankings[run_id].get(query_id)
            if ranking is None:
                continue
            unjudged = [doc for doc in ranking if not _judged(grades.get(doc))]
            if not unjudged:
                continue  # the reported value stands; the caller fills it from storage
            promoted = dict(grades)
            promoted.update(dict.fromkeys(unjudged, top_grade))
            scores = scoring.query_scores(ranking, promoted, [k], collection.gain)
            bounds[run_id][query_id] = scores[k].ndcg
    return bounds


def _judged(grade: int | None) -> bool:
    return grade is not None and grade >= 0


def _mean(values: Sequence[float]) -> float:
    # Exact sum, correctly rounded mean: equal inputs give the stored RunScore mean's bits.
    return ExactSum(values).mean(len(values))


# --- leaderboard --------------------------------------------------------------------------


def leaderboard(*, collection: Collection, k: int) -> Leaderboard:
    """Every scored run at k, best first, with CI, judged@k, bounds and significance tiers.

    - Mean nDCG@k, judged@k, nDCG'@k and the query count are the stored run means.
    - CI: percentile bootstrap of the mean over the run's per-query values (the same queries
      the mean is over), ``BOOTSTRAP_RESAMPLES`` resamples, seed ``BOOTSTRAP_SEED``.
    - Tiers: a paired randomization test between each run and the next one down, over the
      queries both count, Holm-adjusted across those adjacent pairs; a new tier starts
      where the adjusted p-value is below ``ALPHA`` (see ``statistics.rank_tiers``).
    - Runs without stored means at k (never scored yet) are listed in ``unscored``.
    """
    state = scores_state(collection=collection)
    stored_means = list(
        RunScore.objects.filter(run__collection=collection, k=k)
        .select_related("run", "run__owner")
        .order_by("-ndcg", "run__name")
    )
    scored_ids = {row.run_id for row in stored_means}
    unscored = list(
        Run.objects.filter(collection=collection).exclude(id__in=scored_ids).order_by("name")
    )
    evaluated = [query_id for query_id, _, _ in _evaluated_queries(collection, k)]
    stored = _stored_values([row.run_id for row in stored_means], k)
    vectors = {
        row.run_id: _vector(collection, evaluated, {q: v[0] for q, v in stored[row.run_id].items()})
        for row in stored_means
    }
    bounds = top_grade_bounds(
        collection=collection, k=k, runs=[row.run for row in stored_means], evaluated=evaluated
    )
    raw_p = [
        _p_value(vectors[upper.run_id], vectors[lower.run_id])
        for upper, lower in itertools.pairwise(stored_means)
    ]
    adjusted = statistics.holm(raw_p)
    tiers = statistics.rank_tiers([row.ndcg for row in stored_means], adjusted, alpha=ALPHA)
    rows: list[LeaderboardRow] = []
    for index, row in enumerate(stored_means):
        values = list(vectors[row.run_id].values())
        ci = (
            statistics.bootstrap_ci(
                values, resamples=BOOTSTRAP_RESAMPLES, confidence=CONFIDENCE, seed=BOOTSTRAP_SEED
            )
            if values
            else None
        )
        promoted = bounds.get(row.run_id, {})
        top_values = [promoted.get(q, v) for q, v in vectors[row.run_id].items()]
        rows.append(
            LeaderboardRow(
                rank=index + 1,
                tier=tiers[index],
                run=row.run,
                ndcg=row.ndcg,
                ci_low=ci[0] if ci else None,
                ci_high=ci[1] if ci else None,
                judged=row.judged,
                ndcg_condensed=row.ndcg_condensed,
                queries=row.queries,
                ndcg_top_grade=_mean(top_values) if promoted else row.ndcg,
                p_next=adjusted[index] if index < len(adjusted) else None,
                pending=row.run.scored_at is None,
            )
        )
    return Leaderboard(collection=collection, k=k, rows=rows, unscored=unscored, state=state)


# --- one run ------------------------------------------------------------------------------


def run_scores(*, run: Run, k: int) -> RunScores:
    """A run's stored per-query scores at k (zero-filled per the collection's rule) and means."""
    collection = run.collection
    evaluated = _evaluated_queries(collection, k)
    stored = _stored_values([run.id], k)[run.id]
    per_query: list[QueryValue] = []
    for query_id, qid, title in evaluated:
        values = stored.get(query_id)
        if values is not None:
            per_query.append(QueryValue(query_id, qid, title, *values, answered=True))
        elif collection.missing_queries == "zero":
            per_query.append(QueryValue(query_id, qid, title, 0.0, 0.0, 0.0, 0.0, answered=False))
    mean = RunScore.objects.filter(run=run, k=k).first()
    state = scores_state(collection=collection)
    return RunScores(
        run=run,
        k=k,
        ndcg=mean.ndcg if mean else None,
        judged=mean.judged if mean else None,
        ndcg_condensed=mean.ndcg_condensed if mean else None,
        queries=mean.queries if mean else 0,
        per_query=per_query,
        pending=run.scored_at is None or state.pending_queries > 0,
    )


# --- one query ----------------------------------------------------------------------------


def query_overview(*, query: Query, k: int) -> QueryOverview:
    """Every run's stored nDCG@k for the query and its judged documents with grades."""
    collection = query.collection
    stored = {
        run_id: (ndcg, judged)
        for run_id, ndcg, judged in QueryScore.objects.filter(query=query, k=k).values_list(
            "run_id", "ndcg", "judged"
        )
    }
    answered = set(Ranking.objects.filter(query=query).values_list("run_id", flat=True))
    runs: list[RunOnQuery] = []
    for run in Run.objects.filter(collection=collection).order_by("name"):
        values = stored.get(run.id)
        runs.append(
            RunOnQuery(
                run=run,
                ndcg=values[0] if values else None,
                judged=values[1] if values else None,
                answered=run.id in answered,
            )
        )
    runs.sort(key=lambda r: (r.ndcg is None, -(r.ndcg or 0.0), r.run.name))
    grades = effective_grades(query_id=query.id, rule=collection.aggregation)
    counts = dict(
        query.judgements.values("document_id")
        .annotate(n=Count("id"))
        .values_list("document_id", "n")
    )
    documents = {
        d.id: d for d in Document.objects.filter(id__in=list(grades)).only("docno", "title")
    }
    judged = sorted(
        (
            JudgedDocument(
                docno=documents[doc].docno,
                title=documents[doc].title,
                grade=grade,
                judgements=counts.get(doc, 0),
            )
            for doc, grade in grades.items()
        ),
        key=lambda d: (-d.grade, d.docno),
    )
    idcg = IdealScore.objects.filter(query=query, k=k).values_list("idcg", flat=True).first()
    return QueryOverview(
        query=query, k=k, idcg=idcg, runs=runs, judged=judged, pending=query.scores_pending
    )


def query_rankings_side_by_side(
    *, query: Query, runs: Sequence[Run], k: int
) -> dict[int, list[RankedDocument]]:
    """run id -> the run's top k for the query with each document's effective grade."""
    grades = effective_grades(query_id=query.id, rule=query.collection.aggregation)
    tops = query_rankings(query_id=query.id, run_ids=[run.id for run in runs], depth=k)
    documents = {
        d.id: d
        for d in Document.objects.filter(
            id__in={doc for docs in tops.values() for doc in docs}
        ).only("docno", "title")
    }
    rankings: dict[int, list[RankedDocument]] = {run.id: [] for run in runs}
    for run_id, docs in tops.items():
        for position, document_id in enumerate(docs, start=1):
            grade = grades.get(document_id)
            document = documents[document_id]
            rankings[run_id].append(
                RankedDocument(
                    position, document.docno, document.title, grade if _judged(grade) else None
                )
            )
    return rankings


def query_unjudged_top(*, query: Query, k: int) -> list[int]:
    """Document ids in any run's top k for the query that have no judgement yet."""
    grades = effective_grades(query_id=query.id, rule=query.collection.aggregation)
    retrieved = {
        doc for docs in query_rankings(query_id=query.id, depth=k).values() for doc in docs
    }
    return sorted(doc for doc in retrieved if not _judged(grades.get(doc)))


# --- comparison ---------------------------------------------------------------------------


def runs_compare(*, a: Run, b: Run, k: int) -> Comparison:
    """Per-query differences a - b at k, the paired randomization p-value, wins/ties/losses.

    Over the queries both runs count (every evaluated query in zero mode, those both
    answered in skip mode), from stored per-query scores.
    """
    collection = a.collection
    evaluated = _evaluated_queries(collection, k)
    qids = {query_id: qid for query_id, qid, _ in evaluated}
    stored = _stored_values([a.id, b.id], k)
    ids = [query_id for query_id, _, _ in evaluated]
    first = _vector(collection, ids, {q: v[0] for q, v in stored[a.id].items()})
    second = _vector(collection, ids, {q: v[0] for q, v in stored[b.id].items()})
    shared = [query_id for query_id in first if query_id in second]
    rows = [ComparisonRow(qids[q], first[q], second[q], first[q] - second[q]) for q in shared]
    va, vb = [r.a for r in rows], [r.b for r in rows]
    wins, ties, losses = statistics.win_tie_loss(va, vb)
    state = scores_state(collection=collection)
    return Comparison(
        a=a,
        b=b,
        k=k,
        rows=rows,
        mean_a=_mean(va) if rows else None,
        mean_b=_mean(vb) if rows else None,
        p_value=_p_value(first, second) if rows else None,
        wins=wins,
        ties=ties,
        losses=losses,
        pending=state.pending or a.scored_at is None or b.scored_at is None,
    )
