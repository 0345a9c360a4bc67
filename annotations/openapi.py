"""The served OpenAPI schema's last pass: the error answers every API operation can give."""

from __future__ import annotations

import inspect
from typing import Any

from drf_spectacular.openapi import AutoSchema

_ERROR = {"$ref": "#/components/schemas/Error"}

# Answers any operation can give, whatever its own errors: a path or query string refused
# at the door, an Accept header it cannot satisfy, throttling (every API view is throttled),
# and a server failure, which still answers in the one error shape.
_ALWAYS = {
    400: "The request is invalid: a NUL character in its path or query string, or a "
    "parameter out of range; `fields` names each parameter at fault.",
    406: "The Accept header admits no JSON.",
    429: "Too many requests: throttled, retry after the `Retry-After` header's seconds.",
    500: "The server failed; the error is logged (the body keeps the one error shape).",
}
# Answers any operation with a request body can give: a body that is not the documented
# content type, one that cannot be parsed, one larger than the server accepts.
_WITH_BODY = {
    400: "The body is invalid: `fields` names each field at fault.",
    413: "The body is larger than this server accepts (NDCG_MAX_UPLOAD_MB for files).",
    415: "The body is not of the documented content type.",
}
_METHODS = {"get", "put", "post", "patch", "delete"}
_WRITES = {"put", "post", "patch", "delete"}
# Every write takes an Idempotency-Key (annotations/idempotency.py).
_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Makes the write safe to retry: a retry with the same key and the same "
    "request answers the first successful answer again (with `Idempotent-Replayed: true`) "
    "and writes nothing; the key with a different request is a 422. Per caller, kept for "
    "NDCG_IDEMPOTENCY_HOURS (24 by default). 1 to 255 visible ASCII characters.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
}
_KEY_REUSED = "The Idempotency-Key was already used by the caller for a different request."


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR}}}


def error_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add the errors above to every operation under
    /api/, keeping an operation's own description of a status where it has one."""
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            extra = dict(_ALWAYS)
            if "requestBody" in operation:
                extra.update(_WITH_BODY)
            if method in _WRITES:
                parameters = operation.setdefault("parameters", [])
                if not any(p.get("name") == "Idempotency-Key" for p in parameters):
                    parameters.append(dict(_IDEMPOTENCY_KEY))
                extra[422] = _KEY_REUSED
            for status, description in extra.items():
                responses.setdefault(str(status), _error(description))
            operation["responses"] = dict(sorted(responses.items()))
    return result


class ApiSchema(AutoSchema):
    """drf-spectacular's schema, describing an operation by its own words only: a base
    class's docstring (how the view is built) is no description of what it does."""

    def get_description(self) -> str:  # type: ignore[override]  # drf-spectacular's signature
        method = getattr(self.view, self.method.lower(), None)
        own = method.__doc__ if method is not None else None
        return inspect.cleandoc(own or type(self.view).__dict__.get("__doc__") or "")
