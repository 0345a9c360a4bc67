"""A real HTTP server speaking the OpenAI chat-completions protocol, for machine-judge tests:
it answers each request with what the test's `respond(prompt, number)` returns, and, when the
request asks for log-probabilities and the test gives `logprobs(text)`, the answer's tokens
with their top alternatives in the API's own shape."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (status, answer text or error body, extra headers)
Reply = tuple[int, str, dict[str, str]]


def says(text: str) -> Reply:
    return 200, text, {}


# An answer's tokens: (token, log-probability, [(alternative, log-probability), ...]).
Tokens = list[tuple[str, float, list[tuple[str, float]]]]


def _token(text: str, logprob: float) -> dict[str, Any]:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode())}


@dataclass
class FakeLlm:
    respond: Callable[[str, int], Reply] = lambda prompt, number: says("##final score: 1")
    logprobs: Callable[[str], Tokens] | None = None
    url: str = ""
    prompts: list[str] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)  # each request's Authorization
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextmanager
def fake_llm(state: FakeLlm | None = None) -> Iterator[FakeLlm]:
    llm = state or FakeLlm()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            prompt = body["messages"][-1]["content"]
            with llm.lock:
                llm.prompts.append(prompt)
                llm.bodies.append(body)
                llm.authorizations.append(self.headers.get("Authorization", ""))
                number = len(llm.prompts)
            status, text, headers = llm.respond(prompt, number)
            if status == 200:
                payload = {
                    "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 7,
                              "total_tokens": len(prompt) // 4 + 7},
                }  # fmt: skip
                if body.get("logprobs") and llm.logprobs is not None:
                    payload["choices"][0]["logprobs"] = {"content": [
                        {**_token(token, logprob), "top_logprobs": [
                            _token(other, value)
                            for other, value in alternatives[: body.get("top_logprobs", 0)]
                        ]}
                        for token, logprob, alternatives in llm.logprobs(text)
                    ]}  # fmt: skip
            else:
                payload = {"error": {"message": text, "type": "test", "code": status}}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    llm.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield llm
    finally:
        server.shutdown()
        server.server_close()
