"""REST API shapes: input validation for writes and the documented bodies of every response."""

from __future__ import annotations

import math
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotations import trec
from annotations.models import (
    AGGREGATION_CHOICES,
    GAIN_CHOICES,
    ID_MAX_LENGTH,
    MISSING_CHOICES,
    Collection,
    Document,
    Judgement,
    Query,
    Run,
)

# --- errors -------------------------------------------------------------------------------


class ErrorLocationSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)


class ErrorDetailSerializer(serializers.Serializer):
    status = serializers.IntegerField()
    code = serializers.CharField()
    detail = serializers.CharField()
    fields = serializers.DictField(  # type: ignore[assignment]  # the body's key, not Serializer.fields
        child=serializers.ListField(child=serializers.CharField())
    )
    location = ErrorLocationSerializer(required=False, help_text="Where a TREC file is wrong.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


class ImportSummarySerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


def _check_id(value: str) -> None:
    problem = trec.id_problem(value)
    if problem is not None:
        raise serializers.ValidationError(f"Not a valid id: {problem}.")


def IdField(**kwargs: Any) -> serializers.CharField:
    return serializers.CharField(max_length=ID_MAX_LENGTH, validators=[_check_id], **kwargs)


# --- collections --------------------------------------------------------------------------


class GradeLevelSerializer(serializers.Serializer):
    value = serializers.IntegerField(min_value=-9, max_value=99)
    label = serializers.CharField(max_length=100)  # type: ignore[assignment]
    definition = serializers.CharField(required=False, allow_blank=True, default="")


class CollectionSerializer(serializers.ModelSerializer):
    grades = GradeLevelSerializer(many=True, read_only=True)
    cutoffs = serializers.ListField(child=serializers.IntegerField(), read_only=True)
    roles = serializers.SerializerMethodField(help_text="The caller's roles in the collection.")

    class Meta:
        model = Collection
        fields = [
            "slug", "name", "description", "gain", "cutoffs", "missing_queries",
            "aggregation", "public_leaderboard", "assessors_see_leaderboard", "grades", "roles",
            "created", "updated",
        ]  # fmt: skip
        read_only_fields = fields

    def get_roles(self, collection: Collection) -> list[str]:
        roles_by_collection: dict[int, frozenset[str]] = self.context.get("roles", {})
        return sorted(roles_by_collection.get(collection.id, frozenset()))


class CollectionCreateSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=100)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    gain = serializers.ChoiceField(choices=GAIN_CHOICES, default="linear")
    cutoffs = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=1000),
        min_length=1,
        required=False,
        default=[5, 10, 20],
    )
    missing_queries = serializers.ChoiceField(choices=MISSING_CHOICES, default="zero")
    aggregation = serializers.ChoiceField(choices=AGGREGATION_CHOICES, default="median")
    public_leaderboard = serializers.BooleanField(default=False)
    assessors_see_leaderboard = serializers.BooleanField(
        default=False, help_text="Assessors may read the leaderboard (blinded otherwise)."
    )
    grades = GradeLevelSerializer(
        many=True, required=False, help_text="The grade scale; 0-3 with labels when absent."
    )


class CollectionUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    gain = serializers.ChoiceField(choices=GAIN_CHOICES, required=False)
    cutoffs = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=1000), min_length=1, required=False
    )
    missing_queries = serializers.ChoiceField(choices=MISSING_CHOICES, required=False)
    aggregation = serializers.ChoiceField(choices=AGGREGATION_CHOICES, required=False)
    public_leaderboard = serializers.BooleanField(required=False)
    assessors_see_leaderboard = serializers.BooleanField(required=False)


# --- queries and documents ----------------------------------------------------------------


class QuerySerializer(serializers.ModelSerializer):
    scores_pending = serializers.BooleanField(read_only=True)

    class Meta:
        model = Query
        fields = ["qid", "title", "description", "narrative", "scores_pending"]


