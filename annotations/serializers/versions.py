"""Qrels versions: the tag, the leaderboard as of a mark, the diff of two."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotations.models import MACHINE_GRADE_CHOICES, QrelsVersion
from annotations.serializers.inputs import StrictInputMixin


class QrelsVersionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )

    class Meta:
        model = QrelsVersion
        fields = [
            "name",
            "note",
            "created",
            "created_by",
            "history_id",
            "aggregation",
            "machine_grades",
            "gain",
            "missing_queries",
        ]
        read_only_fields = fields


class QrelsVersionCreateSerializer(StrictInputMixin, serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=10_000, trim_whitespace=False
    )
    machine_grades = serializers.ChoiceField(
        choices=MACHINE_GRADE_CHOICES,
        required=False,
        help_text="How machine judges' grades count in this version; the collection's rule "
        "when absent.",
    )


class RunAsOfSerializer(serializers.Serializer):
    run = serializers.CharField()
    rank = serializers.IntegerField()
    ndcg = serializers.FloatField()
    judged = serializers.FloatField()
    queries = serializers.IntegerField()


class MeasureRunAsOfSerializer(serializers.Serializer):
    run = serializers.CharField()
    rank = serializers.IntegerField()
    mean = serializers.FloatField(help_text="trec_eval's `all` value (counts summed).")
    queries = serializers.IntegerField(help_text="The queries the value is over.")


class MeasureAsOfSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The measure, in ir_measures' syntax.")
    trec_eval = serializers.CharField(help_text="Its name in trec_eval's output.")
    runs = MeasureRunAsOfSerializer(many=True, help_text="Best first, then by name.")


class LeaderboardAsOfSerializer(serializers.Serializer):
    collection = serializers.CharField()
    mark = serializers.CharField(help_text="The version's name, or the time")
    k = serializers.IntegerField()
    pairs = serializers.IntegerField(help_text="Judged pairs in these qrels")
    queries = serializers.IntegerField(help_text="Judged queries")
    machine_grades = serializers.ChoiceField(
        choices=MACHINE_GRADE_CHOICES,
        help_text="The rule for machine judges' grades these scores count under: the "
        "version's own, or the collection's for a past time.",
    )
    runs = RunAsOfSerializer(many=True)
    measure = MeasureAsOfSerializer(
        required=False,
        help_text="Only with `measure=`: every run's value of that measure under these qrels, "
        "as trec_eval computes it on them (with -c when the missing-query rule counts 0).",
    )


class PairChangeSerializer(serializers.Serializer):
    qid = serializers.CharField()
    docno = serializers.CharField()
    before = serializers.IntegerField(allow_null=True)
    after = serializers.IntegerField(allow_null=True)


class RunChangeSerializer(serializers.Serializer):
    run = serializers.CharField()
    before = serializers.FloatField()
    after = serializers.FloatField()
    change = serializers.FloatField()
    rank_before = serializers.IntegerField()
    rank_after = serializers.IntegerField()


class VersionsDiffSerializer(serializers.Serializer):
    collection = serializers.CharField()
    a = serializers.CharField()
    b = serializers.CharField()
    k = serializers.IntegerField()
    measure = serializers.CharField(
        help_text="What `runs` are scored by: `nDCG@k`, or the kept measure asked by `measure=`."
    )
    added = PairChangeSerializer(many=True)
    changed = PairChangeSerializer(many=True)
    removed = PairChangeSerializer(many=True)
    runs = RunChangeSerializer(many=True)
    tau = serializers.FloatField(allow_null=True)
    tau_ap = serializers.FloatField(allow_null=True)
