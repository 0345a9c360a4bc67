"""Machine judges calibrated against people, as the agreement response gives them."""

from __future__ import annotations

from rest_framework import serializers

MATRIX_HELP = "Confusion matrix over the levels: rows the judge's grades, columns the {}."


class _AgreementFields(serializers.Serializer):
    items = serializers.IntegerField(help_text="Pairs both graded.")
    kappa = serializers.FloatField(
        allow_null=True, help_text="Cohen's kappa, quadratic weights (null: one level, no pair)."
    )
    alpha = serializers.FloatField(
        allow_null=True, help_text="Krippendorff's alpha, ordinal (null: one level, no pair)."
    )


class PersonAgreementSerializer(_AgreementFields):
    person = serializers.CharField(source="second", help_text="The person's username.")
    matrix = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text=MATRIX_HELP.format("person's"),
    )


class AdjudicatedAgreementSerializer(_AgreementFields):
    matrix = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text=MATRIX_HELP.format("adjudicated grades"),
    )


class GradeBiasSerializer(serializers.Serializer):
    grade = serializers.IntegerField(help_text="A grade people gave.")
    items = serializers.IntegerField(help_text="Comparisons (pair, person) with that grade.")
    judge_mean = serializers.FloatField(help_text="The judge's mean grade on them.")
    difference = serializers.FloatField(help_text="judge_mean - grade.")


class QueryDisputeSerializer(serializers.Serializer):
    qid = serializers.CharField()
    pairs = serializers.IntegerField(help_text="Pairs the judge and people both graded.")
    mean_absolute_difference = serializers.FloatField(
        help_text="Mean over the pairs of |judge - person|, averaged over each pair's people."
    )


class JudgeCalibrationSerializer(serializers.Serializer):
    judge = serializers.CharField(source="name")
    model = serializers.CharField()
    graded = serializers.IntegerField(help_text="Pairs the judge graded on the scale.")
    pairs = serializers.IntegerField(
        source="calibration.pairs", help_text="Of them, pairs a person graded too."
    )
    comparisons = serializers.IntegerField(
        source="calibration.comparisons", help_text="(pair, person) both graded."
    )
    people = PersonAgreementSerializer(
        source="calibration.people", many=True, help_text="Each person with a pair in common."
    )
    adjudicated = AdjudicatedAgreementSerializer(
        source="calibration.adjudicated",
        help_text="Against the adjudicated grades; items 0 when the judge graded none of them.",
    )
    bias = GradeBiasSerializer(source="calibration.bias", many=True)
    mean_difference = serializers.FloatField(
        source="calibration.mean_difference",
        allow_null=True,
        help_text="Mean of judge - person over the comparisons; null without one.",
    )
    queries = QueryDisputeSerializer(
        source="calibration.queries",
        many=True,
        help_text="Up to 10 queries with 2 common pairs or more where the judge differs most.",
    )
