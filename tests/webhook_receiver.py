"""A real HTTP receiver for webhook tests: records every request and verifies its signature."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook


@dataclass
class Received:
    webhook_id: str
    headers: dict[str, str]
    body: str
    status: int  # what the receiver answered
    arrived: float = field(default_factory=time.monotonic)

    @property
    def event(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


@dataclass
class Receiver:
    """Answers each request with `answer(request number, webhook-id)` -> (status, headers)."""

    url: str = ""
    received: list[Received] = field(default_factory=list)
    answer: Callable[[int, str], tuple[int, dict[str, str]]] = lambda count, wid: (204, {})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def delivered(self) -> list[Received]:
        """The requests answered 2xx."""
        with self.lock:
            return [item for item in self.received if 200 <= item.status < 300]

    def verified(self, secret: str) -> list[dict[str, Any]]:
        """Every request's event, each verified against `secret` (raises if one is not)."""
        with self.lock:
            return [Webhook(secret).verify(item.body, item.headers) for item in list(self.received)]


@contextmanager
def receiving(receiver: Receiver | None = None) -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1 (a free port) for the duration of the block."""
    state = receiver or Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode()
            headers = {key.lower(): value for key, value in self.headers.items()}
            with state.lock:
                count = len(state.received)
            status, extra = state.answer(count, headers.get("webhook-id", ""))
            with state.lock:
                wid = headers.get("webhook-id", "")
                state.received.append(Received(wid, headers, body, status))
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
