"""Request checks made before any view: inputs no field may hold are refused at the door."""

from __future__ import annotations

from collections.abc import Callable

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
