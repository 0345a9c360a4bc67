"""Judgements: as read, and the body that records one."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import Judgement
from annotations.serializers.collections import GRADE_RANGE
from annotations.serializers.fields import IdField, QidField
from annotations.serializers.inputs import StrictInputMixin


class JudgementSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="query.qid")
    docno = serializers.CharField(source="document.docno")
    assessor = serializers.CharField(source="assessor.username")
    pending = serializers.BooleanField(
        source="query.scores_pending",
        read_only=True,
        help_text="True while the query's scores await recomputation (with a worker, or a "
        "broker that could not be reached: the sweep recomputes them).",
    )

    stale = serializers.BooleanField(
        read_only=True,
        help_text="Given before the document's text last changed (see the collection's "
        "`stale_judgements` for whether it counts); a new grade clears it.",
    )

    class Meta:
        model = Judgement
        fields = [
            "qid",
            "docno",
            "assessor",
            "grade",
            "note",
            "stale",
            "created",
            "updated",
            "pending",
        ]


class JudgementInputSerializer(StrictInputMixin, serializers.Serializer):
    qid = QidField()
    docno = IdField()
    grade = serializers.IntegerField(
        min_value=GRADE_RANGE[0],
        max_value=GRADE_RANGE[1],
        help_text="A value on the collection's grade scale (see its `grades`); others are a 400.",
    )
    note = serializers.CharField(required=False, allow_blank=True, default="")
