"""The platform's one way of calling out (webhook receivers, machine judges' endpoints)."""

# Nobody with an organiser's role may reach the platform's own network through a URL they
# give, so a URL is checked when it is given (`outbound_refusal`) and every connection made
# by `outbound_client` is checked again as it is opened: the host is resolved once, every
# address it resolves to must be one the rule allows, and the socket connects to exactly
# that checked address (a name that answers a public address to the check and a loopback one
# to the connection gets nowhere). TLS and the Host header still name the host of the URL.
# No proxy from the environment, no redirect followed (it could point anywhere), one request
# per connection (each is resolved and checked), a deadline for the whole call and a limit on
# the bytes read, so that a slow or endless answer cannot hold a worker.

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2

# The stream httpcore2's own backend wraps a connected socket in; the backend below opens the
# socket itself (to the address it checked) and needs the same wrapper, which is not exported.
from httpcore2._backends.sync import SyncStream

__all__ = [
    "AnswerRefused",
    "OutboundRefused",
    "Rule",
    "address_internal",
    "outbound_client",
    "outbound_refusal",
]

# Addresses that are globally routable as Python's `ipaddress` sees them but reach private
# space: NAT64 local-use prefixes (RFC 8215) and site-local addresses (deprecated, still
# routed inside some networks).
_INTERNAL_V6 = (
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("fec0::/10"),
)
# Prefixes whose last 32 bits are an IPv4 address a gateway or the host's stack connects to:
# IPv4-compatible (::a.b.c.d), IPv4-mapped, IPv4-translated (SIIT) and the NAT64 well-known
# prefix.
_EMBEDDING_V6 = (
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("::ffff:0:0/96"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
    ipaddress.IPv6Network("64:ff9b::/96"),
)


@dataclass(frozen=True)
class Rule:
    """Whose calls these are: whether internal addresses are allowed, the environment setting
    that allows them, and why a URL may hold no user name or password."""

    allow_private: bool
    setting: str
    credentials: str


class OutboundRefused(Exception):
    """The platform will not call this address: the message says why, naming the setting."""


class AnswerRefused(Exception):
    """The platform stopped reading an answer (too long, or compressed): the message says why
    in the platform's words, never with any of the answer."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    found = [
        address
        for address in (ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ()))
        if address is not None
    ]
    if any(ip in network for network in _EMBEDDING_V6):
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def address_internal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether `ip` is anything but a globally routable unicast address, counting the IPv4
    address inside the IPv6 forms that carry one (6to4, Teredo, NAT64, IPv4-mapped or
    -compatible)."""
    if not ip.is_global or ip.is_multicast:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in network for network in _INTERNAL_V6):
            return True
        return any(address_internal(inner) for inner in _embedded_ipv4(ip))
    return False


def _form_refusal(scheme: str, host: str, credentials: bool, rule: Rule) -> str | None:
    if scheme not in {"http", "https"}:
        return "Give an http:// or https:// URL."
    if not host:
        return "The URL names no host."
    if credentials:
        return f"Give the URL without a user name or password ({rule.credentials})."
    return None


_Found = list[tuple[Any, Any, int, str, Any]]


def _resolved(host: str, port: int, rule: Rule) -> _Found:
    """Every address `host` resolves to (one lookup), refused if any is internal and the rule
    does not allow internal addresses."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError, UnicodeError):
        raise OutboundRefused(f"The host {host!r} does not resolve.") from None
    if not rule.allow_private:
        for *_, address in found:
            ip = ipaddress.ip_address(str(address[0]).split("%")[0])
            if address_internal(ip):
                raise OutboundRefused(
                    f"{host} resolves to {ip}, a private, loopback or internal address; "
                    f"set {rule.setting}=true to allow such targets."
                )
    return found


def outbound_refusal(url: str, rule: Rule) -> str | None:
    """Why the platform will not call `url` under `rule`, or None (checked when a URL is
    given; every connection is checked again as it is opened)."""
    parts = urlsplit(url)
    form = _form_refusal(
        parts.scheme, parts.hostname or "", bool(parts.username or parts.password), rule
    )
    if form is not None:
        return form
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        _resolved(parts.hostname or "", port, rule)
    except ValueError:  # a port out of range
        return f"The host {parts.hostname!r} does not resolve."
    except OutboundRefused as refusal:
        return str(refusal)
    return None


def _size(count: int) -> str:
    return f"{count // 2**20} MiB" if count % 2**20 == 0 else f"{count // 1024} KiB"


class _Bounded(httpcore2.NetworkStream):
    """A connection that ends at the call's deadline and reads at most `limit` bytes."""

    def __init__(self, inner: httpcore2.NetworkStream, deadline: float, limit: int) -> None:
        self._inner = inner
        self._deadline = deadline
        self._limit = limit
        self._read = 0

    def _left(self, timeout: float | None, late: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise late("the call ran out of time")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        wanted = min(max_bytes, self._limit - self._read + 1)
        data = self._inner.read(wanted, self._left(timeout, httpcore2.ReadTimeout))
        self._read += len(data)
        if self._read > self._limit:
            raise AnswerRefused(f"the answer is longer than {_size(self._limit)}")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, self._left(timeout, httpcore2.ConnectTimeout)
        )
        return _Bounded(inner, self._deadline, self._limit)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _connected(
    found: _Found, timeout: float, local_address: str | None, options: Sequence[Any]
) -> socket.socket:
    """A socket connected to the first of `found` that answers (as `create_connection` tries
    them, but without resolving again)."""
    failure: OSError = OSError("no address")
    for family, kind, proto, _, address in found:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            if local_address is not None:
                sock.bind((local_address, 0))
            sock.connect(address)
            for option in options:
                sock.setsockopt(*option)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as error:
            sock.close()
            failure = error
            continue
        return sock
    raise failure


