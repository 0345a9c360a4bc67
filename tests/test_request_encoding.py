"""Bytes that are not UTF-8 in a query string or a form are refused, never stored mangled."""

from __future__ import annotations

from django.test import Client

from annotations import services
from annotations.models import Collection, Judgement
from tests.factories import UserFactory


def test_a_grading_note_that_is_not_utf8_is_refused_and_nothing_is_saved(
    trial: Collection,
) -> None:
    from django.contrib.auth import get_user_model

    alice = get_user_model().objects.get(username="alice")
    pool, _ = services.pool_build(
        collection=trial, name="main", depth=2, queries=[trial.queries.get(qid="q1")]
    )
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[alice])
    client = Client()
    client.force_login(alice)
    url = f"/judging/assignments/{assignment.id}/pairs/1/"
    refused = client.post(
        url, b"grade=2&note=caf%E9", content_type="application/x-www-form-urlencoded"
    )
    assert refused.status_code == 400 and b"not valid UTF-8" in refused.content
    assert not Judgement.objects.exists()
    saved = client.post(
        url, b"grade=2&note=caf%C3%A9", content_type="application/x-www-form-urlencoded"
    )
    assert saved.status_code == 302 and Judgement.objects.get().note == "café"


def test_a_query_string_that_is_not_utf8_is_an_api_400_in_the_error_shape(db: None) -> None:
    client = Client()
    client.force_login(UserFactory(is_staff=True))
    response = client.get("/api/v1/collections/?search=%FF")
    assert response.status_code == 400
    assert response.json()["error"]["detail"] == "The request's query string is not valid UTF-8."
    services.collection_create(slug="utf", cutoffs=[5])
    assert client.get("/api/v1/collections/utf/judgements/?qid=%C3%A9").status_code == 200
