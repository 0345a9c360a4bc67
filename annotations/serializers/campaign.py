"""Agreement, disagreements, adjudications and the judgement history, as the API gives them."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import JudgementHistory
from annotations.serializers.calibration import JudgeCalibrationSerializer
from annotations.serializers.collections import GRADE_RANGE
from annotations.serializers.fields import IdField, QidField
from annotations.serializers.inputs import StrictInputMixin


class AssessorGradeSerializer(serializers.Serializer):
    assessor = serializers.CharField()
    grade = serializers.IntegerField()


class AssessorNoteSerializer(serializers.Serializer):
    assessor = serializers.CharField()
    note = serializers.CharField()


class DisagreementSerializer(serializers.Serializer):
    qid = serializers.CharField()
    docno = serializers.CharField()
    grades = AssessorGradeSerializer(many=True)
    spread = serializers.IntegerField(help_text="Highest grade minus lowest.")
    effective = serializers.IntegerField(
        allow_null=True,
        help_text="The grades combined by the collection's rules (null: only machine grades, "
        "which the collection does not score).",
    )
    adjudicated = serializers.IntegerField(allow_null=True)
    notes = AssessorNoteSerializer(many=True)


class AdjudicationSerializer(serializers.Serializer):
    qid = serializers.CharField()
    docno = serializers.CharField()
    grade = serializers.IntegerField()
    note = serializers.CharField()
    organiser = serializers.CharField()
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()


class AdjudicationInputSerializer(StrictInputMixin, serializers.Serializer):
    qid = QidField()
    docno = IdField()
    grade = serializers.IntegerField(
        min_value=GRADE_RANGE[0],
        max_value=GRADE_RANGE[1],
        help_text="A value on the collection's grade scale; others are a 400.",
    )
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class PairAgreementSerializer(serializers.Serializer):
    first = serializers.CharField()
    second = serializers.CharField()
    items = serializers.IntegerField(help_text="Pairs both judged.")
    kappa = serializers.FloatField(allow_null=True, help_text="Cohen's kappa, quadratic weights.")
    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha, ordinal.")
    matrix = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text="Confusion matrix: rows the first assessor's grades, columns the second's.",
    )


class AgreementSerializer(serializers.Serializer):
    collection = serializers.CharField()
    levels = serializers.ListField(child=serializers.IntegerField())
    units = serializers.IntegerField(help_text="Pairs judged by two assessors or more.")
    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha, ordinal.")
    pairs = PairAgreementSerializer(many=True, help_text="Pairs of people (no machine judge).")
    machine_judges = JudgeCalibrationSerializer(
        many=True, help_text="Each machine judge, by name, calibrated against the people."
    )


class HistorySerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    qid = serializers.CharField(source="query.qid")
    docno = serializers.CharField(source="document.docno")
    assessor = serializers.CharField(source="assessor.username")
    changed_by = serializers.CharField(source="changed_by.username", allow_null=True)

    class Meta:
        model = JudgementHistory
        fields = [
            "id", "qid", "docno", "assessor", "old_grade", "new_grade", "source", "changed_by",
            "changed_at", "note",
        ]  # fmt: skip
        read_only_fields = fields
