"""Assessor sensitivity: per-assessor rankings, their correlations and rank swings; and the
ranking under each rule for machine grades."""

from __future__ import annotations

from rest_framework import serializers


class AssessorRankingSerializer(serializers.Serializer):
    assessor = serializers.CharField()
    judged = serializers.IntegerField(help_text="Pairs this assessor judged")
    differing = serializers.IntegerField(help_text="Of which the grade differs from the effective")
    queries = serializers.IntegerField(help_text="Queries scored again with their grades")
    ranking = serializers.ListField(child=serializers.CharField(), help_text="Runs, best first")
    means = serializers.DictField(child=serializers.FloatField(), help_text="Run -> mean nDCG@k")
    tau = serializers.FloatField(
        allow_null=True, help_text="Kendall's tau-b against the effective ranking"
    )
    tau_ap = serializers.FloatField(
        allow_null=True, help_text="AP correlation, the effective ranking as truth"
    )


class RankingPairSerializer(serializers.Serializer):
    first = serializers.CharField()
    second = serializers.CharField()
    tau = serializers.FloatField(allow_null=True)
    tau_ap = serializers.FloatField(allow_null=True, help_text="Mean of both directions")


class RunSwingSerializer(serializers.Serializer):
    run = serializers.CharField()
    effective_rank = serializers.IntegerField()
    best = serializers.IntegerField()
    worst = serializers.IntegerField()
    swing = serializers.IntegerField(help_text="worst - best")


class SensitivitySerializer(serializers.Serializer):
    collection = serializers.CharField()
    k = serializers.IntegerField()
    shared_pairs = serializers.IntegerField(help_text="Pairs judged by two or more assessors")
    effective = serializers.ListField(
        child=serializers.CharField(), help_text="The leaderboard's ranking, best first"
    )
    effective_means = serializers.DictField(child=serializers.FloatField())
    assessors = AssessorRankingSerializer(many=True)
    pairs = RankingPairSerializer(many=True)
    swings = RunSwingSerializer(many=True, help_text="Largest swing first")


class RuleRankingSerializer(serializers.Serializer):
    rule = serializers.ChoiceField(
        choices=["people", "fill", "assessor"],
        help_text="people: people only; fill: machine grades on the pairs no person judged; "
        "assessor: the machine as one assessor in the aggregation",
    )
    queries = serializers.IntegerField(help_text="Queries evaluated under the rule")
    ranking = serializers.ListField(child=serializers.CharField(), help_text="Runs, best first")
    means = serializers.DictField(child=serializers.FloatField(), help_text="Run -> mean nDCG@k")
    tau = serializers.FloatField(
        allow_null=True, help_text="Kendall's tau-b against the people-only ranking"
    )
    tau_ap = serializers.FloatField(
        allow_null=True, help_text="AP correlation, the people-only ranking as truth"
    )


class RunMoveSerializer(serializers.Serializer):
    run = serializers.CharField()
    ranks = serializers.DictField(child=serializers.IntegerField(), help_text="Rule -> rank")
    means = serializers.DictField(child=serializers.FloatField(), help_text="Rule -> mean nDCG@k")


class MachineRulesSerializer(serializers.Serializer):
    collection = serializers.CharField()
    k = serializers.IntegerField()
    rule = serializers.CharField(help_text="The collection's rule for machine grades")
    machine_pairs = serializers.IntegerField(help_text="Pairs a machine judge graded")
    filled_pairs = serializers.IntegerField(help_text="Of which no person judged")
    queries = serializers.IntegerField(help_text="Queries a machine judged (scored again)")
    rules = RuleRankingSerializer(
        many=True, help_text="people, fill, assessor; empty when no machine has graded"
    )
    moves = RunMoveSerializer(
        many=True, help_text="Runs whose rank differs between the rules, largest spread first"
    )
