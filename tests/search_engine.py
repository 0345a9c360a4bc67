"""A real search engine (tantivy's BM25 over a handful of documents) behind a local HTTP
server that answers in Elasticsearch's `_search` and Solr's `select` shapes, for the search
systems' tests; a test can make chosen queries fail (a status, with headers) and reads what
each request carried."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import tantivy

DOCUMENTS = [
    ("d1", "Cats", "Cats are small carnivorous felines kept as pets.", "https://example.org/cats"),
    ("d2", "Dogs", "Dogs and cats live together in many homes.", "https://example.org/dogs"),
    ("d3", "Lions", "Lions are large cats of the savanna.", "https://example.org/lions"),
    ("d4", "Rivers", "The Rhine floods in spring; dogs swim in it.", "https://example.org/rhine"),
    ("d5", "Tea", "Green tea and black tea come from one plant.", "https://example.org/tea"),
    ("doc/6", "Cat food", "What cats and kittens eat.", "https://example.org/cat-food"),
]


class Engine:
    """tantivy's index of DOCUMENTS: `search(text, size)` gives (docno, score, fields)."""

    def __init__(self) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("docno", stored=True, tokenizer_name="raw")
        builder.add_text_field("title", stored=True)
        builder.add_text_field("text", stored=True)
        builder.add_text_field("url", stored=True, tokenizer_name="raw")
        self.index = tantivy.Index(builder.build())
        writer = self.index.writer(heap_size=15_000_000, num_threads=1)
        for docno, title, text, url in DOCUMENTS:
            writer.add_document(tantivy.Document(docno=docno, title=title, text=text, url=url))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.lock = threading.Lock()

    def search(self, text: str, size: int) -> list[tuple[str, float, dict[str, str]]]:
        words = re.findall(r"\w+", text.lower())
        if not words:
            return []
        with self.lock:
            searcher = self.index.searcher()
            query = self.index.parse_query(" ".join(words), ["title", "text"])
            found = []
            for score, address in searcher.search(query, size).hits:
                stored = searcher.doc(address).to_dict()
                fields = {name: values[0] for name, values in stored.items()}
                found.append((fields.pop("docno"), float(score), fields))
        return found


@dataclass
class Served:
    engine: Engine
    url: str = ""
    # query text -> the replies to give before answering (status, headers), used in order;
    # a status given with `always` is answered every time.
    faults: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    always: dict[str, tuple[int, dict[str, str]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fault(self, text: str) -> tuple[int, dict[str, str]] | None:
        with self.lock:
            if text in self.always:
                return self.always[text]
            queued = self.faults.get(text)
            return queued.pop(0) if queued else None


def elasticsearch_answer(found: list[tuple[str, float, dict[str, str]]]) -> dict[str, Any]:
    return {
        "took": 1, "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {
            "total": {"value": len(found), "relation": "eq"},
            "max_score": found[0][1] if found else None,
            "hits": [
                {"_index": "docs", "_id": docno, "_score": score, "_source": fields}
                for docno, score, fields in found
            ],
        },
    }  # fmt: skip


def solr_answer(
    found: list[tuple[str, float, dict[str, str]]], params: dict[str, str]
) -> dict[str, Any]:
    return {
        "responseHeader": {"status": 0, "QTime": 1, "params": params},
        "response": {
            "numFound": len(found), "start": 0, "numFoundExact": True,
            "maxScore": found[0][1] if found else 0.0,
            "docs": [
                {"id": docno, "title": [fields["title"]], "text": fields["text"],
                 "url": fields["url"], "score": score}
                for docno, score, fields in found
            ],
        },
    }  # fmt: skip


@contextmanager
def search_engine(served: Served | None = None) -> Iterator[Served]:
    state = served or Served(Engine())

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: object, headers: dict[str, str]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _record(self, text: str, body: object) -> None:
            with state.lock:
                state.requests.append(
                    {"path": self.path, "text": text, "body": body, "headers": dict(self.headers)}
                )

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw)
            text = body["query"]["multi_match"]["query"]
            self._record(text, body)
            fault = state.fault(text)
            if fault is not None:
                self._answer(fault[0], {"error": {"type": "test"}, "status": fault[0]}, fault[1])
                return
            found = state.engine.search(text, int(body.get("size", 10)))
            self._answer(200, elasticsearch_answer(found), {})

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            params = {name: values[0] for name, values in parse_qs(parts.query).items()}
            text = params.get("q", "")
            self._record(text, None)
            fault = state.fault(text)
            if fault is not None:
                self._answer(fault[0], {"error": {"code": fault[0]}}, fault[1])
                return
            found = state.engine.search(text, int(params.get("rows", "10")))
            self._answer(200, solr_answer(found, params), {})

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
