"""Calling out as an attacker would have it go: internal addresses in every disguise, a name
that rebinds to loopback, redirects, proxies, answers that are not what was asked for, too
long, too slow or compressed, and error texts that would carry what an internal server said;
for webhook deliveries and machine judges alike, against real servers on 127.0.0.1."""

from __future__ import annotations

import contextlib
import datetime
import gzip
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import events, services
from annotations.models import Collection, JudgeRun, MachineJudge, WebhookDelivery
from annotations.services import outbound, webhooks
from annotations.services.judge_client import NOT_A_COMPLETION, EndpointFailed, ask
from annotations.services.judges import judge_run_start
from annotations.services.outbound import (
    AnswerRefused,
    OutboundRefused,
    Rule,
    address_internal,
    outbound_client,
    outbound_refusal,
)
from annotations.services.webhooks import deliveries_send_due, subscription_create
from tests.factories import machine_judge
from tests.waiting import wait_until

MARKER = "internal-secret-3f9a1c"  # what an internal server would give away
PUBLIC_V4 = "93.184.216.34"
CLOSED = Rule(allow_private=False, setting="NDCG_TEST_ALLOW_PRIVATE", credentials="test")
OPEN = Rule(allow_private=True, setting="NDCG_TEST_ALLOW_PRIVATE", credentials="test")


# --- a server that answers exactly what a test writes -----------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    url: str = ""
    received: list[Seen] = field(default_factory=list)
    sent: int = 0  # bytes of answer written
    finished: int = 0  # answers written to their end, or until the client left


Reply = Callable[[BaseHTTPRequestHandler, Server], None]


def answer(status: str, headers: dict[str, str], body: bytes = b"") -> Reply:
    def reply(handler: BaseHTTPRequestHandler, server: Server) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        handler.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return reply


def completion(text: str) -> bytes:
    return json.dumps({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }).encode()  # fmt: skip


JSON = {"Content-Type": "application/json"}
GRADED = answer("200 OK", JSON, completion("##final score: 2"))


