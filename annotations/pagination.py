"""Pagination of API lists: limit and offset bounded so that a database can hold them."""

from __future__ import annotations

import re
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

# PostgreSQL's LIMIT and OFFSET are 64-bit; anything larger is no page anyone can want.
MAX_OFFSET = 2**62
_DIGITS = re.compile(r"[0-9]+")
# More digits than any bound here has: read as "beyond every bound" without converting
# (Python refuses to convert strings of more than 4,300 digits).
_LONGEST = 30


def _whole_number(
    request: Request, name: str, minimum: int, maximum: int | None = None
) -> int | None:
    """The parameter as a whole number from `minimum` (to `maximum`), None when absent, else
    a 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    value = int(raw) if _DIGITS.fullmatch(raw) and len(raw) <= _LONGEST else None
    too_large = maximum is not None and (value is None or value > maximum)
    if _DIGITS.fullmatch(raw) is None or (value is not None and value < minimum) or too_large:
        bound = f"from {minimum} up" if maximum is None else f"from {minimum} to {maximum:,}"
        raise ValidationError({name: [f"Give a whole number {bound}."]})
    return value if value is not None else 10**_LONGEST


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """``?limit=&offset=`` with the limit at most 10,000 (as the schema says; a larger one
    is a 400) and offsets beyond 2^62 read as 2^62 (an empty page) instead of a database
    error. Anything but a whole number (a limit of 0 included) is a 400 naming the
    parameter, not the default page."""

    max_limit = 10_000

    def get_limit(self, request: Request) -> int | None:
        limit = _whole_number(request, self.limit_query_param, 1, self.max_limit)
        return self.default_limit if limit is None else limit

    def get_offset(self, request: Request) -> int:
        offset = _whole_number(request, self.offset_query_param, 0)
        return 0 if offset is None else min(offset, MAX_OFFSET)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["schema"]["maximum"] = self.max_limit
                parameter["description"] = (
                    f"Number of results to return per page, at most {self.max_limit:,}."
                )
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"]["minimum"] = 0
        return parameters
