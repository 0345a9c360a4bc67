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


# What servers put the request target in, as the client sent it: gunicorn sets RAW_URI,
# several others (and the development server here, annotations/devserver.py) REQUEST_URI.
_RAW_TARGET = ("RAW_URI", "REQUEST_URI")


def raw_path_info(meta: dict[str, object]) -> str | None:
    """The path as routing should read it when the raw request target holds `%2F`: each
    segment decoded on its own, a `/` inside one written `~2F` (the id rule of
    annotations/converters.py), so a generated client's "manual/v1" stays one segment.
    None when the server gives no raw target, or it holds no encoded slash."""
    raw = next((meta[key] for key in _RAW_TARGET if isinstance(meta.get(key), str)), None)
    if not isinstance(raw, str):
        return None
    path = raw.split("?", 1)[0].split("#", 1)[0]
    if "%2f" not in path.lower() or not path.startswith("/"):
        return None
    try:
        segments = [
            unquote_to_bytes(segment).replace(b"/", b"~2F").decode("utf-8")
            for segment in path.split("/")
        ]
    except UnicodeDecodeError:  # not UTF-8: left to the server's own decoding
        return None
    decoded = "/".join(segments)
    script = str(meta.get("SCRIPT_NAME") or "").rstrip("/")
    if script:
        if not decoded.startswith(script + "/"):
            return None
        decoded = decoded[len(script) :]
    return decoded


class RawPathMiddleware:
    """A percent-encoded `/` (`%2F`) in a path segment reaches the same object as `~2F`.

    Servers decode `%2F` into a separator before Django sees the path (PEP 3333 gives only
    the decoded PATH_INFO), so `runs/manual%2Fv1/` would route as two segments and 404.
    Where the server passes the raw request target (gunicorn's RAW_URI; REQUEST_URI) the
    path is re-read from it, segment by segment. First in MIDDLEWARE: before any routing.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path_info = raw_path_info(request.META)
        if path_info is not None:
            request.path_info = path_info
            request.path = str(request.META.get("SCRIPT_NAME") or "").rstrip("/") + path_info
        return self.get_response(request)
