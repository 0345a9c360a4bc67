"""The organisers' queries page and document page."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.test import Client

from annotations import services
from annotations.models import Collection, Query
from annotations.selectors.query_scores import query_overview

Capture = Callable[..., AbstractContextManager[Any]]


def _client(username: str) -> Client:
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


@pytest.fixture
def judged(trial: Collection, django_capture_on_commit_callbacks: Capture) -> Collection:
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    with django_capture_on_commit_callbacks(execute=True):
        for assessor, grade, note in (("alice", 3, "on topic"), ("bob", 1, "")):
            services.judgement_record(
                query=trial.queries.get(qid="q1"),
                document=trial.documents.get(docno="d1"),
                assessor=users.get(username=assessor),
                grade=grade,
                source="form",
                note=note,
            )
    return trial


def test_every_query_shows_judged_counts_pool_status_and_its_mean_score(
    judged: Collection,
) -> None:
    from django.contrib.auth import get_user_model

    services.pool_build(
        collection=judged,
        name="main",
        depth=2,
        created_by=get_user_model().objects.get(username="olga"),
    )
    html = _client("olga").get("/collections/trial/queries/?k=5").content.decode()
    q1 = html[html.index('data-qid="q1"') : html.index("</tr>", html.index('data-qid="q1"'))]
    q2 = html[html.index('data-qid="q2"') : html.index("</tr>", html.index('data-qid="q2"'))]
    assert '<td class="num">2</td>' in q1 and '<td class="num">1</td>' in q1  # 2 grades, 1 doc
    # the pool takes q2's unjudged top 2 (q1's d1 is judged: left out of new pools)
    assert "not pooled" not in q2 and "0 of 3 pooled judged" in q2
    overview = query_overview(query=judged.queries.get(qid="q1"), k=5)
    mean = sum(row.ndcg or 0.0 for row in overview.runs) / len(overview.runs)
    assert f'<td class="num mean">{mean:.4f}</td>' in q1
    assert 'title="no judgement yet: not evaluated">\u2013' in q2


def test_the_search_box_filters_by_qid_or_title_on_the_server(judged: Collection) -> None:
    client = _client("olga")
    html = client.get("/collections/trial/queries/?q=flood").content.decode()
    assert 'data-qid="q2"' in html and 'data-qid="q1"' not in html
    html = client.get("/collections/trial/queries/?q=Q1").content.decode()
    assert 'data-qid="q1"' in html and 'data-qid="q2"' not in html
    html = client.get("/collections/trial/queries/?q=nothing-like-it").content.decode()
    assert "No query matches" in html


def test_the_queries_page_is_paginated(judged: Collection) -> None:
    Query.objects.bulk_create(
        Query(collection=judged, qid=f"x{n:04d}", title="") for n in range(250)
    )
    client = _client("olga")
    first = client.get("/collections/trial/queries/").content.decode()
    assert first.count("<tr data-qid=") == 100 and "page 1 of 3" in first
    last = client.get("/collections/trial/queries/?page=3").content.decode()
    assert last.count("<tr data-qid=") == 52
    assert client.get("/collections/trial/queries/?page=banana").status_code == 200


def test_the_document_page_shows_the_text_and_who_judged_it(judged: Collection) -> None:
    html = _client("olga").get("/collections/trial/documents/d1/").content.decode()
    assert "Solar energy can be stored in batteries." in html
    table = html[html.index('id="document-judgements"') :]
    assert "alice" in table and "bob" in table and "on topic" in table
    assert 'class="badge grade grade-3"' in table
    query = _client("olga").get("/collections/trial/queries/q1/").content.decode()
    assert 'href="/collections/trial/documents/d1/"' in query
    assert _client("olga").get("/collections/trial/documents/nope/").status_code == 404


def test_a_document_text_is_escaped(judged: Collection) -> None:
    html = _client("olga").get("/collections/trial/documents/d3/").content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html


def test_queries_and_documents_are_the_organisers(judged: Collection) -> None:
    for path in ("/collections/trial/queries/", "/collections/trial/documents/d1/"):
        assert _client("alice").get(path).status_code == 404
        assert _client("eve").get(path).status_code == 404
        assert Client().get(path).status_code == 302


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_a_query_mean_is_over_the_runs_with_stored_means(judged: Collection, missing: str) -> None:
    """A run still to be scored neither adds a value nor counts, as on the leaderboard."""
    from annotations.models import Run, RunScore
    from annotations.selectors.query_lists import query_rows

    Collection.objects.filter(id=judged.id).update(missing_queries=missing)
    judged.refresh_from_db()
    q1 = judged.queries.get(qid="q1")
    dense = Run.objects.get(collection=judged, name="dense")
    RunScore.objects.filter(run=dense).delete()  # dense is pending its own scoring
    Run.objects.filter(id=dense.id).update(scored_at=None)
    (row,) = query_rows(collection=judged, queries=[q1], k=5)
    bm25 = next(run for run in query_overview(query=q1, k=5).runs if run.run.name == "bm25")
    assert row.mean_ndcg == bm25.ndcg


def test_the_rows_read_once_per_state_follow_every_judgement_pool_and_title(
    judged: Collection, django_capture_on_commit_callbacks: Capture
) -> None:
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    olga = _client("olga")

    def q1_row() -> str:
        html = olga.get("/collections/trial/queries/?k=5").content.decode()
        start = html.index('data-qid="q1"')
        return html[start : html.index("</tr>", start)]

    assert '<td class="num">2</td>' in q1_row()  # two grades
    assert "not pooled" in q1_row()
    with django_capture_on_commit_callbacks(execute=True):
        services.judgement_record(
            query=judged.queries.get(qid="q1"),
            document=judged.documents.get(docno="d2"),
            assessor=users.get(username="alice"),
            grade=2,
            source="form",
        )
    assert '<td class="num">3</td>' in q1_row()  # the new grade shows at once
    services.pool_build(
        collection=judged, name="main", depth=2, created_by=users.get(username="olga")
    )
    assert "not pooled" not in q1_row() and "pooled judged" in q1_row()
    Query.objects.filter(collection=judged, qid="q1").update(title="A new title")
    assert "A new title" in q1_row()
