"""Fields shared by the API's bodies: ids (qid, docno, run name), free text, and their schema."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotations.formats import trec
from annotations.models import ID_MAX_LENGTH
from annotations.models.collections import measures_checked

# What `trec.id_problem` accepts, as a regular expression both JSON Schema (ECMA 262) and
# Python read alike: no control character (C0, DEL, C1) and none of the characters
# `str.split()` splits on. A test checks the two agree on every character.
_NOT_IN_IDS = (
    "\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
)
ID_PATTERN = f"^[^{_NOT_IN_IDS}]+$"
# A qid: an id whose first character is not '#' (a TREC line starting with it is a comment).
QID_PATTERN = f"^[^#{_NOT_IN_IDS}][^{_NOT_IN_IDS}]*$"
ID_DESCRIPTION = (
    f"An id as TREC files hold it: 1 to {ID_MAX_LENGTH} characters, no whitespace, no control "
    "character."
)
# What `trec.text_problem` refuses in a text field (a title, a document's text): the control
# characters but tab, LF and CR. Any other string field refuses NUL only (DRF's CharField).
TEXT_FORBIDDEN = "\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f"
NUL = "\\u0000"
# What `str.strip()` removes: a field that trims its value and may not be blank needs one
# character that is none of these.
WHITESPACE = (
    "\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f"
    "\\u205f\\u3000"
)
ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": ID_MAX_LENGTH,
    "pattern": ID_PATTERN,
}


def _check_id(value: str) -> None:
    problem = trec.id_problem(value)
    if problem is not None:
        raise serializers.ValidationError(f"Not a valid id: {problem}.")


def _check_text(value: str) -> None:
    problem = trec.text_problem(value)
    if problem is not None:
        raise serializers.ValidationError(problem[0].upper() + problem[1:] + ".")


def string_pattern(field: serializers.CharField) -> str:
    """The pattern of what a string field takes: none of its forbidden characters, and, for a
    field that trims its value and may not be blank, one that is not whitespace."""
    forbidden = getattr(field, "forbidden_characters", NUL)
    if field.allow_blank or not field.trim_whitespace:
        return f"^[^{forbidden}]*$"
    return f"^[^{forbidden}]*[^{forbidden}{WHITESPACE}][^{forbidden}]*$"


def _check_qid(value: str) -> None:
    problem = trec.qid_problem(value)
    if problem is not None:
        raise serializers.ValidationError(f"Not a valid qid: {problem}.")


@extend_schema_field(ID_SCHEMA)
class IdField(serializers.CharField):
    """A qid, docno or run name: refused at the door unless `trec.id_problem` accepts it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", ID_DESCRIPTION)
        # Not trimmed: " q1" is no id (an id holds no whitespace), not "q1".
        super().__init__(
            max_length=ID_MAX_LENGTH, trim_whitespace=False, validators=[_check_id], **kwargs
        )


@extend_schema_field({**ID_SCHEMA, "pattern": QID_PATTERN})
class QidField(serializers.CharField):
    """A qid: an id (`IdField`) that does not start with '#'."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", ID_DESCRIPTION + " A qid does not start with '#'.")
        super().__init__(
            max_length=ID_MAX_LENGTH, trim_whitespace=False, validators=[_check_qid], **kwargs
        )


class TextField(serializers.CharField):
    """Free text (a query's title, a document's text): any character but the control
    characters other than tab, LF and CR, as the import files take it (`trec.text_problem`)."""

    forbidden_characters = TEXT_FORBIDDEN

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(validators=[_check_text], **kwargs)


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "integer", "minimum": 1, "maximum": 1000},
        "minItems": 1,
        "uniqueItems": True,
    }
)
class CutoffsField(serializers.ListField):
    """Cutoffs k: distinct integers from 1 to 1000 (the service refuses a repeat)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            child=serializers.IntegerField(min_value=1, max_value=1000), min_length=1, **kwargs
        )


class MeasuresField(serializers.ListField):
    """The measures a collection keeps beside nDCG@k: names in ir_measures' syntax (or
    trec_eval's), stored in ir_measures' syntax; a name that cannot be read is a 400 naming it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "help_text",
            "Measures kept beside nDCG@k, stored per query and live: ir_measures names "
            "(`AP`, `P@10`, `AP(rel=2)@100`, `R@1000`, `RR`, `Rprec`, `Bpref`, `infAP`, "
            "`nDCG`, `ERR@20`, `RBP(p=0.8)`, `Judged@10`...) or trec_eval's (`map`, "
            "`P_10`); empty: nDCG@k only. Changing them rescores the collection.",
        )
        super().__init__(child=serializers.CharField(), **kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        entries = super().to_internal_value(data)
        try:
            return measures_checked(entries)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.message_dict["measures"]) from None


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file part of a multipart/form-data body (its bytes, not a URL). An empty file is the
    reader's to refuse, with the words the import commands use."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_empty_file=True, **kwargs)
