"""The schema and its docs page: served as drf-spectacular serves them, errors as JSON."""

from __future__ import annotations

from typing import Any

from drf_spectacular.settings import spectacular_settings
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class JsonErrors(APIView):
    """Errors in the API's one JSON shape, whatever the view renders when it succeeds
    (the schema is YAML by default, the docs page HTML)."""

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and response.status_code >= 400:
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = JSONRenderer.media_type
        return response

    def get_permissions(self) -> list[Any]:
        # Read when asked (NDCG_PUBLIC_API_SCHEMA), not when the class was defined.
        return [permission() for permission in spectacular_settings.SERVE_PERMISSIONS]


class SchemaApi(JsonErrors, SpectacularAPIView):
    pass


class SchemaDocsPage(JsonErrors, SpectacularSwaggerSplitView):
    pass
