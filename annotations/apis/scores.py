"""Scores: leaderboard, a run's per-query scores, paired comparison."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import (
    K_PARAMETER,
    MEASURE_PARAMETER,
    CollectionApiView,
    cutoff_of,
    documented_errors,
    measure_of,
)
from annotations.apis.conditional import (
    CONDITIONAL_PARAMETERS,
    NOT_MODIFIED,
    Validators,
    etag_of,
)
from annotations.metrics.conventions import CONVENTIONS
from annotations.metrics.measure_names import format_measure, trec_name
from annotations.metrics.measures import Measure
from annotations.models import Collection, Run
from annotations.permissions import (
    ANY_ROLE,
)
from annotations.scores import leaderboard_reads, measure_significance, snapshots
from annotations.scores.reports import REPORT_KINDS, leaderboard_report, report_board
from annotations.selectors import (
    compare_page,
    conventions,
    impact,
    leaderboards,
    measure_values,
    scores_state,
    stored_scores,
)
from annotations.serializers import (
    ComparisonSerializer,
    LeaderboardComputingSerializer,
    RunScoresSerializer,
)
from annotations.serializers.fields import ID_SCHEMA
from annotations.serializers.impact import LeaderboardFlipsSerializer


def _state(state: scores_state.ScoresState) -> dict[str, Any]:
    return {
        "pending": state.pending,
        "pending_queries": state.pending_queries,
        "pending_runs": state.pending_runs,
        "last_recomputed": state.last_recomputed,
        "stamp": state.stamp,
    }


def significance_summary(board: leaderboards.Leaderboard) -> dict[str, Any]:
    """The HSD pass's settings as the API states them."""
    significance = board.significance
    return {
        "test": "randomised Tukey HSD over queries (all pairs)",
        "permutations": significance.permutations
        if significance
        else leaderboards.HSD_PERMUTATIONS,
        "seed": significance.seed if significance else leaderboards.HSD_SEED,
        "correction": "family-wise over all pairs (the HSD's range distribution)",
        "alpha": significance.alpha if significance else board.alpha,
        "queries": significance.queries if significance else 0,
        "critical_difference": significance.critical if significance else None,
        "computed_at": significance.computed_at if significance else None,
        "current": board.significance_current,
    }


def leaderboard_body(
    board: leaderboards.Leaderboard, flips: impact.FlipState | None = None
) -> dict[str, Any]:
    """The leaderboard as the API returns it (the pages' self-refresh reads it too)."""
    collection = board.collection
    return LeaderboardFlipsSerializer(
        {
            "collection": collection.slug,
            "k": board.k,
            "statistics_computed_at": board.computed_at,
            "statistics_stamp": board.computed_stamp,
            "stale": board.stale,
            "cutoffs": collection.sorted_cutoffs,
            "gain": collection.gain,
            "missing_queries": collection.missing_queries,
            "machine_grades": collection.machine_grades,
            **_state(board.state),
            "bootstrap": {
                "resamples": board.resamples,
                "seed": board.bootstrap_seed,
                "confidence": board.confidence,
            },
            "significance": significance_summary(board),
            "runs": board.rows,
            "unscored": [run.name for run in board.unscored],
            "measures": collection.measures,
            "adjacent": flips.pairs if flips else [],
            "ranking_decided": flips.decided if flips else False,
            "flips_stamp": flips.stamp if flips else None,
        }
    ).data


# What the leaderboard states of a kept measure other than nDCG@k.
MEASURE_SHOWN = (
    "The mean of the measure per run, as trec_eval's `all` line computes it from the stored "
    "per-query values (counts summed), and its randomised Tukey HSD letters (not for the "
    "counts); the CIs, letters, judged@k and bounds of `runs` are nDCG@k's."
)


