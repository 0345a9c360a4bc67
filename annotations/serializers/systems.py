"""Search systems, a try's results, and their fetches with the queries that failed."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import FetchFailure, ImportJob, SearchSystem
from annotations.serializers.inputs import StrictInputMixin

SETTINGS = [
    "method", "url_template", "headers", "body_template", "depth", "answer_format",
    "hits_path", "id_path", "score_path", "title_path", "snippet_path", "url_path",
    "timeout_seconds", "attempts", "concurrency", "requests_per_minute",
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
