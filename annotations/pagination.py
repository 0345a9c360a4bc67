"""Pagination of API lists: limit and offset bounded so that a database can hold them."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

# PostgreSQL's LIMIT and OFFSET are 64-bit; anything larger is no page anyone can want.
MAX_OFFSET = 2**62


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """``?limit=&offset=`` with the limit capped at 10,000 and offsets beyond 2^62 read as
    2^62 (an empty page) instead of a database error."""

    max_limit = 10_000

    def get_offset(self, request):  # type: ignore[no-untyped-def]
        return min(super().get_offset(request), MAX_OFFSET)
