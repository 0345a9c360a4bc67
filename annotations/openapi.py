"""The served OpenAPI schema's last pass: the error answers every API operation can give."""

from __future__ import annotations

import inspect
from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

from annotations.idempotency import KEEP_HOURS
from annotations.serializers.fields import NUL, string_pattern
from annotations.serializers.inputs import StrictInputMixin

_ERROR = {"$ref": "#/components/schemas/Error"}

# Answers any operation can give, whatever its own errors: a path or query string refused
# at the door, an Accept header it cannot satisfy, throttling (every API view is throttled),
# and a server failure, which still answers in the one error shape.
_ALWAYS = {
    400: "The request is invalid: a NUL character in its path or query string, or a "
    "parameter out of range; `fields` names each parameter at fault.",
    406: "The Accept header admits no JSON.",
    414: "The request target (path and query string) is longer than the server accepts: "
    "over 4,000 bytes. A request line over gunicorn's `limit_request_line` (4,094 bytes by "
    "default) is refused by the server itself, in the same shape.",
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
    f"{KEEP_HOURS} hours. 1 to 255 visible ASCII characters.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
}
_KEY_REUSED = "The Idempotency-Key was already used by the caller for a different request."
# The operations whose 201 names the created resource (apis/_base.created).
_LOCATED = {
    "collections_create",
    "collections_judgements_create",
    "collections_runs_create",
    "collections_runs_update",
    "collections_runs_results_update",
    "collections_pools_create",
    "collections_members_create",
    "collections_accounts_create",
    "collections_judges_create",
    "collections_webhooks_create",
    "collections_versions_create",
    "collections_queries_create",
    "collections_documents_create",
}
_LOCATION = {
    "description": "The URL of the created resource.",
    "schema": {"type": "string", "format": "uri"},
    "required": True,
}

# The validators of a conditional read (annotations/apis/conditional.py): every operation
# that documents a 304 sends them with its 200.
_VALIDATORS = {
    "ETag": {
        "description": "A strong validator: it changes whenever the body does (send it back "
        "in If-None-Match).",
        "schema": {"type": "string"},
    },
    "Last-Modified": {
        "description": "When the body last changed, where a stored time says it (left out "
        "while scores are pending).",
        "schema": {"type": "string"},
    },
}


# A query parameter holding NUL is refused before any view (annotations/middleware.py).
_NO_NUL = f"^[^{NUL}]*$"


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR}}}


def _refuse_nul(parameters: list[dict[str, Any]]) -> None:
    """A string query parameter says it holds no NUL (a pattern of its own says more)."""
    for parameter in parameters:
        schema = parameter.get("schema", {})
        if (
            parameter.get("in") == "query"
            and schema.get("type") == "string"
            and not {"pattern", "format", "enum"} & set(schema)
        ):
            schema["pattern"] = _NO_NUL


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
            _refuse_nul(operation.get("parameters", []))
            created = responses.get("201")
            if isinstance(created, dict) and operation.get("operationId") in _LOCATED:
                created.setdefault("headers", {})["Location"] = _LOCATION
            if "304" in responses and isinstance(responses.get("200"), dict):
                responses["200"].setdefault("headers", {}).update(_VALIDATORS)
            if method in _WRITES:
                parameters = operation.setdefault("parameters", [])
                if not any(p.get("name") == "Idempotency-Key" for p in parameters):
                    parameters.append(dict(_IDEMPOTENCY_KEY))
                extra[422] = _KEY_REUSED
            for status, description in extra.items():
                responses.setdefault(str(status), _error(description))
            operation["responses"] = dict(sorted(responses.items()))
    _request_only_without_read_only(result)
    return result


def _references(node: Any) -> set[str]:
    """The component names `node` refers to (`#/components/schemas/NAME`)."""
    if isinstance(node, dict):
        found = {str(node["$ref"]).rsplit("/", 1)[1]} if "$ref" in node else set()
        for value in node.values():
            found |= _references(value)
        return found
    if isinstance(node, list):
        return set().union(*map(_references, node)) if node else set()
    return set()


def _request_only_without_read_only(result: dict[str, Any]) -> None:
    """A component only ever sent (an upload's form) lists no read-only field: a generated
    client would offer them as settable. The server still refuses them by name (a 400)."""
    sent: set[str] = set()
    answered: set[str] = set()
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method in _METHODS:
                sent |= _references(operation.get("requestBody", {}))
                answered |= _references(operation.get("responses", {}))
    schemas = result.get("components", {}).get("schemas", {})
    for name in sent - answered:
        schema = schemas.get(name, {})
        hidden = [
            key for key, value in schema.get("properties", {}).items() if value.get("readOnly")
        ]
        for key in hidden:
            del schema["properties"][key]
        if hidden and "required" in schema:
            schema["required"] = [key for key in schema["required"] if key not in hidden]


def _input_constraints(field: Any, schema: dict[str, Any]) -> None:
    """What a request body's field refuses beyond what drf-spectacular states: an empty list
    where `allow_empty` is off, a blank string where `allow_blank` is, NUL in any string
    (DRF's CharField), control characters in free text (`TextField`)."""
    if (
        isinstance(field, serializers.ListSerializer | serializers.ListField)
        and not field.allow_empty
        and schema.get("type") == "array"
    ):
        schema["minItems"] = max(schema.get("minItems", 0), 1)
    if (
        isinstance(field, serializers.CharField)
        and schema.get("type") == "string"
        and not {"pattern", "format", "enum", "oneOf"} & set(schema)
    ):
        schema["pattern"] = string_pattern(field)
        if not field.allow_blank:
            schema["minLength"] = max(schema.get("minLength", 0), 1)


class ApiSchema(AutoSchema):
    """drf-spectacular's schema, describing an operation by its own words only: a base
    class's docstring (how the view is built) is no description of what it does. Request
    bodies (`StrictInputMixin`) state every rule their fields check."""

    def get_description(self) -> str:  # type: ignore[override]  # drf-spectacular's signature
        method = getattr(self.view, self.method.lower(), None)
        own = method.__doc__ if method is not None else None
        return inspect.cleandoc(own or type(self.view).__dict__.get("__doc__") or "")

    def _map_basic_serializer(self, serializer: Any, direction: Any) -> Any:
        schema = super()._map_basic_serializer(serializer, direction)
        if isinstance(force_instance(serializer), StrictInputMixin) and "required" in schema:
            # A read-only field of a request body is one no request may send, not a required one.
            properties = schema.get("properties", {})
            required = [
                name for name in schema["required"] if not properties.get(name, {}).get("readOnly")
            ]
            if required:
                schema["required"] = required
            else:
                del schema["required"]
        return schema

    def _insert_field_validators(self, field: Any, schema: Any) -> None:
        super()._insert_field_validators(field, schema)
        if isinstance(field.parent, StrictInputMixin) and not field.read_only:
            _input_constraints(field, schema)
