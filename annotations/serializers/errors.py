"""The one error body every API failure answers with, and import summaries."""

from __future__ import annotations

from rest_framework import serializers


class ErrorLocationSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)


class ErrorDetailSerializer(serializers.Serializer):
    status = serializers.IntegerField()
    code = serializers.CharField()
    detail = serializers.CharField()
    fields = serializers.DictField(  # type: ignore[assignment]  # the body's key, not Serializer.fields
        child=serializers.ListField(child=serializers.CharField())
    )
    location = ErrorLocationSerializer(required=False, help_text="Where a TREC file is wrong.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


class ImportSummarySerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
