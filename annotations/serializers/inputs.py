"""Request bodies as strict as their schema: a value is taken only in the JSON type the schema
documents (0 is no name, "true" no boolean, false no score), and a field the resource only
reports is refused when a request writes it, instead of being silently ignored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.validators import URLValidator
from rest_framework import serializers
from rest_framework.settings import api_settings
from rest_framework.utils import html

READ_ONLY = "This field is read-only: it cannot be written here."


def json_type_problem(field: serializers.Field[Any, Any, Any, Any], value: object) -> str | None:
    """Why `value`, read from a JSON body, is not of the JSON type `field` documents, or None.
    null is left to the field (`allow_null`); fields of other kinds check their own types."""
    if value is None:
        return None
    if isinstance(field, serializers.BooleanField):
        fits = isinstance(value, bool)
    elif isinstance(field, serializers.IntegerField):
        # JSON Schema's integer is any number without a fraction, 3.0 included.
        fits = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    elif isinstance(field, serializers.FloatField):
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    elif isinstance(field, serializers.CharField):
        fits = isinstance(value, str)
    elif isinstance(field, serializers.ListField) and isinstance(value, list):
        problems = (json_type_problem(field.child, item) for item in value)
        return next((problem for problem in problems if problem is not None), None)
    else:
        return None
    return None if fits else str(field.error_messages["invalid"])


# Every request body's serializer takes this mixin (its words are in comments, not a
# docstring: the schema would give them as the description of each body that has none).
# - A field declared `read_only` (what the resource reports but no request sets) that the
#   body names is a 400 naming it, whatever its value.
# - In a JSON body, a value of another JSON type than the field's is a 400: DRF would coerce
#   it (0 to "0", "true" and 1 to True, "5" to 5, false to 0.0). Form bodies (multipart)
#   carry only strings and are read as DRF reads them.
class StrictInputMixin(serializers.Serializer):  # type: ignore[type-arg]
    def to_internal_value(self, data: Any) -> Any:
        problems: dict[str, list[str]] = {}
        if isinstance(data, Mapping):
            typed = not html.is_html_input(data)
            for name, field in self.fields.items():
                if name not in data:
                    continue
                if field.read_only:
                    problems[name] = [READ_ONLY]
                elif typed:
                    problem = json_type_problem(field, data[name])
                    if problem is not None:
                        problems[name] = [problem]
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as error:
            if not problems:
                raise
            detail = error.detail
            if not isinstance(detail, dict):
                detail = {api_settings.NON_FIELD_ERRORS_KEY: detail}
            raise serializers.ValidationError({**detail, **problems}) from None
        if problems:
            raise serializers.ValidationError(problems)
        return value


def http_url(value: str) -> str:
    """An http(s) URL, checked as a URLField checks it (the schema says a plain string:
    its `uri` format would admit schemes the platform refuses)."""
    URLValidator(schemes=["http", "https"])(value)
    return value
