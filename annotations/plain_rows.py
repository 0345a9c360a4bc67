"""Model instances read by one plain statement, for the reads every API request makes.

The ORM builds a statement's text anew for each request, which costs more CPU than
PostgreSQL spends running it; a fixed text on `bulk.cursor` is prepared once per
connection. The instances are those the ORM would give: every concrete field, converted
from the database value as the ORM converts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, Model

M = TypeVar("M", bound=Model)


@cache
def _fields(model: type[Model]) -> tuple[Field[Any, Any], ...]:
    return tuple(model._meta.concrete_fields)


def columns(model: type[Model], alias: str) -> str:
    """The model's columns, qualified by `alias`, in `instance`'s order."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(field.column)}" for field in _fields(model))


def width(model: type[Model]) -> int:
    """How many values of a row `columns` names."""
    return len(_fields(model))


def instance(model: type[M], values: Sequence[Any]) -> M:
    """The instance of a row of `columns(model, ...)`, as the ORM would load it."""
    fields = _fields(model)
    converted = [
        field.from_db_value(value, None, connection)  # type: ignore[attr-defined]
        if hasattr(field, "from_db_value") and value is not None
        else value
        for field, value in zip(fields, values, strict=True)
    ]
    return model.from_db(connection.alias, [field.attname for field in fields], converted)
