"""Queries and documents: as listed, as created by JSON."""

from __future__ import annotations

from rest_framework import serializers

from annotations.models import Document, Query
from annotations.serializers.fields import IdField, QidField, TextField
from annotations.serializers.inputs import StrictInputMixin


class QuerySerializer(serializers.ModelSerializer):
    scores_pending = serializers.BooleanField(read_only=True)

    class Meta:
        model = Query
        fields = ["qid", "title", "description", "narrative", "scores_pending"]


class QueryInputSerializer(StrictInputMixin, serializers.Serializer):
    qid = QidField()
    title = TextField(required=False, allow_blank=True, default="")
    description = TextField(required=False, allow_blank=True, default="")
    narrative = TextField(required=False, allow_blank=True, default="")


class DocumentSerializer(serializers.ModelSerializer):
    url = serializers.CharField(read_only=True, help_text="The document's URL, or empty.")

    class Meta:
        model = Document
        fields = ["docno", "title", "text", "url"]


class DocumentInputSerializer(StrictInputMixin, serializers.Serializer):
    docno = IdField()
    title = TextField(required=False, allow_blank=True, default="")
    text = TextField(required=False, allow_blank=True, default="")
    url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")
