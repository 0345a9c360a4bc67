"""Reads only read: every page and every GET endpoint of a populated collection, asked by an
organiser, an assessor and a staff member, writes nothing to the database.

The routes are taken from the URL resolver, their path parameters filled from real objects,
and the API's GET operations checked against the OpenAPI schema, so that a page or endpoint
added later is crawled too. Logging in writes the session and the last login: that happens
before the crawl starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern
from django.utils import timezone

from annotations import services
from annotations.converters import id_to_segment
from annotations.models import (
    Collection,
    FetchFailure,
    ImportJob,
    JudgeRun,
    Membership,
    Pool,
    Query,
    Run,
)
from annotations.services import jobs, versions, webhooks
from annotations.services.systems import system_create
from tests.factories import UserFactory, machine_judge

# Statements that change the database (a WITH may lead into one).
WRITE = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b"
    r"|^\s*WITH\b.*\b(INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\S+\s+SET)\b",
    re.IGNORECASE | re.DOTALL,
)
# The stock admin is Django's own; the catch-all under /api/ is a regex route (its 404 is
# crawled through an unknown path below).
SKIPPED_PREFIXES = ("admin/",)
PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def routes(patterns: list[Any] | None = None, prefix: str = "") -> Iterator[str]:
    """Every route the resolver knows, as written (``collections/<slug:slug>/``)."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if not isinstance(entry.pattern, RoutePattern):
            continue
        route = prefix + str(entry.pattern)
        if route.startswith(SKIPPED_PREFIXES):
            continue
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield route


@pytest.fixture
def populated(transactional_db: None, tmp_path: Path, settings: Any) -> dict[str, Any]:
    """The demo collection with every kind of object a page shows: runs, judgements, an
    impact-ordered pool with assignments, a tagged qrels version, a machine judge and one
    of its runs, an import job, a webhook; then a judgement whose recomputation a worker
    has not run yet, so that the scores are pending and the stored leaderboard is behind."""
    from django.core.management import call_command

    settings.NDCG_DEMO_ACCOUNTS_FILE = str(tmp_path / "demo-accounts.txt")
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    collection = Collection.objects.get(slug="demo")
    # Kept measures: the pages and answers that show them are read too.
    services.collection_update(collection=collection, measures=["AP", "P@5", "NumRet"])
    collection.refresh_from_db()
    organiser = UserFactory(username="olga")
    services.membership_grant(collection=collection, user=organiser, role=Membership.ORGANISER)
    staff = UserFactory(username="sam")
    staff.is_staff = True
    staff.save()
    assessor = Membership.objects.get(collection=collection, role=Membership.ASSESSOR).user
    pool, _ = services.pool_build(
        collection=collection,
        name="hot",
        depth=5,
        order=Pool.IMPACT,
        budget=10,
        created_by=organiser,
    )
    [(assignment, _)] = services.assignment_create(
        pool=pool, assessors=[assessor], created_by=organiser
    )
    version = versions.qrels_version_tag(collection=collection, name="v1", created_by=organiser)
    judge = machine_judge(collection)
    judge_run = JudgeRun.objects.create(
        judge=judge, pool=pool, state=JudgeRun.DONE, created_by=organiser
    )
    qrels = tmp_path / "more.qrels"
    qrels.write_text("q1 0 d2 3\n")
    from django.core.files.uploadedfile import SimpleUploadedFile

    job = jobs.import_job_create(
        collection=collection,
        kind=ImportJob.QRELS,
        upload=SimpleUploadedFile("more.qrels", qrels.read_bytes()),
        created_by=organiser,
    )
    system = system_create(
        collection=collection, name="engine", created_by=organiser,
        url_template="http://127.0.0.1:9/docs/_search?q={{title}}",
    )  # fmt: skip
    fetch = ImportJob.objects.create(
        collection=collection, kind=ImportJob.FETCH, system=system, file_name=system.name,
        size=0, run_name="engine-run", lines_total=3, lines_done=1, state=ImportJob.FAILED,
        error="Cancelled after 1 of 3 queries; no run was stored.", created_by=organiser,
    )  # fmt: skip
    FetchFailure.objects.create(job=fetch, qid="q1", status=503, message="HTTP 503")
    # Two runs of its history, so that its history and what changed have values to show.
    Run.objects.filter(collection=collection, name__in=["random", "bm25"]).update(system=system)
    hook = webhooks.subscription_create(
        collection=collection, url="http://127.0.0.1:9/hook", created_by=organiser
    )
    # A judgement stored, its recomputation not run yet (a worker's): scores pending.
    Query.objects.filter(collection=collection, qid="q1").update(
        judgements_version=Query.objects.get(collection=collection, qid="q1").judgements_version + 1
    )
    Collection.objects.filter(pk=collection.pk).update(updated=timezone.now())
    membership = Membership.objects.get(collection=collection, user=assessor)
    return {
        "users": {"organiser": organiser, "assessor": assessor, "staff": staff},
        "values": {
            "slug": collection.slug,
            "qid": "q1",
            "docno": "d1",
            "run": "example",
            "version": version.name,
            "judge": judge.name,
            "assignment_id": assignment.id,
            "position": 1,
            "job_id": job.id,
            "system": system.name,
            "fetch_id": fetch.id,
            "membership_id": membership.id,
            "pool_id": pool.id,
            "run_id": judge_run.id,
            "webhook_id": hook.id,
            "kind": "qrels",
            "uidb64": "MQ",
            "token": "not-a-token",
        },
    }


