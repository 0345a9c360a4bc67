"""Asking a search system's endpoint for one query's hits, through the outbound client, with
retries on 429, 5xx, timeouts and dropped connections (Retry-After honoured)."""

from __future__ import annotations

import email.utils
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx2
from django.conf import settings
from django.core.exceptions import ValidationError

from annotations.formats import search_answers
from annotations.models import SearchSystem
from annotations.models.systems import SECRET_NAME
from annotations.services.judge_client import Pace
from annotations.services.outbound import (
    AnswerRefused,
    OutboundRefused,
    Rule,
    outbound_client,
    outbound_refusal,
)

__all__ = ["Pace", "QueryText", "SearchFailed", "ask", "client_for", "endpoint_refusal"]

MAX_WAIT_SECONDS = 60.0
# A thousand hits with their titles and snippets fit many times over.
ANSWER_BYTES = 16 * 2**20
# A header's name as HTTP writes it (RFC 9110's token).
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
_HEADER_VALUE_BAD = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class QueryText:
    qid: str
    title: str
    description: str


class SearchFailed(Exception):
    """No hits for a query: a message naming status codes, error classes or the answer's
    path that failed (never what the engine sent), and the HTTP status if there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _rule() -> Rule:
    return Rule(
        allow_private=settings.NDCG_SEARCH_ALLOW_PRIVATE,
        setting="NDCG_SEARCH_ALLOW_PRIVATE",
        credentials="secrets go in headers, from the server's environment",
    )


def _values(system: SearchSystem, query: QueryText) -> dict[str, object]:
    return {
        "qid": query.qid,
        "title": query.title,
        "description": query.description,
        "depth": system.depth,
    }


def endpoint_refusal(url_template: str) -> str | None:
    """Why the platform will not call a system at this URL template, or None: the rule of
    every outbound call (`outbound.outbound_refusal`) on its host; an engine on this machine
    or a private network needs NDCG_SEARCH_ALLOW_PRIVATE=true."""
    problem = search_answers.url_problem(url_template)
    if problem is not None:
        return problem
    blank = {name: "x" for name in search_answers.PLACEHOLDERS}
    return outbound_refusal(search_answers.render_url(url_template, blank), _rule())


def headers_problem(headers: object) -> str | None:
    """Why `headers` cannot be a system's headers, or None: a list of {"name", "value",
    "secret"} whose secrets are variables set aside for search systems."""
    if not isinstance(headers, list):
        return 'Give a list of headers: [{"name": "...", "value": "..."}].'
    for index, header in enumerate(headers):
        if not isinstance(header, dict) or set(header) - {"name", "value", "secret"}:
            return f'Header {index + 1}: give "name", "value" and, for a secret, "secret".'
        name, value = header.get("name"), header.get("value", "")
        secret = header.get("secret", "")
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            return f"Header {index + 1}: not a header name."
        if not isinstance(value, str) or _HEADER_VALUE_BAD.search(value):
            return f"Header {name}: its value must be text without control characters."
        if not isinstance(secret, str):
            return f"Header {name}: name the secret's variable as text."
        if secret:
            try:
                SECRET_NAME(secret)
            except ValidationError as error:
                return f"Header {name}: {error.messages[0]}"
    return None


def request_headers(system: SearchSystem) -> dict[str, str]:
    """The headers sent, each secret read from its variable (never stored, shown or logged);
    ValidationError naming a variable that is not set aside or not set."""
    problem = headers_problem(system.headers)
    if problem is not None:
        raise ValidationError({"headers": problem})
    sent = {"Accept": "application/json"}
    for header in system.headers:
        value = header.get("value", "")
        secret = header.get("secret", "")
        if secret:
            found = os.environ.get(secret, "")
            if not found:
                raise ValidationError(
                    {"headers": f"{secret} is not set on the server: ask the operator to set it."}
                )
            value += found
        sent[header["name"]] = value
    if system.method == SearchSystem.POST and system.body_template.strip():
        sent["Content-Type"] = "application/json"
    return sent


def call_seconds(system: SearchSystem) -> float:
    """One whole call, however slowly its answer trickles: twice the system's timeout."""
    return 2.0 * system.timeout_seconds


def client_for(system: SearchSystem, *, seconds: float | None = None) -> httpx2.Client:
    """The outbound client one fetch (or one try) shares across its threads."""
    whole = call_seconds(system)
    return outbound_client(
        _rule(),
        answer_bytes=ANSWER_BYTES,
        seconds=whole if seconds is None else min(seconds, whole),
    )


def _retry_after(response: httpx2.Response) -> float | None:
    raw = response.headers.get("retry-after", "").strip()
    if not raw:
        return None
    try:
        return min(max(float(raw), 0.0), MAX_WAIT_SECONDS)
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return min(max((moment - datetime.now(UTC)).total_seconds(), 0.0), MAX_WAIT_SECONDS)


def _request(
    http: httpx2.Client, system: SearchSystem, query: QueryText, headers: dict[str, str]
) -> httpx2.Response:
    values = _values(system, query)
    url = search_answers.render_url(system.url_template, values)
    body = None
    if system.method == SearchSystem.POST and system.body_template.strip():
        body = search_answers.render_body(system.body_template, values)
    return http.request(
        system.method, url, headers=headers, content=body, timeout=float(system.timeout_seconds)
    )


def ask(
    system: SearchSystem,
    query: QueryText,
    *,
    http: httpx2.Client,
    headers: dict[str, str],
    pace: Pace | None = None,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int | None = None,
) -> list[search_answers.Hit]:
    """The query's hits as the system's mapping reads them; SearchFailed when the engine
    refuses the request (a status other than 2xx, 429 and 5xx, a redirect), its answer
    cannot be read, or it still fails after `attempts` tries (the system's own by default)."""
    attempts = attempts or system.attempts
    last, status = "", None
    for attempt in range(attempts):
        if pace is not None:
            pace.wait(sleep)
        wait: float | None = None
        try:
            response = _request(http, system, query, headers)
        except OutboundRefused as refusal:
            raise SearchFailed(f"the endpoint is not called: {refusal}") from None
        except AnswerRefused as refusal:
            raise SearchFailed(f"the answer is not read: {refusal}") from None
        except httpx2.TimeoutException:
            last, status = f"no answer within {system.timeout_seconds} s", None
        except httpx2.TransportError as error:
            last, status = type(error).__name__, None
        else:
            code = response.status_code
            if 300 <= code < 400:
                raise SearchFailed(
                    f"the engine answered HTTP {code}, a redirect, which is not followed", code
                )
            if code == 429 or code >= 500:
                last, status = f"HTTP {code}", code
                wait = _retry_after(response)
            elif code >= 400 or code < 200:
                raise SearchFailed(f"the engine refused the request: HTTP {code}", code)
            else:
                try:
                    return search_answers.parse_answer(
                        response.content, system.mapping, system.depth
                    )
                except search_answers.AnswerProblem as problem:
                    where = f" at {problem.path}" if problem.path else ""
                    raise SearchFailed(
                        f"the answer could not be read{where}: {problem.message}", code
                    ) from None
        if attempt + 1 < attempts:
            backoff = min(MAX_WAIT_SECONDS, 2.0**attempt) * (0.5 + random.random() / 2)
            sleep(backoff if wait is None else wait)  # Retry-After, as the engine asks
    raise SearchFailed(f"the engine kept failing ({last}) after {attempts} attempts", status)
