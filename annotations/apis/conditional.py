"""Conditional GET for reads that only change with the scores stamp: a strong `ETag` (a hash
of everything the body depends on), `Last-Modified` where a stored time vouches for it, and
304 Not Modified for a client that already holds the representation."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, TypeVar, cast

from django.db.models import Max
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.request import Request

from annotations.models import Collection, JudgementHistory

Answer = TypeVar("Answer", bound=HttpResponseBase)

IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    str,
    location=OpenApiParameter.HEADER,
    description="An `ETag` this endpoint gave: 304 with no body while it still holds.",
)
IF_MODIFIED_SINCE = OpenApiParameter(
    "If-Modified-Since",
    str,
    location=OpenApiParameter.HEADER,
    description="A `Last-Modified` this endpoint gave (HTTP date, one-second resolution: "
    "prefer If-None-Match): 304 while nothing changed since. Ignored with If-None-Match.",
)
CONDITIONAL_PARAMETERS = [IF_NONE_MATCH, IF_MODIFIED_SINCE]
NOT_MODIFIED = {304: OpenApiResponse(description="Not Modified: the validator still holds.")}


def etag_of(*parts: Any) -> str:
    return '"' + hashlib.sha256(repr(parts).encode()).hexdigest()[:32] + '"'


def qrels_changed_at(collection: Collection) -> datetime | None:
    """The latest change of any judgement or adjudication of the collection (its history)."""
    latest = JudgementHistory.objects.filter(query__collection=collection).aggregate(
        latest=Max("changed_at")
    )["latest"]
    candidates = [t for t in (latest, collection.updated) if t is not None]
    return max(candidates) if candidates else None


class Validators:
    """The validators of one representation, checked before its body is built."""

    def __init__(self, etag: str, last_modified: datetime | None) -> None:
        self.etag = etag
        self.last_modified = last_modified

    def not_modified(self, request: Request) -> HttpResponse | None:
        """A 304 (or 412) when the request's conditions say the client's copy holds."""
        stamp = int(self.last_modified.timestamp()) if self.last_modified else None
        # DRF's Request reads as Django's (META, method) for what the check needs.
        answer = get_conditional_response(
            cast(HttpRequest, request), etag=self.etag, last_modified=stamp
        )
        if answer is None:
            return None
        return self.stamped(answer)

    def stamped(self, response: Answer) -> Answer:
        response["ETag"] = self.etag
        if self.last_modified is not None:
            response["Last-Modified"] = http_date(self.last_modified.timestamp())
        return response