@contextmanager
def serving(reply: Reply = GRADED, tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    """A server on 127.0.0.1 (a free port) that records each request and has `reply` write
    the whole answer, byte for byte."""
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {key.lower(): value for key, value in self.headers.items()}
            state.received.append(Seen(self.command, self.path, headers, body))
            # an OSError: the client went away, as from an answer it cut off
            with contextlib.suppress(OSError):
                reply(self, state)
            state.finished += 1
            self.close_connection = True

        do_GET = do_POST = _any

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    state.url = f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _judge(url: str, **fields: Any) -> MachineJudge:
    """A judge as `ask` reads it (never saved: `ask` needs no database)."""
    return MachineJudge(
        base_url=url, model="m", api_key_env="", temperature=0.0, max_tokens=20, **fields
    )


def _no_sleep(seconds: float) -> None:
    return None


class Resolver:
    """socket.getaddrinfo for the names of a test: each name's answers in turn (the last one
    again once they run out), counted; any other host resolves as ever."""

    def __init__(self, names: dict[str, list[list[str]]]) -> None:
        self.names = names
        self.calls: list[str] = []
        self.real = socket.getaddrinfo

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in self.names:
            return self.real(host, port, *args, **kwargs)
        answers = self.names[host]
        given = answers[min(self.calls.count(host), len(answers) - 1)]
        self.calls.append(host)
        return [found for address in given for found in self.real(address, port, *args, **kwargs)]


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address a socket of this process connects to; the public test address refuses
    (there is no network in tests) and is only recorded."""
    connected: list[str] = []
    real = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> None:
        connected.append(str(address[0]))
        if address[0] == PUBLIC_V4:
            raise ConnectionRefusedError("no network in tests")
        real(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return connected


# --- which addresses ----------------------------------------------------------------------------

INTERNAL = [
    "127.0.0.1", "10.1.2.3", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
    "::1", "::", "fe80::1", "fc00::1", "fec0::1", "ff0e::1",
    "::127.0.0.1",  # IPv4-compatible
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:0:7f00:1",  # IPv4-translated (SIIT)
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::5db8:d822",  # NAT64 local use, even of a public address
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a01:203::1",  # 6to4 of 10.1.2.3
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
]  # fmt: skip
PUBLIC = [
    PUBLIC_V4, "2606:2800:220:1:248:1893:25c8:1946",
    "64:ff9b::5db8:d822",  # NAT64 of a public address
    "2002:5db8:d822::1",  # 6to4 of a public address
]  # fmt: skip


def _literal(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@pytest.mark.parametrize("address", INTERNAL)
def test_an_address_that_is_not_globally_routable_is_refused_in_every_form(address: str) -> None:
    assert address_internal(ipaddress.ip_address(address))
    url = f"http://{_literal(address)}:8080/hook"
    refusal = outbound_refusal(url, CLOSED)
    assert refusal is not None and "NDCG_TEST_ALLOW_PRIVATE=true" in refusal
    with (
        outbound_client(CLOSED, answer_bytes=1024, seconds=5) as client,
        pytest.raises(OutboundRefused, match="private, loopback or internal"),
    ):
        client.post(url, content=b"{}")


@pytest.mark.parametrize("address", PUBLIC)
def test_a_globally_routable_address_is_allowed(address: str) -> None:
    assert not address_internal(ipaddress.ip_address(address))
    assert outbound_refusal(f"https://{_literal(address)}/v1", CLOSED) is None


def test_one_internal_address_among_a_names_public_ones_refuses_the_name(
    monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    resolver = Resolver({"mixed.test": [[PUBLIC_V4, "127.0.0.1"]]})
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with serving() as server:
        port = server.url.rsplit(":", 1)[1]
        assert "127.0.0.1" in (outbound_refusal(f"http://mixed.test:{port}/", CLOSED) or "")
        with (
            outbound_client(CLOSED, answer_bytes=1024, seconds=5) as client,
            pytest.raises(OutboundRefused, match=r"resolves to 127\.0\.0\.1"),
        ):
            client.get(f"http://mixed.test:{port}/")
    assert connections == [] and server.received == []


def test_internal_addresses_are_called_when_the_operator_allows_them(
    connections: list[str],
) -> None:
    with (
        serving(answer("204 No Content", {})) as server,
        outbound_client(OPEN, answer_bytes=1024, seconds=5) as client,
    ):
        assert client.post(server.url + "/hook", content=b"{}").status_code == 204
        assert client.post(server.url + "/again", content=b"{}").status_code == 204
    assert [seen.path for seen in server.received] == ["/hook", "/again"]
    assert connections == ["127.0.0.1"] * 2  # a connection (and a check) per request


@pytest.mark.parametrize("url", ["ftp://93.184.216.34/x", "http://user:pw@93.184.216.34/x"])
def test_the_client_refuses_a_url_of_another_form_before_connecting(
    url: str, connections: list[str]
) -> None:
    with (
        outbound_client(OPEN, answer_bytes=1024, seconds=5) as client,
        pytest.raises(OutboundRefused),
    ):
        client.get(url)
    assert connections == []


# --- DNS rebinding -------------------------------------------------------------------------------


def test_a_webhook_target_rebinding_to_loopback_is_resolved_once_and_never_reached(
    trial: Collection, settings: Any, monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = False
    # public to the check when subscribing and to the sender's check, loopback afterwards
    resolver = Resolver({"rebind.test": [[PUBLIC_V4], [PUBLIC_V4], ["127.0.0.1"]]})
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with serving(answer("204 No Content", {})) as server:
        port = server.url.rsplit(":", 1)[1]
        hook = subscription_create(
            collection=trial, url=f"http://rebind.test:{port}/hook", created_by=None
        )
        events.emit(collection_id=trial.id, event_type="version.tagged", data={})
        deliveries_send_due()
    delivery = hook.deliveries.get()
    assert server.received == []
    assert resolver.calls == ["rebind.test"] * 2  # the subscription's check, one connection
    assert connections == [PUBLIC_V4]  # the address checked, and only that
    assert (delivery.state, delivery.last_status, delivery.last_error) == (
        WebhookDelivery.PENDING, None, "ConnectError"
    )  # fmt: skip


def test_a_judge_endpoint_rebinding_to_loopback_is_checked_at_each_connection(
    settings: Any, monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    settings.NDCG_JUDGE_ALLOW_PRIVATE = False
    resolver = Resolver({"rebind.test": [[PUBLIC_V4], ["127.0.0.1"]]})
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with serving() as server:
        port = server.url.rsplit(":", 1)[1]
        judge = _judge(f"http://rebind.test:{port}/v1")
        with pytest.raises(
            EndpointFailed, match=r"not called: rebind\.test resolves to 127\.0\.0\.1"
        ):
            ask(judge, "prompt", sleep=_no_sleep, attempts=3)
    assert server.received == []
    # the first connection went to the public address it was checked for; the second was
    # refused when the name answered loopback: one lookup per connection
    assert resolver.calls == ["rebind.test"] * 2 and connections == [PUBLIC_V4]


# --- redirects and proxies ----------------------------------------------------------------------


@pytest.mark.parametrize("status", ["307 Temporary Redirect", "308 Permanent Redirect"])
def test_a_redirect_is_the_answer_for_webhooks_and_judges_and_never_followed(
    trial: Collection, settings: Any, status: str
) -> None:
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    with serving(answer("200 OK", JSON, completion(MARKER))) as inside:
        moved = answer(status, {"Location": inside.url + "/admin"})
        with serving(moved) as first:
            hook = subscription_create(collection=trial, url=first.url + "/hook", created_by=None)
            events.emit(collection_id=trial.id, event_type="version.tagged", data={})
            deliveries_send_due()
            with pytest.raises(EndpointFailed, match=f"HTTP {status[:3]}, a redirect") as failed:
                ask(_judge(first.url + "/v1"), "prompt", sleep=_no_sleep, attempts=2)
    assert inside.received == [] and len(first.received) == 2
    delivery = hook.deliveries.get()
    assert delivery.last_status == int(status[:3]) and delivery.state == WebhookDelivery.PENDING
    assert MARKER not in str(failed.value)


def test_proxies_of_the_environment_are_not_used(
    trial: Collection, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    with serving() as proxy, serving() as target:
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert ask(_judge(target.url + "/v1"), "prompt").text == "##final score: 2"
        subscription_create(collection=trial, url=target.url + "/hook", created_by=None)
        events.emit(collection_id=trial.id, event_type="version.tagged", data={})
        deliveries_send_due()
    assert proxy.received == []
    assert [seen.path for seen in target.received] == ["/v1/chat/completions", "/hook"]


# --- answers that are not what was asked for ---------------------------------------------------

NOT_COMPLETIONS = [
    answer("200 OK", {"Content-Type": "text/html"}, f"<html>{MARKER}</html>".encode()),
    answer("200 OK", JSON, f"{{{MARKER}".encode()),
    answer("200 OK", JSON, b"null"),
    answer("200 OK", JSON, json.dumps([MARKER]).encode()),
    answer("200 OK", JSON, json.dumps({"choices": MARKER}).encode()),
    answer("200 OK", JSON, json.dumps({"choices": [{"message": {"content": [MARKER]}}]}).encode()),
    answer("200 OK", JSON, json.dumps({"choices": [], "usage": {"prompt_tokens": MARKER}})
           .encode()),
]  # fmt: skip


@pytest.mark.parametrize("reply", NOT_COMPLETIONS)
def test_a_judge_answer_that_is_not_a_chat_completion_fails_as_such(reply: Reply) -> None:
    with serving(reply) as server, pytest.raises(EndpointFailed) as failed:
        ask(_judge(server.url + "/v1"), "prompt", sleep=_no_sleep)
    assert str(failed.value) == NOT_A_COMPLETION
    assert len(server.received) == 1  # not asked again: it would answer the same


@pytest.fixture
def tried_judge(trial: Collection, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], str]:
    """A judge of the trial collection at a URL, and the path of its API's try."""
    monkeypatch.setenv("NDCG_JUDGE_KEY_TEST", "sk-test")
    services.pool_build(collection=trial, name="main", depth=2)

    def made(url: str) -> str:
        machine_judge(trial, "umbrela", base_url=url)
        return "/api/v1/collections/trial/judges/umbrela/try/"

    return made


def _olga_api() -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=User.objects.get(username="olga"))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _olga_page() -> Client:
    client = Client()
    client.force_login(User.objects.get(username="olga"))
    return client