def url_of(route: str, values: dict[str, Any]) -> str:
    """The route with its parameters filled from real objects."""

    def fill(match: re.Match[str]) -> str:
        converter, name = match.group("converter"), match.group("name")
        if name == "name":
            before = route[: match.start()]
            key = (
                "version"
                if before.endswith("versions/")
                else "judge"
                if before.endswith("judges/")
                else "system"
                if before.endswith("systems/")
                else "run"
            )
            value = values[key]
        elif name == "job_id" and "systems/" in route:
            value = values["fetch_id"]
        else:
            value = values[name]
        if converter == "id":
            return quote(id_to_segment(str(value)), safe="")
        return str(value)

    return "/" + PARAMETER.sub(fill, route)


def extras(slug: str) -> list[str]:
    """Reads that take their choice from the query string."""
    c, api = f"/collections/{slug}", f"/api/v1/collections/{slug}"
    return [
        f"{c}/leaderboard/?k=5",
        f"{c}/leaderboard/?k=10&page=all",
        f"{c}/leaderboard/state/?k=5",
        f"{c}/leaderboard/report/?as=csv",
        f"{c}/leaderboard/report/?as=latex",
        f"{c}/compare/?a=example&b=bm25",
        f"{c}/leaderboard/?k=5&measure=AP",
        f"{c}/leaderboard/?k=5&measure=NumRet&side=all",
        f"{c}/leaderboard/?k=5&side=all",
        f"{c}/leaderboard/?k=5&measure=ERR@20",
        f"{c}/leaderboard/state/?k=5&measure=AP",
        f"{c}/leaderboard/significance/?k=5&measure=AP",
        f"{c}/leaderboard/significance/?k=5&measure=NumRet",
        f"{c}/versions/v1/?k=5&measure=P@5",
        f"{c}/versions/?a=v1&b=v1&measure=AP",
        f"{api}/versions/v1/leaderboard/?k=5&measure=AP",
        f"{api}/versions-diff/?a=v1&b=v1&measure=P@5",
        f"{api}/leaderboard/?k=5&measure=AP",
        f"{c}/compare/?a=example&b=bm25&measure=P@5",
        f"{api}/compare/?a=example&b=bm25&measure=AP",
        f"{c}/exports/scores/?scores-format=csv",
        f"{c}/import/?kind=qrels",
        f"{c}/systems/engine/history/?measure=ndcg&k=5",
        f"{c}/systems/engine/changes/?run=bm25&previous=random&k=5",
        f"{api}/leaderboard/?k=5",
        f"{api}/leaderboard/report/?as=csv",
        f"{api}/compare/?a=example&b=bm25",
        f"{api}/systems/engine/history/?k=5",
        f"{api}/systems/engine/changes/?run=bm25&previous=random",
        f"{api}/as-of/qrels/?at=2100-01-01T00:00:00Z",
        "/api/v1/no-such-endpoint/",
        "/api/schema/?format=json",
    ]


@pytest.fixture
def writes_recorded() -> Iterator[Callable[[str], list[str]]]:
    """Records every statement that changes the database, under the URL being read."""
    recorded: list[str] = []
    asking = [""]

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if WRITE.search(sql):
            recorded.append(f"{asking[0]}: {sql[:160]}")
        return execute(sql, params, many, context)

    def asked(url: str) -> list[str]:
        asking[0] = url
        return recorded

    with connection.execute_wrapper(wrapper):
        yield asked


def test_no_page_or_get_endpoint_writes_to_the_database(
    populated: dict[str, Any], writes_recorded: Callable[[str], list[str]]
) -> None:
    values = populated["values"]
    crawled = [url_of(route, values) for route in routes()]
    crawled += extras(values["slug"])
    clients = {}
    for role, user in populated["users"].items():
        clients[role] = Client()
        clients[role].force_login(user)  # the session is written here, before the crawl
    writes_recorded("")[:] = []  # forget the logins' own writes
    failures: list[str] = []
    for role, client in clients.items():
        for url in crawled:
            writes_recorded(f"{role} GET {url}")
            status = client.get(url).status_code
            if status >= 500:
                failures.append(f"{role} GET {url}: {status}")
    writes = writes_recorded("")
    assert not failures, "\n".join(failures)
    assert not writes, "reads wrote to the database:\n" + "\n".join(writes)
    # The stored leaderboard was served, marked stale, while its scores are pending.
    board = clients["organiser"].get(f"/api/v1/collections/{values['slug']}/leaderboard/")
    assert board.status_code == 200
    assert board.json()["stale"] is True
    assert board.json()["pending"] is True


def test_the_crawl_covers_every_get_operation_of_the_api(populated: dict[str, Any]) -> None:
    """Every GET in the OpenAPI schema is a route the crawl asks for."""
    client = Client()
    client.force_login(populated["users"]["staff"])
    schema = client.get("/api/schema/?format=json").json()
    operations = {
        re.sub(r"\{[^}]+\}", "{}", path) for path, item in schema["paths"].items() if "get" in item
    }
    crawled = {PARAMETER.sub("{}", "/" + route) for route in routes()}
    assert operations, "the schema lists no GET operation"
    assert operations <= crawled, sorted(operations - crawled)