class _CheckedBackend(httpcore2.SyncBackend):
    """Opens each connection to an address it resolved and checked itself, once."""

    def __init__(self, rule: Rule, *, answer_bytes: int, seconds: float) -> None:
        self._rule = rule
        self._answer_bytes = answer_bytes
        self._seconds = seconds

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.NetworkStream:
        # One request per connection: the call's deadline starts here.
        deadline = time.monotonic() + self._seconds
        found = _resolved(host, port, self._rule)
        left = deadline - time.monotonic()
        if left <= 0:
            raise httpcore2.ConnectTimeout("the call ran out of time")
        try:
            sock = _connected(
                found, left if timeout is None else min(timeout, left), local_address,
                list(socket_options or ()),
            )  # fmt: skip
        except TimeoutError as error:
            raise httpcore2.ConnectTimeout(str(error)) from error
        except OSError as error:
            raise httpcore2.ConnectError(str(error)) from error
        return _Bounded(SyncStream(sock), deadline, self._answer_bytes)


class _Undecoded(httpx2.SyncByteStream):
    """A compressed answer, never decoded: what it would grow to is unknown until it is."""

    def __init__(self, inner: httpx2.SyncByteStream, encoding: str) -> None:
        self._inner = inner
        self._encoding = encoding

    def __iter__(self) -> Iterator[bytes]:
        raise AnswerRefused(f"the answer is compressed ({self._encoding}); none was asked for")

    def close(self) -> None:
        self._inner.close()


@functools.cache
def _tls() -> ssl.SSLContext:
    # The CA settings of the environment (SSL_CERT_FILE) still count: they are the
    # operator's trust, not a route.
    return httpx2.create_ssl_context()


class _Transport(httpx2.HTTPTransport):
    """httpx's transport on a pool that connects only through the checked backend, with no
    connection kept between requests (each request is resolved and checked afresh)."""

    def __init__(self, rule: Rule, backend: _CheckedBackend) -> None:
        super().__init__(verify=_tls(), trust_env=False)
        self._rule = rule
        self._pool = httpcore2.ConnectionPool(
            ssl_context=_tls(), max_keepalive_connections=0, network_backend=backend
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        refusal = _form_refusal(url.scheme, url.host, bool(url.userinfo), self._rule)
        if refusal is not None:
            raise OutboundRefused(refusal)
        response = super().handle_request(request)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in {"", "identity"} and isinstance(response.stream, httpx2.SyncByteStream):
            response.stream = _Undecoded(response.stream, encoding)
        return response


def outbound_client(rule: Rule, *, answer_bytes: int, seconds: float) -> httpx2.Client:
    """A client that calls only what `rule` allows (OutboundRefused otherwise), follows no
    redirect (a 3xx is the answer), ignores proxies of the environment, asks for answers
    uncompressed, reads at most `answer_bytes` of an answer (AnswerRefused beyond) and ends a
    call after `seconds` in all (a timeout, as when a read waits longer than that)."""
    backend = _CheckedBackend(rule, answer_bytes=answer_bytes, seconds=seconds)
    return httpx2.Client(
        transport=_Transport(rule, backend),
        timeout=seconds,
        follow_redirects=False,
        trust_env=False,
        headers={"Accept-Encoding": "identity"},
    )
