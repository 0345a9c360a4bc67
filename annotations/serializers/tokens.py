"""API tokens: the credentials asked for and the token given."""

from __future__ import annotations

from rest_framework import serializers

from annotations.serializers.inputs import StrictInputMixin


class TokenRequestSerializer(StrictInputMixin, serializers.Serializer):
    username = serializers.CharField(max_length=150, trim_whitespace=False)
    password = serializers.CharField(
        max_length=4096, trim_whitespace=False, style={"input_type": "password"}
    )


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Send as `Authorization: Token <token>`.")
    username = serializers.CharField()
