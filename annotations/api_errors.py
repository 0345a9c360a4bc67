"""One error body for every REST API failure: {"error": {"status", "code", "detail", "fields"}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler

from annotations.formats.trec import TrecFormatError


class UploadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The upload is larger than this server accepts."
    default_code = "upload_too_large"


class NotInstalled(APIException):
    """An optional part of the platform this server was installed without.

    Refused at the door like any other request the server cannot take (400), never a 5xx:
    the request is well formed, and the answer says how to install what it needs.
    """

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "This server was installed without what the request needs."
    default_code = "not_installed"


class RequestTargetTooLong(APIException):
    status_code = status.HTTP_414_REQUEST_URI_TOO_LONG
    default_detail = "The request's path and query string are longer than this server accepts."
    default_code = "request_target_too_long"


def _flatten(data: Any, prefix: str = "") -> dict[str, list[str]]:
    """Nested serializer errors as {"results[2].score": ["..."]}."""
    if isinstance(data, dict):
        flat: dict[str, list[str]] = {}
        for key, value in data.items():
            if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
                name = f"{prefix}[{key}]"  # an item of a list
            elif key == "non_field_errors" and prefix:
                name = prefix  # the error is about the whole nested value
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            flat.update(_flatten(value, name))
        return flat
    if isinstance(data, list) and data and all(isinstance(item, dict | list) for item in data):
        flat = {}
        for index, item in enumerate(data):
            flat.update(_flatten(item, f"{prefix}[{index}]"))
        return flat
    messages = data if isinstance(data, list) else [data]
    return (
        {prefix or "non_field_errors": [str(message) for message in messages]} if messages else {}
    )


def _translate(exc: Exception) -> tuple[Exception, dict[str, Any] | None]:
    if isinstance(exc, TrecFormatError):
        location = {"file": exc.path, "line": exc.line, "field": exc.field}
        # The command's words: `file:line: field: problem (nothing was imported)`.
        return ValidationError({"file": [f"{exc} (nothing was imported)"]}), location
    if isinstance(exc, DjangoValidationError):
        detail = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        detail = {
            ("non_field_errors" if key == "__all__" else key): value
            for key, value in detail.items()
        }
        return ValidationError(detail), None
    if isinstance(exc, Http404):
        return NotFound(str(exc) or None), None
    if isinstance(exc, DjangoPermissionDenied):
        return PermissionDenied(str(exc) or None), None
    if isinstance(exc, RequestDataTooBig):
        return UploadTooLarge("The request body is too large; upload a run as a file."), None
    return exc, None


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler plus service and file errors, wrapped in the one error body."""
    exc, location = _translate(exc)
    response = exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: a 500, logged by Django as usual
    data = response.data
    fields: dict[str, list[str]] = {}
    if isinstance(exc, ValidationError):
        fields = _flatten(data)
        detail = "; ".join(
            f"{name}: {message}" if name != "non_field_errors" else message
            for name, messages in fields.items()
            for message in messages
        )
    elif isinstance(data, dict) and "detail" in data:
        detail = str(data["detail"])
    else:
        detail = str(data)
    code = getattr(exc, "default_code", "error")
    if isinstance(exc, APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else code
    body: dict[str, Any] = {
        "status": response.status_code,
        "code": code,
        "detail": detail,
        "fields": fields,
    }
    if location is not None:
        body["location"] = location
    response.data = {"error": body}
    return response


# --- outside DRF: unknown paths, server errors, inputs refused at the door -----------------


def error_response(status_code: int, code: str, detail: str) -> JsonResponse:
    """The one error body, for answers given outside DRF's views."""
    body = {"status": status_code, "code": code, "detail": detail, "fields": {}}
    return JsonResponse({"error": body}, status=status_code)


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


@csrf_exempt  # any method gets the JSON 404, never the CSRF failure page
def api_path_not_found(request: HttpRequest) -> HttpResponse:
    """Every path under /api/ that no route takes (any method)."""
    return error_response(404, "not_found", "No such API path.")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: JSON under /api/ (an unknown path there is an API error too)."""
    if _is_api(request):
        return error_response(404, "not_found", "No such API path.")
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: JSON under /api/, in the one error shape; the site's page elsewhere."""
    if _is_api(request):
        return error_response(500, "server_error", "The server failed; the error is logged.")
    return defaults.server_error(request)


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any]
) -> HttpResponse:
    """django-axes' answer to a locked-out login: the error shape under /api/, else the page."""
    from axes.helpers import get_cool_off, get_failure_limit

    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    wait = f"{minutes} minute{'s' if minutes != 1 else ''}" if minutes else "a while"
    if _is_api(request):
        response: HttpResponse = error_response(
            429,
            "locked_out",
            f"Too many failed logins for this account or address; try again in {wait}.",
        )
    else:
        context = {"failure_limit": get_failure_limit(request, credentials), "cooloff_time": wait}
        response = render(request, "registration/locked_out.html", context, status=429)
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
