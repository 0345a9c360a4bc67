"""Machine judges, their runs and a try's results."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import JudgeRun, MachineJudge
from annotations.serializers.inputs import StrictInputMixin, http_url

SETTINGS = [
    "base_url", "model", "api_key_env", "prompt_template", "variant_template", "temperature",
    "max_tokens",
    "concurrency", "requests_per_minute", "prompt_price", "completion_price", "logprobs",
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
    cost = serializers.FloatField(read_only=True, help_text="From the judge's token prices")

    class Meta:
        model = JudgeRun
        fields = [
            "id", "pool", "scope", "state", "pairs_total", "pairs_done", "pairs_cached",
            "pairs_failed", "prompt_tokens", "completion_tokens", "cost", "error", "created",
            "started", "finished",
        ]  # fmt: skip
        read_only_fields = fields


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
