"""Score responses: leaderboard, a run's per-query scores, comparisons."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotations.metrics.conventions import CONVENTIONS
from annotations.models import MACHINE_GRADE_CHOICES

CI_HELP = "95% percentile bootstrap interval of the mean over queries (null: no queries)."
MACHINE_GRADES_HELP = (
    "The collection's rule for machine judges' grades, which these scores and judged@k "
    "count under: `people` (not counted: people's grades only), `fill` (counted on the "
    "pairs no person judged) or `assessor` (one assessor among the people)."
)
JUDGED_HELP = "judged@k: the share of the top k with a grade that counts under `machine_grades`."


class IntervalSerializer(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()


class BoundsSerializer(serializers.Serializer):
    unjudged_nonrelevant = serializers.FloatField(
        help_text="The reported nDCG@k: unjudged documents count as non-relevant."
    )
    unjudged_top_grade = serializers.FloatField(
        help_text="nDCG@k if every unjudged document of the top k had the highest grade "
        "(they join the ideal list too, so in rare cases this is lower)."
    )


class LeaderboardRunSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    letters = serializers.CharField(
        help_text="Compact letter display of the randomised Tukey HSD: runs sharing a letter "
        "are not significantly different (empty until the significance pass ran)."
    )
    below_best = serializers.BooleanField(
        help_text="True when the run is significantly below the best run (HSD, alpha)."
    )
    p_best = serializers.FloatField(
        allow_null=True, help_text="HSD-adjusted p-value of the run against the best run."
    )
    name = serializers.CharField(source="run.name")
    owner = serializers.SerializerMethodField()
    ndcg = serializers.FloatField(help_text="Mean nDCG@k over the evaluated queries.")
    ci = serializers.SerializerMethodField()
    judged = serializers.FloatField(help_text=f"Mean {JUDGED_HELP}")
    ndcg_condensed = serializers.FloatField(help_text="Mean nDCG'@k (unjudged removed).")
    queries = serializers.IntegerField(help_text="Queries the mean is over.")
    bounds = serializers.SerializerMethodField()
    pending = serializers.BooleanField(help_text="True while the run awaits its first scoring.")

    def get_owner(self, row: Any) -> str | None:
        return row.run.owner  # type: ignore[no-any-return]

    @extend_schema_field(IntervalSerializer(allow_null=True, help_text=CI_HELP))
    def get_ci(self, row: Any) -> dict[str, float] | None:
        if row.ci_low is None:
            return None
        return {"low": row.ci_low, "high": row.ci_high}

    @extend_schema_field(BoundsSerializer())
    def get_bounds(self, row: Any) -> dict[str, float]:
        return {"unjudged_nonrelevant": row.ndcg, "unjudged_top_grade": row.ndcg_top_grade}


class BootstrapSerializer(serializers.Serializer):
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    confidence = serializers.FloatField()


class SignificanceSerializer(serializers.Serializer):
    test = serializers.CharField()
    permutations = serializers.IntegerField(
        help_text="Permutations of the HSD (10,000; fewer on very large leaderboards)."
    )
    seed = serializers.IntegerField()
    correction = serializers.CharField()
    alpha = serializers.FloatField()
    queries = serializers.IntegerField(help_text="Queries the runs are compared on.")
    critical_difference = serializers.FloatField(
        allow_null=True,
        help_text="Half-width of the simultaneous intervals: a pair whose mean difference "
        "exceeds it is significantly different.",
    )
    computed_at = serializers.DateTimeField(allow_null=True)
    current = serializers.BooleanField(
        help_text="False while the letters are those of earlier scores (being recomputed)."
    )


class ScoresStateSerializer(serializers.Serializer):
    pending = serializers.BooleanField(help_text="True while some scores await recomputation.")
    pending_queries = serializers.IntegerField()
    pending_runs = serializers.IntegerField()
    last_recomputed = serializers.DateTimeField(allow_null=True)
    stamp = serializers.CharField(help_text="Changes whenever scores or judgements change.")


class MeasureMeanSerializer(serializers.Serializer):
    run = serializers.CharField()
    mean = serializers.FloatField(help_text="trec_eval's `all` value (counts summed).")
    queries = serializers.IntegerField(help_text="The queries the mean is over.")
    letters = serializers.CharField(
        help_text="Compact letter display of the randomised Tukey HSD on this measure: runs "
        "sharing a letter are not significantly different (empty until its pass ran, and "
        "for the counts summed over queries)."
    )
    below_best = serializers.BooleanField(
        help_text="True when the run is significantly below the best run on this measure."
    )
    p_best = serializers.FloatField(
        allow_null=True, help_text="HSD-adjusted p-value of the run against the best run."
    )


class LeaderboardMeasureSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The measure, in ir_measures' syntax.")
    trec_eval = serializers.CharField(help_text="Its name in trec_eval's output.")
    runs = MeasureMeanSerializer(many=True, help_text="Best first, then by name.")
    pending = serializers.ListField(
        child=serializers.CharField(),
        help_text="Runs whose values of the collection's measures await their rescore.",
    )
    shown = serializers.CharField(help_text="What is computed for this measure.")
    significance = SignificanceSerializer(
        allow_null=True,
        help_text="The randomised Tukey HSD over every pair of runs on this measure, as a "
        "worker last computed it (null for the counts summed over queries).",
    )


class LeaderboardSerializer(ScoresStateSerializer):
    collection = serializers.CharField()
    k = serializers.IntegerField()
    statistics_computed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the CIs and bounds were computed."
    )
    statistics_stamp = serializers.CharField(
        help_text="The scores stamp the statistics were computed at."
    )
    stale = serializers.BooleanField(
        help_text="True while the stored statistics trail `stamp` (a refresh is under way)."
    )
    cutoffs = serializers.ListField(child=serializers.IntegerField())
    gain = serializers.CharField()
    missing_queries = serializers.CharField()
    machine_grades = serializers.ChoiceField(
        choices=MACHINE_GRADE_CHOICES, help_text=MACHINE_GRADES_HELP
    )
    bootstrap = BootstrapSerializer()
    significance = SignificanceSerializer()
    runs = LeaderboardRunSerializer(many=True)
    unscored = serializers.ListField(
        child=serializers.CharField(), help_text="Runs with no stored scores yet."
    )
    measures = serializers.ListField(
        child=serializers.CharField(), help_text="The measures kept beside nDCG@k."
    )
    measure = LeaderboardMeasureSerializer(
        required=False,
        help_text="Only with `measure=`: every run's mean of that measure.",
    )


class QueryValueSerializer(serializers.Serializer):
    qid = serializers.CharField()
    ndcg = serializers.FloatField()
    dcg = serializers.FloatField()
    judged = serializers.FloatField()
    ndcg_condensed = serializers.FloatField()
    answered = serializers.BooleanField(help_text="False: the run gave no result (counts 0).")


class MeasureQueryValueSerializer(serializers.Serializer):
    qid = serializers.CharField()
    value = serializers.FloatField()
    answered = serializers.BooleanField(help_text="False: the run gave no result (counts 0).")


class RunMeasureSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The measure, in ir_measures' syntax.")
    trec_eval = serializers.CharField(help_text="Its name in trec_eval's output.")
    pending = serializers.BooleanField(
        help_text="True while the run's values of the collection's measures await a rescore "
        "(mean and per_query are then null)."
    )
    mean = serializers.FloatField(
        allow_null=True, help_text="trec_eval's `all` value (counts summed)."
    )
    queries = serializers.IntegerField()
    per_query = MeasureQueryValueSerializer(many=True, allow_null=True)


class RunScoresSerializer(serializers.Serializer):
    collection = serializers.CharField()
    run = serializers.CharField()
    k = serializers.IntegerField()
    convention = serializers.ChoiceField(
        choices=CONVENTIONS,
        help_text="Whose nDCG@k `ndcg` is: trec_eval's (stored) or the library's named "
        "(computed from the current judgements; docs/conventions.md).",
    )
    pending = serializers.BooleanField()
    machine_grades = serializers.ChoiceField(
        choices=MACHINE_GRADE_CHOICES, help_text=MACHINE_GRADES_HELP
    )
    ndcg = serializers.FloatField(allow_null=True)
    judged = serializers.FloatField(allow_null=True, help_text=f"Mean {JUDGED_HELP}")
    ndcg_condensed = serializers.FloatField(allow_null=True)
    queries = serializers.IntegerField()
    per_query = QueryValueSerializer(many=True)
    measure = RunMeasureSerializer(
        required=False,
        help_text="Only with `measure=`: the run's values of that measure.",
    )


class ComparisonRowSerializer(serializers.Serializer):
    qid = serializers.CharField()
    a = serializers.FloatField()
    b = serializers.FloatField()
    difference = serializers.FloatField()


class ComparisonSerializer(serializers.Serializer):
    collection = serializers.CharField()
    k = serializers.IntegerField()
    a = serializers.CharField()
    b = serializers.CharField()
    measure = serializers.CharField(
        help_text="What is compared: `nDCG@k`, or the kept measure asked by `measure=` "
        "(ir_measures' name; means are trec_eval's `all` over the queries both runs count; "
        "judged@k stays nDCG@k's)."
    )
    pending = serializers.BooleanField()
    machine_grades = serializers.ChoiceField(
        choices=MACHINE_GRADE_CHOICES, help_text=MACHINE_GRADES_HELP
    )
    queries = serializers.IntegerField()
    mean_a = serializers.FloatField(allow_null=True)
    mean_b = serializers.FloatField(allow_null=True)
    mean_difference = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(
        allow_null=True, help_text="Two-sided paired randomization test over queries."
    )
    permutations = serializers.IntegerField()
    seed = serializers.IntegerField()
    wins = serializers.IntegerField()
    ties = serializers.IntegerField()
    losses = serializers.IntegerField()
    per_query = ComparisonRowSerializer(many=True)


class LeaderboardComputingSerializer(serializers.Serializer):
    """202: the cutoff's first leaderboard snapshot is being computed by a worker."""

    collection = serializers.CharField()
    k = serializers.IntegerField()
    computing = serializers.BooleanField(
        help_text="Always true: no leaderboard is stored at this cutoff yet; a worker "
        "computes it now (queued by this request if it was not)."
    )
    retry_after = serializers.IntegerField(
        help_text="Seconds to wait before asking again (also the Retry-After header)."
    )
    detail = serializers.CharField()
