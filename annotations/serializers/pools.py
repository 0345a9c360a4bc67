"""Pools and assignments: the bodies that build, extend, assign and release, and their status."""

from __future__ import annotations

from rest_framework import serializers

from annotations.serializers.fields import IdField, QidField
from annotations.serializers.inputs import StrictInputMixin

USERNAME_HELP = "An account's username."


class ProgressSerializer(serializers.Serializer):
    judged = serializers.IntegerField(help_text="Pairs the assessor graded.")
    skipped = serializers.IntegerField(help_text="Pairs marked unsure (not graded).")
    left = serializers.IntegerField(help_text="Neither graded nor skipped.")
    total = serializers.IntegerField()
    percent = serializers.IntegerField(help_text="Graded, in percent of the total.")


class AssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    pool = serializers.IntegerField(help_text="The pool's id.")
    pool_name = serializers.CharField()
    assessor = serializers.CharField(help_text=USERNAME_HELP)
    created = serializers.DateTimeField()
    progress = ProgressSerializer()


class AssignmentItemSerializer(serializers.Serializer):
    position = serializers.IntegerField(help_text="1-based, the order to judge in.")
    qid = serializers.CharField()
    docno = serializers.CharField()
    judged = serializers.BooleanField(help_text="The assessor graded the pair.")
    grade = serializers.IntegerField(allow_null=True, help_text="The assessor's grade, if any.")
    skipped = serializers.BooleanField()
    note = serializers.CharField()


class PoolSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    depth = serializers.IntegerField(help_text="k per run (the cutoff, for pools by impact).")
    order = serializers.ChoiceField(choices=["depth", "impact"])
    budget = serializers.IntegerField(allow_null=True, help_text="Pairs, for pools by impact.")
    per_query = serializers.IntegerField(
        allow_null=True, help_text="For pools by impact: the most pairs of one query it took."
    )
    overlap = serializers.IntegerField(help_text="Assessors per pair.")
    runs = serializers.ListField(child=serializers.CharField(), help_text="Run names.")
    queries = serializers.ListField(
        child=serializers.CharField(), help_text="The qids it is limited to (empty: every query)."
    )
    entries = serializers.IntegerField(help_text="Pairs in the pool.")
    unassigned = serializers.IntegerField(help_text="Pairs still short of the overlap.")
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()


class PoolStatusSerializer(PoolSerializer):
    assignments = AssignmentSerializer(many=True)


class PoolCreateSerializer(StrictInputMixin, serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    depth = serializers.IntegerField(
        min_value=1, max_value=1000, help_text="k per run; for `order=impact` the cutoff."
    )
    runs = serializers.ListField(
        child=IdField(), required=False, default=list, help_text="Run names; empty: every run."
    )
    queries = serializers.ListField(
        child=QidField(), required=False, default=list, help_text="qids; empty: every query."
    )
    include_judged = serializers.BooleanField(
        required=False, default=False, help_text="Queue pairs somebody already judged too."
    )
    order = serializers.ChoiceField(
        choices=["depth", "impact"],
        required=False,
        default="depth",
        help_text="depth: every run's top `depth`; impact: the `budget` pairs that can change "
        "the leaderboard most at cutoff `depth`, handed out highest impact first.",
    )
    budget = serializers.IntegerField(
        min_value=1, required=False, allow_null=True, default=None, help_text="For order=impact."
    )
    per_query = serializers.IntegerField(
        min_value=1, required=False, allow_null=True, default=None,
        help_text="For order=impact: the most pairs of one query; empty: twice the budget's "
        "even share over the queries with candidates.",
    )  # fmt: skip


class PoolExtendSerializer(StrictInputMixin, serializers.Serializer):
    depth = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, allow_null=True, default=None,
        help_text="A deeper cut; empty: the pool's.",
    )  # fmt: skip
    runs = serializers.ListField(
        child=IdField(), required=False, default=list,
        help_text="Run names; empty: every run (new runs join).",
    )  # fmt: skip
    queries = serializers.ListField(
        child=QidField(), required=False, default=list, help_text="More qids; empty: the pool's."
    )
    include_judged = serializers.BooleanField(required=False, default=False)


class PoolExtendedSerializer(serializers.Serializer):
    added = serializers.IntegerField(help_text="New pairs (assign them next).")
    pool = PoolSerializer()


class AssignInputSerializer(StrictInputMixin, serializers.Serializer):
    assessors = serializers.ListField(
        child=serializers.CharField(max_length=150),
        min_length=1,
        help_text="Usernames of the collection's organisers and assessors.",
    )
    overlap = serializers.IntegerField(
        min_value=1, max_value=20, required=False, allow_null=True, default=None,
        help_text="Assessors per pair; empty: the pool's.",
    )  # fmt: skip
    queries = serializers.ListField(
        child=QidField(), required=False, default=list, help_text="qids; empty: every query."
    )
    pairs = serializers.IntegerField(
        min_value=1, required=False, allow_null=True, default=None,
        help_text="At most this many new pairs per assessor.",
    )  # fmt: skip


class AssignedSerializer(serializers.Serializer):
    added = serializers.IntegerField(help_text="Pairs this call gave the assessor.")
    assignment = AssignmentSerializer()


class ReleaseInputSerializer(StrictInputMixin, serializers.Serializer):
    to = serializers.CharField(
        max_length=150, required=False, allow_null=True, default=None,
        help_text="Hand the pairs to this organiser or assessor of the collection (username); "
        "empty: back to the pool.",
    )  # fmt: skip


class ReleasedSerializer(serializers.Serializer):
    released = serializers.IntegerField(help_text="Ungraded pairs taken from the assessor.")
    handed_over = serializers.IntegerField(help_text="Of them, pairs given to `to`.")
    assignment = AssignmentSerializer()
    to = AssignmentSerializer(allow_null=True)