def test_trying_a_judge_whose_endpoint_answers_html_is_a_400_saying_so(
    tried_judge: Callable[[str], str],
) -> None:
    with serving(NOT_COMPLETIONS[0]) as server:
        path = tried_judge(server.url + "/v1")
        tried = _olga_api().post(path)
        page = _olga_page().post(reverse("judge-detail", args=["trial", "umbrela"]), {"try": "1"})
    assert tried.status_code == 400, tried.content
    assert "not a chat completion" in tried.content.decode()
    assert page.status_code == 200 and "not a chat completion" in page.content.decode()
    assert MARKER not in tried.content.decode() + page.content.decode()


# --- nothing an endpoint or a receiver sends reaches an error text ------------------------------

LEAKING = [
    answer("400 Bad Request", JSON, json.dumps({"error": {"message": MARKER}}).encode()),
    answer("404 Not Found", {"Content-Type": "text/plain"}, MARKER.encode()),
    answer(f"500 {MARKER}", {"Content-Type": "text/plain"}, MARKER.encode()),
    lambda handler, server: handler.wfile.write(f"{MARKER}\r\n\r\n".encode()),  # not HTTP
    answer("200 OK", {f"X-{MARKER}": MARKER * 3000}),  # headers past the limit
]


@pytest.mark.parametrize("reply", LEAKING)
def test_no_error_text_carries_what_the_judge_endpoint_sent(
    transactional_db: None, tried_judge: Callable[[str], str], reply: Reply
) -> None:
    with serving(reply) as server:
        path = tried_judge(server.url + "/v1")
        tried = _olga_api().post(path)
        page = _olga_page().post(reverse("judge-detail", args=["trial", "umbrela"]), {"try": "1"})
        shown = tried.content.decode() + page.content.decode()
        judge = MachineJudge.objects.get()
        judge.attempts = 1  # one attempt per pair: a run asks each pair once
        judge.save()
        run = judge_run_start(judge=judge, pool=judge.collection.pools.get(), scope="all",
                              created_by=None)  # fmt: skip

        def finished() -> JudgeRun | None:
            run.refresh_from_db()
            return run if run.state not in JudgeRun.ACTIVE else None

        wait_until(finished, "the judge run finished", seconds=60)
        # Each pair's failure is recorded, the run goes on to the next pair.
        assert run.pairs_failed == run.pairs_done == run.pairs_total > 0
        messages = list(run.failures.values_list("message", flat=True))
        assert len(messages) == run.pairs_total and all(messages)
        shown += run.error + "".join(messages)
    assert tried.status_code == 400 and page.status_code == 200
    assert "the endpoint" in tried.content.decode()
    assert MARKER not in shown


