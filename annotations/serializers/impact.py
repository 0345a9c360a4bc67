"""The leaderboard body with its flip marks: adjacent pairs and whether the ranking is decided."""

from __future__ import annotations

from rest_framework import serializers

from annotations.serializers import LeaderboardSerializer


class AdjacentPairSerializer(serializers.Serializer):
    upper = serializers.CharField(help_text="The run ranked above.")
    lower = serializers.CharField(help_text="The run right below it.")
    can_flip = serializers.BooleanField(
        help_text="True while the lower run's bounds reach the upper run's: more judging "
        "can still reverse the pair."
    )
    queued = serializers.IntegerField(
        help_text="Unjudged pairs of impact-ordered pools whose judging moves this pair."
    )


class LeaderboardFlipsSerializer(LeaderboardSerializer):
    adjacent = AdjacentPairSerializer(
        many=True, help_text="Every adjacent pair of runs, best first (stored, not per request)."
    )
    ranking_decided = serializers.BooleanField(
        help_text="True when no adjacent pair can flip any more."
    )
    flips_stamp = serializers.CharField(
        allow_null=True,
        help_text="The statistics stamp the flip marks were computed at (null: not yet).",
    )
