"""Machine judges, their runs and a try's results."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import JudgeRun, JudgeRunFailure, MachineJudge
from annotations.selectors.judge_runs import run_progress
from annotations.serializers.inputs import StrictInputMixin, http_url

SETTINGS = [
    "base_url", "model", "api_key_env", "prompt_template", "variant_template", "temperature",
    "max_tokens",
    "concurrency", "requests_per_minute", "timeout_seconds", "attempts", "prompt_price",
    "completion_price", "currency", "logprobs",
]  # fmt: skip


class MachineJudgeSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    account = serializers.CharField(source="account.username", read_only=True)

    class Meta:
        model = MachineJudge
        fields = ["name", "account", "prompt_version", "created", *SETTINGS]
        read_only_fields = fields


class MachineJudgeWriteSerializer(StrictInputMixin, serializers.ModelSerializer):  # type: ignore[type-arg]
    base_url = serializers.CharField(
        max_length=500,
        help_text="The OpenAI-compatible API, e.g. https://api.openai.com/v1",
    )
    prompt_template = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False,
        help_text="Fields {scale} {title} {description} {narrative} {document} {low} {high}; "
        "blank: the UMBRELA prompt",
    )  # fmt: skip
    variant_template = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False,
        help_text="A second wording (the same fields), asked too: where the grades differ the "
        "pair counts as uncertain for pools by impact; blank: none",
    )  # fmt: skip

    class Meta:
        model = MachineJudge
        fields = ["name", *SETTINGS]

    def validate_base_url(self, value: str) -> str:
        return http_url(value)


class MachineJudgeUpdateSerializer(MachineJudgeWriteSerializer):
    base_url = serializers.CharField(
        max_length=500,
        required=False,
        help_text="The OpenAI-compatible API, e.g. https://api.openai.com/v1",
    )

    class Meta(MachineJudgeWriteSerializer.Meta):
        fields = SETTINGS
        extra_kwargs = {field: {"required": False} for field in SETTINGS}


class JudgeRunSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    pool = serializers.IntegerField(source="pool_id", read_only=True)
    retry_of = serializers.IntegerField(
        source="retry_of_id", read_only=True, allow_null=True,
        help_text="The run this one retries (null: none)",
    )  # fmt: skip
    cost = serializers.FloatField(read_only=True, help_text="From the judge's token prices")
    currency = serializers.CharField(
        source="judge.currency", read_only=True, help_text="The cost's currency (ISO 4217)"
    )
    eta_seconds = serializers.SerializerMethodField(
        help_text="While queued or running: about how many seconds are left (null: none)"
    )
    pace_limited = serializers.SerializerMethodField(
        help_text="Running at its judge's requests per minute: a higher pace would go faster"
    )

    class Meta:
        model = JudgeRun
        fields = [
            "id", "pool", "scope", "retry_of", "state", "pairs_total", "pairs_done",
            "pairs_cached", "pairs_failed", "requests", "prompt_tokens", "completion_tokens",
            "cost", "currency", "eta_seconds", "pace_limited", "error", "created", "started",
            "finished",
        ]  # fmt: skip
        read_only_fields = fields

    def get_eta_seconds(self, run: JudgeRun) -> int | None:
        return run_progress(run).eta_seconds

    def get_pace_limited(self, run: JudgeRun) -> bool:
        return run_progress(run).pace_limited


class JudgeRunFailureSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    qid = serializers.CharField(source="query.qid", read_only=True)
    docno = serializers.CharField(source="document.docno", read_only=True)
    kind = serializers.ChoiceField(
        choices=JudgeRunFailure.KIND_CHOICES, read_only=True,
        help_text="timeout: no answer in time; unavailable: 429, 5xx or no connection every "
        "time; refused: another status or an address not called; malformed: not a chat "
        "completion; no_grade: an answer naming no grade on the scale",
    )  # fmt: skip
    message = serializers.CharField(
        read_only=True, help_text="Status codes and error classes, never the endpoint's answer"
    )

    class Meta:
        model = JudgeRunFailure
        fields = ["qid", "docno", "kind", "message", "created"]
        read_only_fields = fields


class JudgeRunRetrySerializer(StrictInputMixin, serializers.Serializer):
    pairs = serializers.ChoiceField(
        choices=[("failed", "the pairs that failed"), ("all", "the whole run")],
        default="failed",
        help_text="failed: the run's failed pairs; all: the whole run (a failed or cancelled one)",
    )


class JudgeRunCreateSerializer(StrictInputMixin, serializers.Serializer):
    pool = serializers.IntegerField(help_text="The pool's id")
    scope = serializers.ChoiceField(choices=JudgeRun.SCOPE_CHOICES, default=JudgeRun.UNJUDGED)


class TriedSerializer(serializers.Serializer):
    qid = serializers.CharField()
    docno = serializers.CharField()
    prompt = serializers.CharField()
    answer = serializers.CharField()
    grade = serializers.IntegerField(allow_null=True, help_text="null: no grade on the scale")
    failure = serializers.CharField()
    variant_answer = serializers.CharField(
        help_text="The variant template's answer (empty: the judge has none)"
    )
    variant_grade = serializers.IntegerField(allow_null=True)
