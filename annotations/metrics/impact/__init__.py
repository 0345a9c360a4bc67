"""Impact-ordered judging: which unjudged (query, document) could change the leaderboard most.

The model is written down in ``annotations.metrics.impact.model``; ``pool`` holds the array form of
the runs' top k, ``prior`` the grade prior estimated from the judged documents.
"""

from annotations.metrics.impact.budget import SPREAD, budget_pick, per_query_cap
from annotations.metrics.impact.model import (
    TIE,
    DocumentPrior,
    ImpactResult,
    PairStates,
    estimated_idcg,
    impact_compute,
    impact_scores,
    pair_weights,
    query_calibrated,
)
from annotations.metrics.impact.pool import UNJUDGED, QueryTop
from annotations.metrics.impact.prior import SMOOTHING, GradePrior, grade_prior

__all__ = [
    "SMOOTHING",
    "SPREAD",
    "TIE",
    "UNJUDGED",
    "DocumentPrior",
    "GradePrior",
    "ImpactResult",
    "PairStates",
    "QueryTop",
    "budget_pick",
    "estimated_idcg",
    "grade_prior",
    "impact_compute",
    "impact_scores",
    "pair_weights",
    "per_query_cap",
    "query_calibrated",
]
