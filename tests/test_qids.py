"""A qid never starts with '#': TREC files read such a line as a comment, so it is refused."""

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from annotations import services
from annotations.formats import trec
from annotations.models import Membership, Query
from tests.factories import CollectionFactory, UserFactory


def test_the_rule_names_the_comment_and_lets_a_hash_inside_pass() -> None:
    assert "comment" in (trec.qid_problem("#301") or "")
    assert trec.qid_problem("301#a") is None
    assert trec.id_problem("#301") is None  # a docno or run name may start with '#'


def test_topic_files_refuse_it_with_file_line_and_field(tmp_path: Path) -> None:
    jsonl = tmp_path / "topics.jsonl"
    jsonl.write_text('{"qid": "301", "title": "a"}\n{"qid": "#302", "title": "b"}\n')
    with pytest.raises(trec.TrecFormatError) as raised:
        list(trec.read_topics(str(jsonl)))
    assert (raised.value.line, raised.value.field) == (2, "qid")
    sgml = tmp_path / "topics.sgml"
    sgml.write_text("<top>\n<num> Number: #303\n<title> c\n</top>\n")
    with pytest.raises(trec.TrecFormatError, match="comment"):
        list(trec.read_topics(str(sgml)))


@pytest.mark.django_db
def test_the_service_refuses_it_and_stores_nothing() -> None:
    collection = CollectionFactory(slug="hash")
    with pytest.raises(ValidationError, match="comment"):
        services.queries_store(
            collection=collection,
            queries=[services.QueryFields("q1", "fine"), services.QueryFields("#q2", "not")],
        )
    assert not Query.objects.filter(collection=collection).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("queries/", [{"qid": "#q1", "title": "t"}]),
        ("judgements/", {"qid": "#q1", "docno": "d1", "grade": 1}),
    ],
)
def test_the_api_refuses_it_at_the_door(path: str, body: Any) -> None:
    collection = CollectionFactory(slug=f"hash-{path.strip('/')}")
    organiser = UserFactory(username=f"org-{path.strip('/')}")
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    client = APIClient()
    client.force_authenticate(organiser)
    response = client.post(f"/api/v1/collections/{collection.slug}/{path}", body, format="json")
    assert response.status_code == 400, response.content
    assert "comment" in str(response.json()["error"])
    assert not Query.objects.filter(collection=collection).exists()
