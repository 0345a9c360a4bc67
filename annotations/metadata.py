"""OPTIONS answers: what the resource is, and for each write the caller may make, the fields
of the body that write takes (its documented request body, not the body it answers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, serializers
from rest_framework.metadata import SimpleMetadata
from rest_framework.request import Request, clone_request

if TYPE_CHECKING:
    from rest_framework.views import APIView

WRITES = ("POST", "PUT", "PATCH")


def view_schema(view: APIView, method: str) -> Any | None:
    """The schema generator of one method of the view (extend_schema's), bound to it; None
    for a method no extend_schema describes."""
    handler = getattr(view, method.lower(), None)
    schema_class = getattr(handler, "kwargs", {}).get("schema")
    if schema_class is None:
        return None
    schema = schema_class()
    schema.view = view
    schema.method = method
    schema.path = view.request.path if getattr(view, "request", None) is not None else ""
    return schema


def query_parameters(view: APIView, method: str) -> frozenset[str] | None:
    """The query parameters the schema documents for a method of the view: its own, its
    filters' and its pagination's; None when no extend_schema describes the method."""
    schema = view_schema(view, method)
    if schema is None:
        return None
    names = {
        parameter.name
        for parameter in schema.get_override_parameters()
        if getattr(parameter, "location", None) == "query"
    }
    filterset = getattr(view, "filterset_class", None)
    if method == "GET" and filterset is not None:
        names.update(filterset.base_filters)
    paginator = getattr(view, "paginator", None)
    if paginator is None and hasattr(view, "pages"):  # a list answered in pages (PagedList)
        paginator = view.pagination_class()  # type: ignore[attr-defined]
    listed = hasattr(view, "get_queryset") or hasattr(view, "pages")
    if method == "GET" and paginator is not None and listed:
        names.update({paginator.limit_query_param, paginator.offset_query_param})
    return frozenset(names)


def request_serializer(view: APIView, method: str) -> serializers.BaseSerializer[Any] | None:
    """The body a method of the view takes, as its schema documents it (extend_schema's
    `request`), or None when it takes none the schema names."""
    schema = view_schema(view, method)
    if schema is None:
        return None
    body = schema.get_request_serializer()
    if isinstance(body, dict):
        body = next(iter(body.values()), None)
    if isinstance(body, type) and issubclass(body, serializers.BaseSerializer):
        body = body()
    return body if isinstance(body, serializers.BaseSerializer) else None


class ApiMetadata(SimpleMetadata):
    def determine_metadata(self, request: Request, view: APIView) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": view.get_view_name(),
            "description": view.get_view_description(),
            "renders": [renderer.media_type for renderer in view.renderer_classes],
            "parses": [parser.media_type for parser in view.parser_classes],
        }
        actions = self.determine_actions(request, view)
        if actions:
            metadata["actions"] = actions
        return metadata

    def determine_actions(self, request: Request, view: APIView) -> dict[str, Any]:
        """Each write of the resource the caller may make, with its body's fields."""
        actions = {}
        for method in (m for m in WRITES if m in view.allowed_methods):
            body = request_serializer(view, method)
            if body is None:
                continue
            view.request = clone_request(request, method)
            try:
                view.check_permissions(view.request)
            except (exceptions.APIException, DjangoPermissionDenied, Http404):
                continue
            finally:
                view.request = request
            actions[method] = self.get_serializer_info(body)
        return actions
