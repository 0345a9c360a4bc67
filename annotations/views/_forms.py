"""A service's refusal shown on the form that asked for it."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.forms import BaseForm


def refusal_to_form(form: BaseForm, error: ValidationError) -> None:
    """Put each of a service's messages next to the field it names (a field the form does
    not have, or none: at the top of the form)."""
    for field, problems in error.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)
