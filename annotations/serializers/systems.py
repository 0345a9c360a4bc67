"""Search systems, a try's results, and their fetches with the queries that failed."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import FetchFailure, ImportJob, SearchSystem
from annotations.selectors.system_history import Change
from annotations.serializers.inputs import StrictInputMixin

SETTINGS = [
    "method", "url_template", "headers", "body_template", "depth", "answer_format",
    "hits_path", "id_path", "score_path", "title_path", "snippet_path", "url_path",
    "timeout_seconds", "attempts", "concurrency", "requests_per_minute", "fetch_every_hours",
]  # fmt: skip


class HeaderSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=100)
    value = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False,
        help_text="Sent as is; with `secret`, the secret's value follows it",
    )  # fmt: skip
    secret = serializers.CharField(
        required=False, allow_blank=True, default="",
        help_text="The server's variable holding a secret, one the operator set aside for "
        "search systems (NDCG_SEARCH_KEY_<NAME>); never stored or shown",
    )  # fmt: skip


class MappingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The JMESPath expressions the answer is read with (the preset's where none was given)."""

    hits = serializers.CharField()
    id = serializers.CharField()
    score = serializers.CharField(allow_blank=True)
    title = serializers.CharField(allow_blank=True)
    snippet = serializers.CharField(allow_blank=True)
    url = serializers.CharField(allow_blank=True)


class SearchSystemSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    headers = HeaderSerializer(many=True, read_only=True)
    mapping = MappingSerializer(read_only=True)

    class Meta:
        model = SearchSystem
        fields = ["name", *SETTINGS, "mapping", "created", "updated"]
        read_only_fields = fields


class SearchSystemWriteSerializer(StrictInputMixin, serializers.ModelSerializer):  # type: ignore[type-arg]
    headers = HeaderSerializer(many=True, required=False)
    body_template = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False,
        help_text='A JSON body (POST), placeholders inside its strings: {"size": "{{depth}}", '
        '"query": {"match": {"text": "{{title}}"}}}',
    )  # fmt: skip

    class Meta:
        model = SearchSystem
        fields = ["name", *SETTINGS]


class SearchSystemUpdateSerializer(SearchSystemWriteSerializer):
    class Meta(SearchSystemWriteSerializer.Meta):
        fields = SETTINGS
        extra_kwargs = {field: {"required": False} for field in SETTINGS}


class HitSerializer(serializers.Serializer):  # type: ignore[type-arg]
    docno = serializers.CharField()
    score = serializers.FloatField(
        help_text="As the engine gave it; without scores, the engine's order as descending "
        "numbers (depth, depth - 1, ...)"
    )
    title = serializers.CharField(allow_blank=True)
    snippet = serializers.CharField(allow_blank=True)
    url = serializers.CharField(allow_blank=True)


class SystemTriedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    qid = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    hits = HitSerializer(many=True, help_text="The hits as they would be stored (the first 20)")
    total = serializers.IntegerField(help_text="How many hits the answer held, up to the depth")
    failure = serializers.CharField(
        allow_blank=True,
        help_text="Why there are none: the HTTP status, or the answer's path that failed",
    )
    status = serializers.IntegerField(allow_null=True, help_text="The last HTTP status")
    seconds = serializers.FloatField()


class FetchCreateSerializer(StrictInputMixin, serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=200,
        help_text='The run\'s name, e.g. "bm25-boost-title" (blank: the system\'s name and '
        "the time)",
    )  # fmt: skip


class FetchSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    """A fetch: an import job of kind `fetch`, its progress in queries asked."""

    system = serializers.CharField(source="file_name", read_only=True)
    run = serializers.CharField(source="run_name", read_only=True, help_text="The run it stores")
    queries_asked = serializers.IntegerField(source="lines_done", read_only=True)
    queries_to_ask = serializers.IntegerField(source="lines_total", read_only=True)
    failed_queries = serializers.SerializerMethodField(
        help_text="Queries that got no answer (listed under failures/)"
    )
    progress = serializers.SerializerMethodField(help_text='"asked 40 of 250 queries", "done"')
    retryable = serializers.BooleanField(read_only=True)

    class Meta:
        model = ImportJob
        fields = [
            "id", "system", "run", "state", "stage", "progress", "queries_asked",
            "queries_to_ask", "failed_queries", "cancel_requested", "summary", "error",
            "retryable", "created", "started", "finished",
        ]  # fmt: skip
        read_only_fields = fields

    def get_failed_queries(self, job: ImportJob) -> int:
        return job.fetch_failures.count()

    def get_progress(self, job: ImportJob) -> str:
        return job.progress[2]


class FetchFailureSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    class Meta:
        model = FetchFailure
        fields = ["qid", "status", "message"]
        read_only_fields = fields


class SystemHistoryPointSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.CharField(source="run.name")
    fetched = serializers.DateTimeField(help_text="When the fetch stored the run")
    mean = serializers.FloatField(
        allow_null=True, help_text="trec_eval's mean over the queries that count; null: pending"
    )
    ci_low = serializers.FloatField(allow_null=True, help_text="Bootstrap CI of the mean")
    ci_high = serializers.FloatField(allow_null=True)
    queries = serializers.IntegerField(help_text="The queries the mean is over")
    version_mean = serializers.FloatField(
        source="on_version.mean",
        allow_null=True,
        default=None,
        help_text="Mean nDCG@k on the qrels version asked for (`version=`): the run as it is, "
        "the judgements and rules as they were; null without one",
    )
    version_ci_low = serializers.FloatField(
        source="on_version.ci_low", allow_null=True, default=None, help_text="Its bootstrap CI"
    )
    version_ci_high = serializers.FloatField(
        source="on_version.ci_high", allow_null=True, default=None
    )
    version_queries = serializers.IntegerField(
        source="on_version.queries",
        allow_null=True,
        default=None,
        help_text="The queries that mean is over",
    )


class SystemHistorySerializer(serializers.Serializer):  # type: ignore[type-arg]
    collection = serializers.CharField(source="system.collection.slug")
    system = serializers.CharField(source="system.name")
    measure = serializers.CharField(help_text='"nDCG@10", or a kept measure (`measure=`)')
    k = serializers.IntegerField(allow_null=True, help_text="nDCG@k's cutoff; null: a measure")
    confidence = serializers.FloatField(help_text="The CIs' level")
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    pending = serializers.BooleanField(help_text="Some run or query is still being scored")
    main_k = serializers.IntegerField(
        help_text="The cutoff of the collection's main measure, nDCG@k, regressions are judged on"
    )
    version = serializers.CharField(
        source="version.name",
        allow_null=True,
        default=None,
        help_text="The qrels version of each run's `on_version` (`version=`); null: none",
    )
    runs = SystemHistoryPointSerializer(
        source="points", many=True, help_text="The latest 120 runs, oldest (first fetched) first"
    )


class SystemChangedQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]
    qid = serializers.CharField()
    score = serializers.FloatField(source="a", help_text="The measure's value for the run")
    previous_score = serializers.FloatField(
        source="b", help_text="The measure's value for the previous run"
    )
    difference = serializers.FloatField(help_text="score - previous_score")


class SystemTopChangeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    qid = serializers.CharField()
    entered = serializers.ListField(
        child=serializers.CharField(), help_text="In the run's top k, not the previous run's"
    )
    left = serializers.ListField(
        child=serializers.CharField(), help_text="In the previous run's top k, not the run's"
    )


class SystemChangeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What changed from one run of a system to another (`selectors.system_history.Change`)."""

    collection = serializers.CharField(source="new.collection.slug")
    system = serializers.CharField(source="new.system.name")
    run = serializers.CharField(source="new.name")
    previous_run = serializers.CharField(source="old.name")
    measure = serializers.CharField(
        source="comparison.measure_label",
        help_text='What the runs are compared on: "nDCG@10", or a kept measure (`measure=`)',
    )
    k = serializers.IntegerField(
        source="comparison.k", help_text="The cutoff of nDCG@k and of the top k compared"
    )
    pending = serializers.BooleanField(source="comparison.pending")
    queries = serializers.SerializerMethodField(help_text="The queries both runs count")
    mean = serializers.FloatField(source="comparison.mean_a", allow_null=True)
    previous_mean = serializers.FloatField(source="comparison.mean_b", allow_null=True)
    difference = serializers.FloatField(
        source="comparison.mean_difference", allow_null=True, help_text="mean - previous_mean"
    )
    p_value = serializers.FloatField(
        source="comparison.p_value",
        allow_null=True,
        help_text="Two-sided paired randomization test over the queries both runs count "
        "(10,000 sign flips, seed 0: the compare endpoint's)",
    )
    alpha = serializers.FloatField()
    significant = serializers.BooleanField(help_text="p_value < alpha")
    regressed = serializers.BooleanField(help_text="Significant and the mean went down")
    better = serializers.IntegerField(source="comparison.wins")
    same = serializers.IntegerField(source="comparison.ties")
    worse = serializers.IntegerField(source="comparison.losses")
    moved = SystemChangedQuerySerializer(
        many=True, help_text="The 20 queries whose score moved most, by |difference|"
    )
    queries_changed = serializers.IntegerField(help_text="Queries whose top k changed")
    tops = SystemTopChangeSerializer(
        many=True, help_text="Per query whose top k changed: the documents that entered or left"
    )
    unjudged = serializers.IntegerField(
        help_text="(query, document) pairs of the run's top k no person judged: send them to "
        "a pool with POST pools/ {name, depth: k, runs: [run]}"
    )

    def get_queries(self, change: Change) -> int:
        return len(change.comparison.rows)
