"""Request checks made before any view: inputs no field may hold are refused at the door."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from annotations.api_errors import error_response


class RefuseNulMiddleware:
    """A NUL in the path or in a query parameter is a 400, never a database error.

    PostgreSQL text cannot hold NUL, so such a value would fail in the first query that used
    it; no stored id or field holds one (they are refused on the way in), so nothing can be
    found by it either. Under /api/ the answer is the API's error shape.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or any(
            "\x00" in key or any("\x00" in value for value in values)
            for key, values in request.GET.lists()
        ):
            detail = "The request's path or query string holds a NUL character."
            if request.path_info.startswith("/api/"):
                return error_response(400, "invalid", detail)
            return HttpResponseBadRequest(detail)
        return self.get_response(request)


def _undecodable(encoded: str | bytes) -> bool:
    """Whether a percent-encoded query or form body holds bytes that are not UTF-8."""
    raw = encoded.encode("latin-1") if isinstance(encoded, str) else encoded
    for part in raw.replace(b"+", b" ").split(b"&"):
        for piece in part.split(b"=", 1):
            try:
                unquote_to_bytes(piece).decode("utf-8")
            except UnicodeDecodeError:
                return True
    return False


class RefuseInvalidUtf8Middleware:
    """A query string or form field that is not UTF-8 is a 400, never stored.

    Django decodes such bytes with replacement characters, so a note sent as Latin-1 would be
    saved as "\ufffd" marks; refusing it says what went wrong instead. (Multipart fields
    are checked by their form or serializer.)
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = None
        if _undecodable(request.META.get("QUERY_STRING", "")):
            where = "query string"
        elif (
            request.method == "POST"
            and request.content_type == "application/x-www-form-urlencoded"
            and _undecodable(request.body)
        ):
            where = "form"
        if where is not None:
            detail = f"The request's {where} is not valid UTF-8."
            if request.path_info.startswith("/api/"):
                return error_response(400, "invalid", detail)
            return HttpResponseBadRequest(detail)
        return self.get_response(request)