@pytest.mark.parametrize(
    ("reply", "recorded"),
    [
        (LEAKING[2], "HTTP 500 Internal Server Error"),  # the standard phrase, not the receiver's
        (LEAKING[3], "RemoteProtocolError"),
        (LEAKING[4], "the answer is longer than 64 KiB"),
        (answer(f"302 {MARKER}", {"Location": f"http://{MARKER}/"}), "HTTP 302 Found"),
    ],
)
def test_no_part_of_a_receivers_answer_is_recorded_with_a_delivery(
    trial: Collection, settings: Any, reply: Reply, recorded: str
) -> None:
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    with serving(reply) as server:
        hook = subscription_create(collection=trial, url=server.url + "/hook", created_by=None)
        events.emit(collection_id=trial.id, event_type="version.tagged", data={})
        deliveries_send_due()
    delivery = hook.deliveries.get()
    assert delivery.state == WebhookDelivery.PENDING and delivery.last_error == recorded


# --- too long, too slow, compressed -------------------------------------------------------------


def endless(handler: BaseHTTPRequestHandler, server: Server) -> None:
    """200 and a JSON answer that never ends (stops at 128 MiB, or when the client leaves)."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[")
    chunk = b"0," * 32768
    while server.sent < 128 * 2**20:
        handler.wfile.write(chunk)
        server.sent += len(chunk)


def test_an_endless_judge_answer_is_cut_at_the_limit_and_fails_cleanly() -> None:
    with serving(endless) as server:
        with pytest.raises(EndpointFailed) as failed:
            ask(_judge(server.url + "/v1"), "prompt", sleep=_no_sleep)
        wait_until(lambda: server.finished, "the server's writes failed")
    assert str(failed.value) == "the endpoint's answer is not read: the answer is longer than 1 MiB"
    assert server.sent < 64 * 2**20  # the client left long before the end
    assert len(server.received) == 1


def test_a_webhook_receiver_that_answers_endlessly_still_counts_by_its_status(
    trial: Collection, settings: Any
) -> None:
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    with serving(endless) as server:
        hook = subscription_create(collection=trial, url=server.url + "/hook", created_by=None)
        events.emit(collection_id=trial.id, event_type="version.tagged", data={})
        deliveries_send_due()
        wait_until(lambda: server.finished, "the server's writes failed")
    delivery = hook.deliveries.get()
    assert delivery.state == WebhookDelivery.DELIVERED and delivery.last_status == 200
    assert server.sent < 64 * 2**20


def dripping(handler: BaseHTTPRequestHandler, server: Server) -> None:
    """An answer's header lines, one every 20 ms for 10 s: each read is quick, the whole is
    not."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
    for number in range(500):
        handler.wfile.write(f"X-{number}: a\r\n".encode())
        handler.wfile.flush()
        time.sleep(0.02)
    handler.wfile.write(b"Content-Length: 0\r\n\r\n")


