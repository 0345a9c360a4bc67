"""Scores: leaderboard, a run's per-query scores, paired comparison."""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.cache import cache
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import (
    K_PARAMETER,
    CollectionApiView,
    cutoff_of,
    documented_errors,
)
from annotations.models import Run
from annotations.permissions import (
    ANY_ROLE,
)
from annotations.scores import leaderboard_reads
from annotations.selectors import (
    compare_page,
    impact,
    leaderboards,
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
from annotations.services import impact as impact_services


def _state(state: scores_state.ScoresState) -> dict[str, Any]:
    return {
        "pending": state.pending,
        "pending_queries": state.pending_queries,
        "pending_runs": state.pending_runs,
        "last_recomputed": state.last_recomputed,
        "stamp": state.stamp,
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
            **_state(board.state),
            "bootstrap": {
                "resamples": board.resamples,
                "seed": board.bootstrap_seed,
                "confidence": board.confidence,
            },
            "significance": {
                "test": "paired randomization (sign flip) over queries",
                "permutations": board.permutations,
                "seed": board.permutation_seed,
                "correction": "Holm across adjacent pairs",
                "alpha": board.alpha,
            },
            "runs": board.rows,
            "unscored": [run.name for run in board.unscored],
            "adjacent": flips.pairs if flips else [],
            "ranking_decided": flips.decided if flips else False,
            "flips_stamp": flips.stamp if flips else None,
        }
    ).data


class LeaderboardApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True
    sees = "leaderboard"

    @extend_schema(
        summary="Leaderboard at k: means, bootstrap CIs, tiers, judged@k, bounds",
        parameters=[K_PARAMETER],
        description="With workers (a broker), a cutoff whose first leaderboard is not stored "
        "yet answers 202 at once while a worker computes it; ask again after `retry_after` "
        "seconds (the Retry-After header).",
        responses={
            200: LeaderboardFlipsSerializer,
            202: LeaderboardComputingSerializer,
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        k = cutoff_of(self.collection, request)
        board = leaderboard_reads.leaderboard_read_ready(collection=self.collection, k=k)
        if board is None:
            wait = leaderboard_reads.RETRY_AFTER_SECONDS
            body = {
                "collection": self.collection.slug,
                "k": k,
                "computing": True,
                "retry_after": wait,
                "detail": f"The leaderboard at k={k} is being computed; ask again in {wait} s.",
            }
            return Response(
                LeaderboardComputingSerializer(body).data,
                status=202,
                headers={"Retry-After": str(wait)},
            )
        impact_services.flips_read_refresh(collection=self.collection, board=board)
        flips = impact.flip_state_stored(collection=self.collection, k=k)
        # The body changes only with the stamps: serialised once per process and stamp.
        computed = board.computed_at.timestamp() if board.computed_at else 0.0
        marks = hashlib.sha256(repr(flips).encode()).hexdigest()[:16] if flips else "none"
        key = "leaderboard-body:" + ":".join(
            map(
                str,
                (self.collection.id, k, board.state.stamp, board.computed_stamp, computed, marks),
            )
        )
        body = cache.get(key)
        if body is None:
            body = leaderboard_body(board, flips)
            cache.set(key, body, timeout=600)
        return Response(body)


class RunScoresApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True
    sees = "any_run_scores"

    @extend_schema(
        summary="A run's per-query scores at k (full float precision)",
        parameters=[K_PARAMETER],
        responses={200: RunScoresSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        k = cutoff_of(self.collection, request)
        run = Run.objects.filter(collection=self.collection, name=name).first()
        if run is None or not self.access.run_scores(run):
            raise NotFound("No such run.")
        scores = stored_scores.run_scores(run=run, k=k)
        body = {
            "collection": self.collection.slug,
            "run": run.name,
            "k": k,
            "pending": scores.pending,
            "ndcg": scores.ndcg,
            "judged": scores.judged,
            "ndcg_condensed": scores.ndcg_condensed,
            "queries": scores.queries,
            "per_query": scores.per_query,
        }
        return Response(RunScoresSerializer(body).data)


class CompareApi(CollectionApiView):
    roles = {"GET": ANY_ROLE}
    public_read = True
    sees = "any_run_scores"

    @extend_schema(
        summary="Compare two runs at k: per-query differences, p-value, wins/ties/losses",
        parameters=[
            OpenApiParameter(
                "a", ID_SCHEMA, required=True, description="The first run's name, as it is."
            ),
            OpenApiParameter(
                "b", ID_SCHEMA, required=True, description="The second run's name, as it is."
            ),
            K_PARAMETER,
        ],
        responses={200: ComparisonSerializer, **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        k = cutoff_of(self.collection, request)
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
        comparison = compare_page.comparison_cached(a=runs["a"], b=runs["b"], k=k)
        body = {
            "collection": self.collection.slug,
            "k": k,
            "a": comparison.a.name,
            "b": comparison.b.name,
            "pending": comparison.pending,
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
