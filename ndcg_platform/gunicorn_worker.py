"""gunicorn's sync worker, answering requests it refuses itself under /api/ in the API's shape."""

from __future__ import annotations

import re
import socket
from typing import Any

from gunicorn import util
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.workers.sync import SyncWorker

# The start of a request line whose target is under /api/: one optional empty line, the
# method, then the path (origin form) or a scheme and host before it (absolute form).
_API_TARGET = re.compile(rb"(?:\r\n)?[!-~]+ (?:[A-Za-z][A-Za-z0-9+.-]*://[^/ ]*)?/api/")
# Enough for the longest method and an absolute-form target's host, within one segment.
_PEEK_BYTES = 128


def _targets_api(client: socket.socket) -> bool:
    """Whether the first bytes the client sent ask for a path under /api/, read without
    taking them (gunicorn parses them next; a refused request line is never given back)."""
    try:
        return _API_TARGET.match(client.recv(_PEEK_BYTES, socket.MSG_PEEK)) is not None
    except OSError:  # gunicorn meets the same error when it reads, and handles it
        return False


class ApiErrorWorker(SyncWorker):
    """The sync worker; a request line or header fields over gunicorn's limits answer 414 or
    431 in the API's error shape when the request is for /api/, gunicorn's HTML elsewhere.

    gunicorn refuses them before any application code runs, and the refused bytes are gone
    by then: which path was asked for is seen beforehand, by a peek at the connection's first
    bytes. Over TLS served by gunicorn itself those bytes are ciphertext: HTML as before.
    """

    targets_api = False

    def handle(self, listener: Any, client: socket.socket, addr: Any) -> None:
        self.targets_api = not self.cfg.is_ssl and _targets_api(client)
        super().handle(listener, client, addr)

    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        refusal = self._refusal(exc) if self.targets_api else None
        if refusal is None:
            super().handle_error(req, client, addr, exc)
            return
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        # Imported here: the arbiter loads this class before Django is set up; a worker
        # handles requests only once it has loaded the application.
        from annotations.api_errors import error_response

        response = error_response(*refusal)
        status = response.status_code
        head = (
            f"HTTP/1.1 {status} {response.reason_phrase}\r\nConnection: close\r\n"
            f"Content-Type: {response['Content-Type']}\r\n"
            f"Content-Length: {len(response.content)}\r\n\r\n"
        )
        try:
            util.write_nonblock(client, head.encode("latin-1") + response.content)
        except Exception:  # the client is gone: as gunicorn's own handle_error
            self.log.debug("Failed to send error message.")

    def _refusal(self, exc: BaseException) -> tuple[int, str, str] | None:
        if isinstance(exc, LimitRequestLine):
            return (
                414,
                "request_target_too_long",  # as the API's own check (RequestTargetTooLong)
                "The request line (method, path and query string) is longer than "
                f"{self.cfg.limit_request_line:,} bytes.",
            )
        if isinstance(exc, LimitRequestHeaders):
            return (
                431,
                "request_header_fields_too_large",
                f"The request's header fields are larger than this server accepts: at most "
                f"{self.cfg.limit_request_fields} fields of at most "
                f"{self.cfg.limit_request_field_size:,} bytes each.",
            )
        return None
