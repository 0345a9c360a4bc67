"""Collections: their settings, grade scale and the caller's roles."""

from __future__ import annotations

from rest_framework import serializers

from annotations.metrics.machine_grades import DEFAULT_RULE, RULE_EFFECTS
from annotations.models import (
    AGGREGATION_CHOICES,
    GAIN_CHOICES,
    MACHINE_GRADE_CHOICES,
    MISSING_CHOICES,
    STALE_CHOICES,
    Collection,
)
from annotations.serializers.fields import CutoffsField, MeasuresField
from annotations.serializers.inputs import StrictInputMixin

# The values a grade scale may hold (the scale itself is per collection).
GRADE_RANGE = (-9, 99)


class GradeLevelSerializer(StrictInputMixin, serializers.Serializer):
    value = serializers.IntegerField(
        min_value=GRADE_RANGE[0], max_value=GRADE_RANGE[1], help_text="Distinct in a scale."
    )
    label = serializers.CharField(max_length=100, trim_whitespace=False)  # type: ignore[assignment]
    definition = serializers.CharField(required=False, allow_blank=True, default="")


class CollectionSerializer(serializers.ModelSerializer):
    grades = GradeLevelSerializer(many=True, read_only=True)
    cutoffs = serializers.ListField(child=serializers.IntegerField(), read_only=True)
    measures = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="Measures kept beside nDCG@k, in ir_measures' syntax.",
    )
    roles = serializers.SerializerMethodField(help_text="The caller's roles in the collection.")

    class Meta:
        model = Collection
        fields = [
            "slug",
            "name",
            "description",
            "gain",
            "cutoffs",
            "measures",
            "missing_queries",
            "aggregation",
            "stale_judgements",
            "machine_grades",
            "public_leaderboard",
            "assessors_see_leaderboard",
            "grades",
            "roles",
            "created",
            "updated",
        ]
        read_only_fields = fields

    def get_roles(self, collection: Collection) -> list[str]:
        roles_by_collection: dict[int, frozenset[str]] = self.context.get("roles", {})
        return sorted(roles_by_collection.get(collection.id, frozenset()))


class CollectionCreateSerializer(StrictInputMixin, serializers.Serializer):
    slug = serializers.SlugField(max_length=100)
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", trim_whitespace=False
    )
    description = serializers.CharField(required=False, allow_blank=True, default="")
    gain = serializers.ChoiceField(choices=GAIN_CHOICES, default="linear")
    cutoffs = CutoffsField(required=False, default=[5, 10, 20])
    measures = MeasuresField(required=False, default=list)
    missing_queries = serializers.ChoiceField(choices=MISSING_CHOICES, default="zero")
    aggregation = serializers.ChoiceField(choices=AGGREGATION_CHOICES, default="median")
    stale_judgements = serializers.ChoiceField(
        choices=STALE_CHOICES,
        default="count",
        help_text="Whether judgements given before their document's text changed count.",
    )
    machine_grades = serializers.ChoiceField(
        choices=MACHINE_GRADE_CHOICES,
        default=DEFAULT_RULE,
        help_text="How machine judges' grades count for scoring: "
        + " ".join(f"`{rule}`: {effect}" for rule, effect in RULE_EFFECTS.items())
        + f" Default `{DEFAULT_RULE}`.",
    )
    public_leaderboard = serializers.BooleanField(default=False)
    assessors_see_leaderboard = serializers.BooleanField(
        default=False, help_text="Assessors may read the leaderboard (blinded otherwise)."
    )
    grades = GradeLevelSerializer(
        many=True,
        required=False,
        allow_empty=False,
        help_text="The grade scale; 0-3 with labels when absent.",
    )


class CollectionUpdateSerializer(StrictInputMixin, serializers.Serializer):
    """The settings a PATCH changes; naming a field the collection only reports (its slug,
    grade scale, the caller's roles, times) is a 400."""

    slug = serializers.SlugField(read_only=True, help_text="Read-only: the URL's slug.")
    name = serializers.CharField(max_length=200, required=False, trim_whitespace=False)
    description = serializers.CharField(required=False, allow_blank=True)
    gain = serializers.ChoiceField(choices=GAIN_CHOICES, required=False)
    cutoffs = CutoffsField(required=False)
    measures = MeasuresField(required=False)
    missing_queries = serializers.ChoiceField(choices=MISSING_CHOICES, required=False)
    aggregation = serializers.ChoiceField(choices=AGGREGATION_CHOICES, required=False)
    stale_judgements = serializers.ChoiceField(choices=STALE_CHOICES, required=False)
    machine_grades = serializers.ChoiceField(choices=MACHINE_GRADE_CHOICES, required=False)
    public_leaderboard = serializers.BooleanField(required=False)
    assessors_see_leaderboard = serializers.BooleanField(required=False)
    grades = GradeLevelSerializer(
        many=True,
        read_only=True,
        help_text="Read-only here: the grade scale is changed on the collection's settings page.",
    )
    roles = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Read-only: the caller's roles."
    )
    created = serializers.DateTimeField(read_only=True)
    updated = serializers.DateTimeField(read_only=True)