def measure_significance_summary(
    letters: leaderboards.Significance | None, stamp: str
) -> dict[str, Any]:
    """The settings of a kept measure's HSD pass as the API states them (``stamp``: the
    scores stamp the letters are current at)."""
    return {
        "test": "randomised Tukey HSD over queries (all pairs)",
        "permutations": letters.permutations if letters else leaderboards.HSD_PERMUTATIONS,
        "seed": letters.seed if letters else leaderboards.HSD_SEED,
        "correction": "family-wise over all pairs (the HSD's range distribution)",
        "alpha": letters.alpha if letters else leaderboards.ALPHA,
        "queries": letters.queries if letters else 0,
        "critical_difference": letters.critical if letters else None,
        "computed_at": letters.computed_at if letters else None,
        "current": letters is not None and letters.stamp == stamp,
    }


def leaderboard_measure(
    collection: Collection,
    measure: Measure,
    letters: leaderboards.Significance | None,
    stamp: str,
) -> dict[str, Any]:
    """The `measure` part of a leaderboard body: every run's mean of one kept measure, with
    the letters of its stored HSD pass (``letters``; None before the first)."""
    means, pending = measure_values.measure_means(collection, measure)
    tested = measure_significance.tested(measure)
    return {
        "name": format_measure(measure),
        "trec_eval": trec_name(measure),
        "runs": [
            {
                "run": mean.run.name,
                "mean": mean.value,
                "queries": mean.queries,
                "letters": letters.letters.get(mean.run.id, "") if letters else "",
                "below_best": letters.below_best.get(mean.run.id, False) if letters else False,
                "p_best": letters.p_best.get(mean.run.id) if letters else None,
            }
            for mean in means
        ],
        "pending": [run.name for run in pending],
        "shown": MEASURE_SHOWN,
        "significance": measure_significance_summary(letters, stamp) if tested else None,
    }


def _board_changed_at(
    board: leaderboards.Leaderboard, flips: impact.FlipState | None
) -> datetime | None:
    """When the leaderboard's body last changed, if stored times say it: the scores' last
    write and the statistics' computation. None while scores are pending, and while pools by
    impact queue pairs (their counts move with assignments, which no stored time follows)."""
    if board.state.changed_at is None or (flips and any(p.queued for p in flips.pairs)):
        return None
    times = [t for t in (board.state.changed_at, board.computed_at) if t is not None]
    return max(times)


def computing_response(*, slug: str, k: int) -> Response:
    """202: the leaderboard at k is being computed by a worker; ask again after a while."""
    wait = leaderboard_reads.RETRY_AFTER_SECONDS
    body = {
        "collection": slug,
        "k": k,
        "computing": True,
        "retry_after": wait,
        "detail": f"The leaderboard at k={k} is being computed; ask again in {wait} s.",
    }
    return Response(
        LeaderboardComputingSerializer(body).data, status=202, headers={"Retry-After": str(wait)}
    )


class LeaderboardApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True
    sees = "leaderboard"

    @extend_schema(
        summary="Leaderboard at k: means, bootstrap CIs, significance letters, judged@k, bounds",
        parameters=[K_PARAMETER, MEASURE_PARAMETER, *CONDITIONAL_PARAMETERS],
        description="The leaderboard a worker stored last, marked `stale` while the scores "
        "have moved past it. A cutoff whose first leaderboard a worker has not stored yet "
        "answers 202; ask again after `retry_after` seconds (the Retry-After header).",
        responses={
            200: LeaderboardFlipsSerializer,
            202: LeaderboardComputingSerializer,
            **NOT_MODIFIED,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> HttpResponseBase:
        k = cutoff_of(self.collection, request)
        measure = measure_of(self.collection, request)
        if measure is not None:
            return self._with_measure(request, k, measure)
        # Served as stored: the JSON rendered for it before, without reading the rows.
        json_asked = getattr(request.accepted_renderer, "format", "") == "json"
        stored = leaderboard_reads.stored_read(collection=self.collection, k=k)
        served = f"leaderboard-served:{stored.key}" if stored and json_asked else None
        hit = cache.get(served) if served else None
        if hit is not None:
            etag, changed_at, content = hit
            validators = Validators(etag, changed_at)
            return validators.not_modified(request) or validators.stamped(
                HttpResponse(content, content_type="application/json")
            )
        board = snapshots.leaderboard_read(collection=self.collection, k=k)
        if board is None:
            return computing_response(slug=self.collection.slug, k=k)
        flips = impact.flip_state_stored(collection=self.collection, k=k)
        # The body changes only with the stamps: serialised once per process and stamp.
        computed = board.computed_at.timestamp() if board.computed_at else 0.0
        marks = hashlib.sha256(repr(flips).encode()).hexdigest()[:16] if flips else "none"
        significance = board.significance
        significance_mark = (
            significance.computed_at.timestamp()
            if significance and significance.computed_at
            else "none"
        )
        key = "leaderboard-body:" + ":".join(
            map(
                str,
                (
                    self.collection.id,
                    k,
                    board.state.stamp,
                    board.computed_stamp,
                    computed,
                    marks,
                    significance_mark,
                ),
            )
        )
        # The body is a function of the key: its hash is a strong validator.
        validators = Validators(etag_of(key), _board_changed_at(board, flips))
        not_modified = validators.not_modified(request)
        if not_modified is not None:
            return not_modified
        body = cache.get(key)
        if body is None:
            body = leaderboard_body(board, flips)
            cache.set(key, body, timeout=600)
        as_stored = stored is not None and stored.stamp == board.computed_stamp == board.state.stamp
        if served and as_stored:
            content = JSONRenderer().render(body)
            cache.set(served, (validators.etag, validators.last_modified, content), 600)
        return validators.stamped(Response(body))

    def _with_measure(self, request: Request, k: int, measure: Measure) -> HttpResponseBase:
        """The leaderboard at k with every run's mean of a kept measure, computed from the
        stored per-query values when read (nothing is stored), and the letters of the
        measure's HSD pass a worker stored last."""
        board = snapshots.leaderboard_read(collection=self.collection, k=k)
        if board is None:
            return computing_response(slug=self.collection.slug, k=k)
        flips = impact.flip_state_stored(collection=self.collection, k=k)
        state = board.state
        letters = (
            measure_significance.measure_significance_read(
                collection=self.collection, measure=measure
            )
            if measure_significance.tested(measure)
            else None
        )
        changed = _board_changed_at(board, flips)
        if changed is not None and letters is not None and letters.computed_at is not None:
            changed = max(changed, letters.computed_at)
        validators = Validators(
            etag_of(
                "leaderboard-measure",
                self.collection.id,
                k,
                format_measure(measure),
                state.stamp,
                board.computed_stamp,
                repr(flips),
                board.significance.computed_at if board.significance else None,
                letters.computed_at if letters else None,
            ),
            changed,
        )
        not_modified = validators.not_modified(request)
        if not_modified is not None:
            return not_modified
        body = dict(leaderboard_body(board, flips))
        body["measure"] = leaderboard_measure(self.collection, measure, letters, state.stamp)
        return validators.stamped(Response(body))


class LeaderboardReportApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True
    sees = "leaderboard"

    @extend_schema(
        summary="The leaderboard at k as a report: CSV or booktabs LaTeX",
        description=(
            "Rank, run, mean nDCG@k, 95% CI, judged@k, queries and the randomised Tukey HSD's "
            "compact letters (runs sharing a letter are not significantly different). CSV "
            "numbers are the shortest text that reads back to the stored double; LaTeX has 4 "
            "decimals and needs `\\usepackage{booktabs}`. The same report as the leaderboard "
            "page's downloads and `manage.py evaluate --format leaderboard-csv|leaderboard-latex`. "
            "Until a worker has stored the leaderboard at k and its significance pass, 202 (ask "
            "again after `retry_after` seconds)."
        ),
        parameters=[
            K_PARAMETER,
            OpenApiParameter(
                "as",
                str,
                enum=list(REPORT_KINDS),
                required=True,
                description="The report's kind: `csv` or `latex`.",
            ),
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="RFC 4180 CSV"),
            (200, "application/x-tex"): OpenApiResponse(
                OpenApiTypes.STR, description="A LaTeX table (booktabs)"
            ),
            202: LeaderboardComputingSerializer,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> HttpResponseBase:
        kind = request.query_params.get("as", "")
        if kind not in REPORT_KINDS:
            raise ValidationError({"as": [f"Choose one of: {', '.join(REPORT_KINDS)}."]})
        k = cutoff_of(self.collection, request)
        board = report_board(collection=self.collection, k=k)
        if board is None:
            return computing_response(slug=self.collection.slug, k=k)
        report = leaderboard_report(board=board, kind=kind)
        response = HttpResponse(report.text, content_type=report.content_type)
        response["Content-Disposition"] = f'attachment; filename="{report.filename}"'
        return response


CONVENTION_PARAMETER = OpenApiParameter(
    "convention",
    str,
    enum=list(CONVENTIONS),
    default="trec_eval",
    description="Whose nDCG@k: `trec_eval` (the stored scores), or `sklearn`, `ranx` or "
    "`ir_measures`: the value that library gives on the same qrels and run, computed from the "
    "current judgements when asked (ties, ideal list, gain and which queries count: "
    "docs/conventions.md). Only `ndcg` (per query and the mean) and `queries` follow it; "
    "`dcg`, `judged` and `ndcg_condensed` stay the platform's.",
)


def convention_of(request: Request) -> str:
    convention = request.query_params.get("convention", "trec_eval")
    if convention not in CONVENTIONS:
        raise ValidationError({"convention": [f"Choose one of: {', '.join(CONVENTIONS)}."]})
    return convention


class RunScoresApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True
    sees = "any_run_scores"

    @extend_schema(
        summary="A run's per-query scores at k (full float precision)",
        parameters=[K_PARAMETER, CONVENTION_PARAMETER, MEASURE_PARAMETER, *CONDITIONAL_PARAMETERS],
        responses={
            200: RunScoresSerializer,
            **NOT_MODIFIED,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str, name: str) -> HttpResponseBase:
        k = cutoff_of(self.collection, request)
        convention = convention_of(request)
        measure = measure_of(self.collection, request)
        run = Run.objects.filter(collection=self.collection, name=name).first()
        if run is None or not self.access.run_scores(run):
            raise NotFound("No such run.")
        # The stamp changes with every judgement, run, score or setting change.
        state = scores_state.scores_state(collection=self.collection)
        validators = Validators(
            etag_of(
                "run-scores",
                state.stamp,
                run.id,
                k,
                convention,
                format_measure(measure) if measure is not None else "",
                self.collection.measures_layout,
            ),
            state.changed_at,
        )
        not_modified = validators.not_modified(request)
        if not_modified is not None:
            return not_modified
        scores = stored_scores.run_scores(run=run, k=k)
        body: dict[str, Any] = {
            "collection": self.collection.slug,
            "run": run.name,
            "k": k,
            "convention": convention,
            "pending": scores.pending,
            "machine_grades": self.collection.machine_grades,
            "ndcg": scores.ndcg,
            "judged": scores.judged,
            "ndcg_condensed": scores.ndcg_condensed,
            "queries": scores.queries,
            "per_query": scores.per_query,
        }
        if convention != "trec_eval":
            body.update(self._convention(run, k, convention, scores.per_query))
        if measure is not None:
            body["measure"] = _run_measure(self.collection, measure, run)
        return validators.stamped(Response(RunScoresSerializer(body).data))

    @staticmethod
    def _convention(
        run: Run, k: int, convention: str, stored: list[stored_scores.QueryValue]
    ) -> dict[str, Any]:
        """nDCG@k under another library's convention, computed from the current qrels and
        the run (a read: nothing is stored); the other per-query values are the stored ones
        (0 where the convention counts a query the platform leaves out)."""
        measure = Measure("nDCG", k)
        results = conventions.run_results(run=run)
        try:
            values = conventions.run_convention_values(
                run=run, measures=[measure], convention=convention, results=results
            )
        except ValueError:  # no judged query the run answers
            return {"ndcg": None, "queries": 0, "per_query": []}
        by_qid = {row.qid: row for row in stored}
        rows = []
        for qid, query_values in values.per_query.items():
            row = by_qid.get(qid)
            rows.append(
                {
                    "qid": qid,
                    "ndcg": query_values[measure],
                    "dcg": row.dcg if row else 0.0,
                    "judged": row.judged if row else 0.0,
                    "ndcg_condensed": row.ndcg_condensed if row else 0.0,
                    "answered": qid in results,
                }
            )
        return {"ndcg": values.means[measure], "queries": len(rows), "per_query": rows}


def _run_measure(collection: Collection, measure: Measure, run: Run) -> dict[str, Any]:
    """The `measure` part of a run's scores: its per-query values and mean."""
    rows, mean = measure_values.run_measure_values(collection, measure, run)
    return {
        "name": format_measure(measure),
        "trec_eval": trec_name(measure),
        "pending": rows is None,
        "mean": mean.value if mean is not None else None,
        "queries": mean.queries if mean is not None else 0,
        "per_query": None
        if rows is None
        else [{"qid": qid, "value": value, "answered": answered} for qid, value, answered in rows],
    }


class CompareApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True
    sees = "any_run_scores"

    @extend_schema(
        summary="Compare two runs at k: per-query differences, p-value, wins/ties/losses",
        description="nDCG@k's per-query values, or with `measure=` those of a kept measure "
        "(the paired differences, the randomization test and wins/ties/losses over them).",
        parameters=[
            OpenApiParameter(
                "a", ID_SCHEMA, required=True, description="The first run's name, as it is."
            ),
            OpenApiParameter(
                "b", ID_SCHEMA, required=True, description="The second run's name, as it is."
            ),
            K_PARAMETER,
            MEASURE_PARAMETER,
        ],
        responses={200: ComparisonSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        k = cutoff_of(self.collection, request)
        measure = measure_of(self.collection, request)
        runs: dict[str, Run] = {}
        problems: dict[str, list[str]] = {}
        for key in ("a", "b"):
            name = request.query_params.get(key, "")
            run = (
                Run.objects.filter(collection=self.collection, name=name).first() if name else None
            )
            if run is None:
                problems[key] = [
                    f"No run named {name!r}." if name else "This parameter is required."
                ]
            else:
                runs[key] = run
        if problems:
            raise ValidationError(problems)
        hidden = [run.name for run in runs.values() if not self.access.run_scores(run)]
        if hidden:  # a system owner compares only runs whose scores they may read
            raise NotFound(f"No such run: {hidden[0]!r}.")
        # Cached under the scores stamp, as for the compare page: the test runs once per change.
        comparison = compare_page.comparison_cached(a=runs["a"], b=runs["b"], k=k, measure=measure)
        body = {
            "collection": self.collection.slug,
            "k": k,
            "a": comparison.a.name,
            "b": comparison.b.name,
            "measure": comparison.measure_label,
            "pending": comparison.pending,
            "machine_grades": self.collection.machine_grades,
            "queries": len(comparison.rows),
            "mean_a": comparison.mean_a,
            "mean_b": comparison.mean_b,
            "mean_difference": comparison.mean_difference,
            "p_value": comparison.p_value,
            "permutations": comparison.permutations,
            "seed": comparison.seed,
            "wins": comparison.wins,
            "ties": comparison.ties,
            "losses": comparison.losses,
            "per_query": comparison.rows,
        }
        return Response(ComparisonSerializer(body).data)
