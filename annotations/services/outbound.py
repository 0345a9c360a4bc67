"""The platform's one rule for the addresses it calls out to (webhook receivers, machine
judges' endpoints): http(s) only, no credentials in the URL, a host that resolves, and none
of its addresses private, loopback, link-local or otherwise internal unless the caller's
setting allows them, so that nobody with an organiser's role reaches the platform's own
network through it. Checked when the address is given and again before every call (a name
may resolve elsewhere later)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

__all__ = ["outbound_refusal"]


def outbound_refusal(
    url: str, *, allow_private: bool, setting: str, credentials: str
) -> str | None:
    """Why the platform will not call `url`, or None. `setting` names the environment
    setting that allows internal addresses; `credentials` says why none may be in the URL."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"}:
        return "Give an http:// or https:// URL."
    if not parts.hostname:
        return "The URL names no host."
    if parts.username or parts.password:
        return f"Give the URL without a user name or password ({credentials})."
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError, UnicodeError):
        return f"The host {parts.hostname!r} does not resolve."
    if allow_private:
        return None
    for *_, address in found:
        ip = ipaddress.ip_address(str(address[0]).split("%")[0])
        if not ip.is_global or ip.is_multicast:
            return (
                f"{parts.hostname} resolves to {ip}, a private, loopback or internal address; "
                f"set {setting}=true to allow such targets."
            )
    return None