def test_an_answer_dripping_in_ends_at_the_whole_calls_deadline(
    trial: Collection, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    monkeypatch.setattr(webhooks, "TIMEOUT_SECONDS", 0.5)
    with serving(dripping) as server:
        hook = subscription_create(collection=trial, url=server.url + "/hook", created_by=None)
        events.emit(collection_id=trial.id, event_type="version.tagged", data={})
        started = time.monotonic()
        deliveries_send_due()
        took = time.monotonic() - started
    assert took < 3  # not the 10 s the answer would take
    assert hook.deliveries.get().last_error == "ReadTimeout"


def test_a_compressed_answer_is_never_decoded() -> None:
    # what unzips to 16 MiB travels as some 16 KiB
    bomb = gzip.compress(b" " * 16 * 2**20)
    reply = answer("200 OK", {**JSON, "Content-Encoding": "gzip"}, bomb)
    with serving(reply) as server:
        with (
            outbound_client(OPEN, answer_bytes=2**20, seconds=5) as client,
            pytest.raises(AnswerRefused, match="compressed"),
        ):
            client.post(server.url + "/v1/chat/completions", content=b"{}")
        with pytest.raises(EndpointFailed, match=r"not read: the answer is compressed \(gzip\)"):
            ask(_judge(server.url + "/v1"), "prompt", sleep=_no_sleep)
    assert {seen.headers["accept-encoding"] for seen in server.received} == {"identity"}


# --- the name of the URL, not the address, to the server -----------------------------------------


def test_the_host_header_names_the_urls_host_though_the_checked_address_is_connected(
    monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", Resolver({"judge.example": [["127.0.0.1"]]}))
    with serving() as server:
        port = server.url.rsplit(":", 1)[1]
        answer_ = ask(_judge(f"http://judge.example:{port}/v1", logprobs=False), "prompt")
    assert answer_.text == "##final score: 2"
    assert [seen.headers["host"] for seen in server.received] == [f"judge.example:{port}"]
    assert connections == ["127.0.0.1"]


def _certificate(name: str, directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for `name` and its key, as files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / f"{name}.pem", directory / f"{name}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.mark.parametrize(
    ("certified", "works"), [("judge.example", True), ("other.example", False)]
)
def test_tls_names_and_checks_the_urls_host_on_the_checked_address(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, connections: list[str], certified: str,
    works: bool,
) -> None:  # fmt: skip
    pytest.importorskip("cryptography")
    cert_file, key_file = _certificate(certified, tmp_path)
    names: list[str | None] = []
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert_file, key_file)

    def heard(sock: ssl.SSLObject, name: str | None, context: ssl.SSLContext) -> None:
        names.append(name)

    server_side.sni_callback = heard  # type: ignore[assignment]
    trusting = ssl.create_default_context(cafile=str(cert_file))
    monkeypatch.setattr(outbound, "_tls", lambda: trusting)
    monkeypatch.setattr(socket, "getaddrinfo", Resolver({"judge.example": [["127.0.0.1"]]}))
    with serving(tls=server_side) as server:
        port = server.url.rsplit(":", 1)[1]
        with outbound_client(OPEN, answer_bytes=2**20, seconds=5) as client:
            if works:
                got = client.get(f"https://judge.example:{port}/v1/models")
                assert got.status_code == 200
            else:  # a certificate for another name is refused
                with pytest.raises(httpx2.ConnectError):
                    client.get(f"https://judge.example:{port}/v1/models")
    assert names == ["judge.example"] and connections == ["127.0.0.1"]
    assert [seen.headers["host"] for seen in server.received] == (
        [f"judge.example:{port}"] if works else []
    )
