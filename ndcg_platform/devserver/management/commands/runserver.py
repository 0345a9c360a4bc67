"""runserver, with the raw request target in REQUEST_URI (see ndcg_platform.devserver)."""

from __future__ import annotations

from typing import Any

from django.contrib.staticfiles.management.commands.runserver import (
    Command as StaticfilesRunserver,
)
from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer


class RawTargetRequestHandler(WSGIRequestHandler):
    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ["REQUEST_URI"] = self.path  # as the client sent it, %2F and all
        return environ


class RawTargetServer(WSGIServer):
    def __init__(self, server_address: Any, handler: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(server_address, RawTargetRequestHandler, *args, **kwargs)


class Command(StaticfilesRunserver):
    server_cls = RawTargetServer