class QueryInputSerializer(serializers.Serializer):
    qid = IdField()
    title = serializers.CharField(required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    narrative = serializers.CharField(required=False, allow_blank=True, default="")


class DocumentSerializer(serializers.ModelSerializer):
    url = serializers.CharField(read_only=True, help_text="The document's URL, or empty.")

    class Meta:
        model = Document
        fields = ["docno", "title", "text", "url"]


class DocumentInputSerializer(serializers.Serializer):
    docno = IdField()
    title = serializers.CharField(required=False, allow_blank=True, default="")
    text = serializers.CharField(required=False, allow_blank=True, default="")
    url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")


# --- runs ---------------------------------------------------------------------------------


class RunSerializer(serializers.ModelSerializer):
    owner = serializers.SerializerMethodField(help_text="The submitting system owner's username.")
    pending = serializers.SerializerMethodField(help_text="True until the run is first scored.")

    class Meta:
        model = Run
        fields = ["name", "description", "owner", "created", "updated", "scored_at", "pending"]

    def get_owner(self, run: Run) -> str | None:
        return run.owner.get_username() if run.owner else None

    def get_pending(self, run: Run) -> bool:
        return run.scored_at is None


class RunResultSerializer(serializers.Serializer):
    qid = IdField()
    docno = IdField()
    score = serializers.FloatField(
        required=False, allow_null=True, help_text="Give all scores or none."
    )
    rank = serializers.IntegerField(
        required=False,
        min_value=trec.RANK_RANGE[0],
        max_value=trec.RANK_RANGE[1],
        help_text="Informational, as in trec_eval; a 32-bit integer.",
    )

    def validate_score(self, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise serializers.ValidationError("The score must be a finite number.")
        return value


class RunJsonSerializer(serializers.Serializer):
    """A run as JSON: results in rank order per query; without scores that order is kept."""

    name = IdField(required=False, help_text="Required on POST; the URL names the run on PUT.")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    results = RunResultSerializer(many=True, allow_empty=False)

    def validate_results(self, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        scored = [item.get("score") is not None for item in results]
        if any(scored) and not all(scored):
            raise serializers.ValidationError("Give a score for every result or for none.")
        seen: set[tuple[str, str]] = set()
        for item in results:
            pair = (item["qid"], item["docno"])
            if pair in seen:
                raise serializers.ValidationError(
                    f"Document {item['docno']!r} appears twice for query {item['qid']!r}."
                )
            seen.add(pair)
        return results

    def grouped(self) -> dict[str, list[tuple[str, float | None, int]]]:
        """{qid: [(docno, score, rank)]} in the order given, as ``run_store`` takes it."""
        by_query: dict[str, list[tuple[str, float | None, int]]] = {}
        for item in self.validated_data["results"]:
            docs = by_query.setdefault(item["qid"], [])
            docs.append((item["docno"], item.get("score"), item.get("rank", len(docs) + 1)))
        return by_query


class RunUploadSerializer(serializers.Serializer):
    """A TREC run file (qid Q0 docno rank score tag) as multipart/form-data."""

    file = serializers.FileField(help_text="The run file; at most NDCG_MAX_UPLOAD_MB.")
    name = IdField(required=False, help_text="Defaults to the file's tag (POST).")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    split_tags = serializers.BooleanField(
        required=False,
        default=False,
        help_text="POST only: a file holding several tags becomes one run per tag, each named "
        "by its tag (without it such a file is refused).",
    )


class RunImportSerializer(serializers.Serializer):
    run = RunSerializer()
    results = serializers.IntegerField(help_text="Number of results stored.")
    ignored_ranks = serializers.IntegerField(
        default=0,
        help_text="Lines whose rank is not a 32-bit integer: ignored (results are ordered by "
        "score), stored as the result's place in that order.",
    )
    first_ignored_rank_line = serializers.IntegerField(
        allow_null=True, default=None, help_text="The first of those lines."
    )
    summary = serializers.CharField(help_text="The import summary, as `import_run` prints it.")


class RunWriteSerializer(RunImportSerializer):
    """The run stored (with `split_tags`, the first tag's), and every run the request stored."""

    runs = RunImportSerializer(
        many=True, help_text="Every run stored: one, or with `split_tags` one per tag in order."
    )


# --- judgements ---------------------------------------------------------------------------


class JudgementSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="query.qid")
    docno = serializers.CharField(source="document.docno")
    assessor = serializers.CharField(source="assessor.username")
    pending = serializers.BooleanField(
        source="query.scores_pending",
        read_only=True,
        help_text="True while the query's scores await recomputation (with a worker, or a "
        "broker that could not be reached: the sweep recomputes them).",
    )

    class Meta:
        model = Judgement
        fields = ["qid", "docno", "assessor", "grade", "note", "created", "updated", "pending"]


class JudgementInputSerializer(serializers.Serializer):
    qid = IdField()
    docno = IdField()
    grade = serializers.IntegerField(min_value=-9, max_value=99)
    note = serializers.CharField(required=False, allow_blank=True, default="")


# --- scores -------------------------------------------------------------------------------


CI_HELP = "95% percentile bootstrap interval of the mean over queries (null: no queries)."


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
    tier = serializers.IntegerField(help_text="Runs in one tier are not separable (see tiers).")
    name = serializers.CharField(source="run.name")
    owner = serializers.SerializerMethodField()
    ndcg = serializers.FloatField(help_text="Mean nDCG@k over the evaluated queries.")
    ci = serializers.SerializerMethodField()
    judged = serializers.FloatField(help_text="Mean judged@k.")
    ndcg_condensed = serializers.FloatField(help_text="Mean nDCG'@k (unjudged removed).")
    queries = serializers.IntegerField(help_text="Queries the mean is over.")
    bounds = serializers.SerializerMethodField()
    p_next = serializers.FloatField(
        allow_null=True, help_text="Holm-adjusted p-value against the next run down."
    )
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
    permutations = serializers.IntegerField()
    seed = serializers.IntegerField()
    correction = serializers.CharField()
    alpha = serializers.FloatField()


class ScoresStateSerializer(serializers.Serializer):
    pending = serializers.BooleanField(help_text="True while some scores await recomputation.")
    pending_queries = serializers.IntegerField()
    pending_runs = serializers.IntegerField()
    last_recomputed = serializers.DateTimeField(allow_null=True)
    stamp = serializers.CharField(help_text="Changes whenever scores or judgements change.")


class LeaderboardSerializer(ScoresStateSerializer):
    collection = serializers.CharField()
    k = serializers.IntegerField()
    statistics_computed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the CIs, tiers and bounds were computed."
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
    bootstrap = BootstrapSerializer()
    significance = SignificanceSerializer()
    runs = LeaderboardRunSerializer(many=True)
    unscored = serializers.ListField(
        child=serializers.CharField(), help_text="Runs with no stored scores yet."
    )


class QueryValueSerializer(serializers.Serializer):
    qid = serializers.CharField()
    ndcg = serializers.FloatField()
    dcg = serializers.FloatField()
    judged = serializers.FloatField()
    ndcg_condensed = serializers.FloatField()
    answered = serializers.BooleanField(help_text="False: the run gave no result (counts 0).")


class RunScoresSerializer(serializers.Serializer):
    collection = serializers.CharField()
    run = serializers.CharField()
    k = serializers.IntegerField()
    pending = serializers.BooleanField()
    ndcg = serializers.FloatField(allow_null=True)
    judged = serializers.FloatField(allow_null=True)
    ndcg_condensed = serializers.FloatField(allow_null=True)
    queries = serializers.IntegerField()
    per_query = QueryValueSerializer(many=True)


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
    pending = serializers.BooleanField()
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
