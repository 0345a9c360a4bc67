"""Writes a client can retry safely: the ``Idempotency-Key`` header on API writes.

A write (POST, PUT, PATCH, DELETE) sent by a logged-in caller with an ``Idempotency-Key``
runs in one transaction with the record of its answer: if the write commits, its answer is
stored with it; if it does not, nothing is. A retry with the same key and the same request
(method, path, query string and body) answers the stored status and body again without a
second effect (header ``Idempotent-Replayed: true``); the same key with a different request
answers 422. Only successful answers are stored: an error changed nothing, so a retry runs
again. Records are kept for KEEP_HOURS, per caller (two callers' keys never meet).

A retry that arrives while the first request is still running waits for it (the key's row is
locked by its transaction) and then replays its answer.
"""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from typing import Any, cast

from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import connection
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils import timezone
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request

from annotations.models import IdempotentResponse

HEADER = "Idempotency-Key"
FORM_FIELD = "idempotency_key"  # the grading form's hidden field, one key per page shown
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The answer headers a replay repeats.
KEPT_HEADERS = ("Content-Type", "Location", "Retry-After")
_KEY = re.compile(r"[\x21-\x7e]{1,255}")  # visible ASCII, as the IETF draft's examples
# A stored answer is kept this long: a client retries within minutes, or after an outage
# within the day; the IETF draft leaves the period to the server, and Stripe's is the same.
KEEP_HOURS = 24


class KeyReused(APIException):
    status_code = 422
    default_detail = (
        "This Idempotency-Key was used for a different request; use a new key for a new write."
    )
    default_code = "idempotency_key_reused"


class Replay(Exception):
    """Raised before the handler runs: answer `response` (the stored one) instead."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__("replay")
        self.response = response


def requested_key(request: Any) -> str | None:
    """The key of a write that asks for idempotency, or None (reads never do): the header,
    or on the pages' forms the hidden field FORM_FIELD."""
    if request.method not in WRITE_METHODS:
        return None
    key = request.headers.get(HEADER)
    if key is None and not isinstance(request, Request):
        key = request.POST.get(FORM_FIELD) or None
    if key is None:
        return None
    if not _KEY.fullmatch(key):
        raise ValidationError({HEADER: ["1 to 255 visible ASCII characters."]})
    return str(key)


def fingerprint(request: Request | HttpRequest) -> str:
    """SHA-256 over the method, the full path and the body (files by their content; a form's
    CSRF token and key field left out)."""
    digest = hashlib.sha256()
    digest.update(f"{request.method} {request.get_full_path()}\n".encode())
    content_type = request.content_type or ""
    if content_type.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        data = cast(QueryDict, request.data if isinstance(request, Request) else request.POST)
        for name in sorted(set(data.keys()) - {"csrfmiddlewaretoken", FORM_FIELD}):
            for value in data.getlist(name):
                digest.update(f"{name}=".encode())
                if isinstance(value, UploadedFile):
                    digest.update(f"file:{value.name}:{value.size}:".encode())
                    for chunk in value.chunks():
                        digest.update(chunk)
                    value.seek(0)
                else:
                    digest.update(str(value).encode())
                digest.update(b"\n")
    else:
        digest.update(content_type.encode() + b"\n")
        digest.update(request.body)
    return digest.hexdigest()


def _replay(record: IdempotentResponse) -> HttpResponse:
    response = HttpResponse(bytes(record.body), status=record.status)
    for name, value in record.headers.items():
        response[name] = value
    response["Idempotent-Replayed"] = "true"
    return response


def _threshold() -> Any:
    return timezone.now() - timedelta(hours=KEEP_HOURS)


def _expired(user: User | None = None) -> Any:
    records = IdempotentResponse.objects.filter(created__lt=_threshold())
    return records if user is None else records.filter(user=user)


def _fresh(record: IdempotentResponse) -> bool:
    return bool(record.created >= _threshold())


def claim(request: Request | HttpRequest, key: str) -> IdempotentResponse:
    """The key's record for this write, inserted in the write's transaction (the caller's
    atomic block); raises Replay with the stored answer, or KeyReused.

    Plain SQL, one statement in the common case (a new key): every background save of the
    grading page comes through here. A key already taken waits for the transaction that
    holds it (the unique constraint), then is replayed, refused, or (expired) replaced."""
    user = cast(User, request.user)
    given = fingerprint(request)
    now = timezone.now()
    record = _insert(user.pk, key, given, now)
    if record is None:
        existing = IdempotentResponse.objects.filter(user=user, key=key).first()
        if existing is not None and not _fresh(existing):
            existing.delete()
            existing = None
        if existing is None:
            record = _insert(user.pk, key, given, now)
            if record is None:  # a request with this key committed meanwhile
                existing = IdempotentResponse.objects.get(user=user, key=key)
        if existing is not None:
            if existing.fingerprint != given:
                raise KeyReused()
            raise Replay(_replay(existing))
    assert record is not None
    if record.pk % SWEEP_EVERY == 0:
        _sweep()
    return record


# Every SWEEP_EVERY-th key claimed also forgets up to SWEEP_ROWS expired ones (anyone's), so
# that the table stays bounded where no periodic purge runs (the embedded default) while the
# other claims, every background save of the grading page among them, spend no statement on
# it. An expired record is never replayed meanwhile (`_fresh`).
SWEEP_EVERY = 64
SWEEP_ROWS = 1000


def _sweep() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {_TABLE} WHERE id IN "
            f"(SELECT id FROM {_TABLE} WHERE created < %s LIMIT {SWEEP_ROWS})",
            [connection.ops.adapt_datetimefield_value(_threshold())],
        )


_TABLE = IdempotentResponse._meta.db_table
_FIELDS = ("id", "user_id", "key", "fingerprint", "status", "headers", "body", "created")


def _insert(user_id: int, key: str, given: str, now: Any) -> IdempotentResponse | None:
    """The new record, or None when the caller's key is taken (by a committed write, or one
    whose transaction this waited for)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_TABLE} (user_id, key, fingerprint, status, headers, body, created) "
            "VALUES (%s, %s, %s, NULL, %s, %s, %s) ON CONFLICT (user_id, key) DO NOTHING "
            "RETURNING id",
            [user_id, key, given, "{}", b"", connection.ops.adapt_datetimefield_value(now)],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    values: tuple[Any, ...] = (row[0], user_id, key, given, None, {}, b"", now)
    return IdempotentResponse.from_db(connection.alias, _FIELDS, values)


def store(record: IdempotentResponse, response: HttpResponse) -> None:
    """Keep a successful answer with its record (inside the write's transaction)."""
    render = getattr(response, "render", None)
    if callable(render) and not getattr(response, "is_rendered", True):
        render()
    record.status = response.status_code
    record.headers = {name: response[name] for name in KEPT_HEADERS if response.has_header(name)}
    record.body = bytes(response.content)
    record.save(update_fields=["status", "headers", "body"])


def purge_expired() -> int:
    """Delete the records older than KEEP_HOURS (the periodic sweep)."""
    deleted, _ = _expired().delete()
    return int(deleted)
