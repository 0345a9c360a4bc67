"""Search systems: describe one (its endpoint, request and answer mapping), change it, and try
it on a few of the collection's queries without storing anything."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotations.formats import search_answers
from annotations.models import Collection, Query, SearchSystem
from annotations.services.search_client import (
    QueryText,
    SearchFailed,
    ask,
    client_for,
    endpoint_refusal,
    headers_problem,
    request_headers,
)

TRY_QUERIES = 3
# A try answers while the organiser waits, in a web request: one attempt per query and at
# most TRY_SECONDS for all of them, far under the server's request timeout.
TRY_SECONDS = 20.0
# What a try shows of each query's hits (it says how many more there were).
TRY_HITS_SHOWN = 20

EDITABLE = (
    "method", "url_template", "headers", "body_template", "depth", "answer_format",
    "hits_path", "id_path", "score_path", "title_path", "snippet_path", "url_path",
    "timeout_seconds", "attempts", "concurrency", "requests_per_minute", "fetch_every_hours",
)  # fmt: skip
_PATH_FIELDS = {
    "hits": "hits_path", "id": "id_path", "score": "score_path",
    "title": "title_path", "snippet": "snippet_path", "url": "url_path",
}  # fmt: skip


def _checked(system: SearchSystem) -> None:
    system.full_clean(exclude=["collection", "created_by"], validate_unique=False)
    problems: dict[str, str] = {}
    refusal = endpoint_refusal(system.url_template)
    if refusal is not None:
        problems["url_template"] = refusal
    body = search_answers.body_problem(system.body_template)
    if body is not None:
        problems["body_template"] = body
    elif system.body_template.strip() and system.method != SearchSystem.POST:
        problems["body_template"] = "A body is sent with POST only: choose POST, or no body."
    headers = headers_problem(system.headers)
    if headers is not None:
        problems["headers"] = headers
    for name, problem in search_answers.mapping_problems(system.mapping).items():
        problems[_PATH_FIELDS[name]] = problem
    if problems:
        raise ValidationError(problems)


def system_create(
    *, collection: Collection, name: str, created_by: User | None, **fields: object
) -> SearchSystem:
    """Describe a search system of the collection (checked: URL, body, headers, mapping)."""
    system = SearchSystem(collection=collection, name=name, created_by=created_by, **fields)
    _checked(system)
    try:
        with transaction.atomic():
            system.save()
    except IntegrityError:
        raise ValidationError({"name": "A system of this name exists in the collection."}) from None
    return system


def system_update(*, system: SearchSystem, **changes: object) -> SearchSystem:
    """Change a system's description (its name stays: runs and jobs are named by it)."""
    for name, value in changes.items():
        if name not in EDITABLE:
            raise ValidationError({name: "This field cannot be changed."})
        setattr(system, name, value)
    _checked(system)
    system.save()
    return system


@dataclass
class Tried:
    """One query of a try: the hits as they would be stored (at most TRY_HITS_SHOWN), how
    many there were, or why there were none."""

    qid: str
    title: str
    hits: list[search_answers.Hit] = field(default_factory=list)
    total: int = 0
    failure: str = ""
    status: int | None = None
    seconds: float = 0.0

    @property
    def more(self) -> int:
        return self.total - len(self.hits)


def query_texts(collection: Collection, limit: int | None = None) -> list[QueryText]:
    """The collection's queries as a system is asked them, by qid."""
    rows = Query.objects.filter(collection=collection).order_by("qid")
    picked = rows.values_list("qid", "title", "description")
    return [QueryText(*row) for row in (picked[:limit] if limit is not None else picked)]


def system_try(*, system: SearchSystem) -> list[Tried]:
    """Ask the system the collection's first TRY_QUERIES queries, once each, within
    TRY_SECONDS; nothing is stored. ValidationError when the collection has no query or a
    secret's variable is not set."""
    queries = query_texts(system.collection, TRY_QUERIES)
    if not queries:
        raise ValidationError({"queries": "The collection has no queries to ask: import topics."})
    headers = request_headers(system)
    tried: list[Tried] = []
    deadline = time.monotonic() + TRY_SECONDS
    with client_for(system, seconds=TRY_SECONDS) as http:
        for query in queries:
            item = Tried(qid=query.qid, title=query.title)
            tried.append(item)
            if time.monotonic() >= deadline:
                item.failure = "not asked: the try ran out of time"
                continue
            started = time.monotonic()
            try:
                hits = ask(system, query, http=http, headers=headers, attempts=1)
            except SearchFailed as failed:
                item.failure, item.status = str(failed), failed.status
            else:
                item.hits, item.total = hits[:TRY_HITS_SHOWN], len(hits)
            item.seconds = time.monotonic() - started
    return tried
