"""A client generated from the served schema (openapi-python-client) imports cleanly and
performs the README's API walkthrough against a live server."""

from __future__ import annotations

import importlib
import io
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from annotations.converters import id_to_segment
from annotations.models import Collection, Judgement, Membership
from tests.factories import UserFactory

PACKAGE = "ndcg_client"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory, django_db_blocker: Any) -> ModuleType:
    """The package generated from GET /api/schema/, once per session (a subprocess)."""
    with django_db_blocker.unblock():
        response = Client().get("/api/schema/?format=json")
    assert response.status_code == 200
    root = tmp_path_factory.mktemp("client")
    schema = root / "schema.json"
    schema.write_bytes(response.content)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(schema),
            "--output-path",
            str(root / PACKAGE),
            "--meta",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(root)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # The generator reports what it could not express as warnings; there must be none.
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    sys.path.insert(0, str(root))
    return importlib.import_module(PACKAGE)


def test_every_generated_module_imports(generated: ModuleType) -> None:
    names = [info.name for info in pkgutil.walk_packages(generated.__path__, prefix=f"{PACKAGE}.")]
    operations = [name for name in names if name.startswith(f"{PACKAGE}.api.collections.")]
    assert len(operations) >= 25, names
    for name in names:
        importlib.import_module(name)


def _op(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.api.collections.{name}")


def _ok(response: Any, status: int) -> Any:
    assert response.status_code == status, (response.status_code, response.content)
    return response.parsed


RUN_BM25 = b"q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\nq2 Q0 d3 1 1.0 bm25\n"
TOPICS = b"q1\tcheap flights\nq2\tgreen tea\n"
DOCUMENTS = b'{"docno": "d1", "title": "Flights", "text": "cheap flights to Oslo"}\n'
QRELS = b"q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"


@pytest.mark.django_db(transaction=True)
def test_the_readme_walkthrough_with_the_generated_client(
    generated: ModuleType, live_server: Any
) -> None:
    models = importlib.import_module(f"{PACKAGE}.models")
    types = importlib.import_module(f"{PACKAGE}.types")
    staff = UserFactory(username="organiser", is_staff=True)
    owner, assessor = UserFactory(username="sys"), UserFactory(username="ann")

    def client(user: Any) -> Any:
        token = Token.objects.create(user=user).key
        return generated.AuthenticatedClient(
            base_url=live_server.url, token=token, prefix="Token", raise_on_unexpected_status=True
        )

    org, sys_, ann = client(staff), client(owner), client(assessor)

    # A collection with its own cutoffs and grade scale.
    grades = [models.GradeLevel(value=v, label=f"g{v}") for v in (0, 1, 2)]
    body = models.CollectionCreate(slug="walk", cutoffs=[2, 5], grades=grades)
    created = _ok(_op("collections_create").sync_detailed(client=org, body=body), 201)
    assert created.cutoffs == [2, 5]
    assert [g.value for g in created.grades] == [0, 1, 2]
    collection = Collection.objects.get(slug="walk")
    Membership.objects.create(collection=collection, user=owner, role="owner")
    Membership.objects.create(collection=collection, user=assessor, role="assessor")

    # Queries and documents: JSON lists, and files as import_topics / import_documents read them.
    queries = [models.QueryInput(qid="q3", title="tokyo hotels")]
    summary = _ok(
        _op("collections_queries_create").sync_detailed("walk", client=org, body=queries), 201
    )
    assert summary.created == 1
    docs = [models.DocumentInput(docno="d4", title="Hotels", text="rooms in Tokyo")]
    _ok(_op("collections_documents_create").sync_detailed("walk", client=org, body=docs), 201)
    topics = models.TopicsUpload(file=types.File(payload=io.BytesIO(TOPICS), file_name="t.tsv"))
    summary = _ok(
        _op("collections_imports_topics_create").sync_detailed("walk", client=org, body=topics), 200
    )
    assert (summary.created, summary.updated) == (2, 0)
    upload = models.DocumentsUpload(
        file=types.File(payload=io.BytesIO(DOCUMENTS), file_name="docs.jsonl")
    )
    _ok(
        _op("collections_imports_documents_create").sync_detailed("walk", client=org, body=upload),
        200,
    )
    listed = _ok(_op("collections_queries_list").sync_detailed("walk", client=ann), 200)
    assert [q.qid for q in listed.results] == ["q1", "q2", "q3"]

    # A TREC run file (binary multipart), and a run as JSON results.
    run_file = types.File(payload=io.BytesIO(RUN_BM25), file_name="bm25.run")
    body = models.RunUpload(file=run_file)
    written = _ok(_op("collections_runs_create").sync_detailed("walk", client=sys_, body=body), 201)
    assert (written.run.name, written.results, written.run.owner) == ("bm25", 3, "sys")
    results = [
        models.RunResult(qid="q1", docno="d2"),
        models.RunResult(qid="q1", docno="d1"),
        models.RunResult(qid="q2", docno="d4"),
    ]
    body = models.RunJson(results=results, description="hand-made")
    # An id in a path is one segment: "/" is written "~2F" (the README's rule).
    segment = id_to_segment("manual/v1")
    written = _ok(
        _op("collections_runs_results_update").sync_detailed(
            "walk", segment, client=sys_, body=body
        ),
        201,
    )
    assert (written.run.name, written.results) == ("manual/v1", 3)

    # Judgements: the assessor's own, and an organiser's qrels file under the assessor's name.
    judgement = models.JudgementInput(qid="q1", docno="d1", grade=2)
    recorded = _ok(
        _op("collections_judgements_create").sync_detailed("walk", client=ann, body=judgement), 201
    )
    assert (recorded.assessor, recorded.grade, recorded.pending) == ("ann", 2, False)
    qrels = models.QrelsUpload(
        file=types.File(payload=io.BytesIO(QRELS), file_name="walk.qrels"), assessor="ann"
    )
    summary = _ok(
        _op("collections_imports_qrels_create").sync_detailed("walk", client=org, body=qrels), 200
    )
    assert (summary.created, summary.updated, summary.unchanged) == (2, 0, 1)
    assert Judgement.objects.filter(query__collection=collection, assessor=assessor).count() == 3

    # Leaderboard, a run's scores, a comparison.
    board = _ok(
        _op("collections_leaderboard_retrieve").sync_detailed("walk", client=sys_, k=2), 200
    )
    assert board.k == 2 and not board.pending
    assert {row.name for row in board.runs} == {"bm25", "manual/v1"}
    scores = _ok(
        _op("collections_runs_scores_retrieve").sync_detailed("walk", "bm25", client=sys_, k=2), 200
    )
    by_query = {row.qid: row.ndcg for row in scores.per_query}
    assert by_query == {"q1": 1.0, "q2": 1.0}
    compared = _ok(
        _op("collections_compare_retrieve").sync_detailed(
            "walk", client=sys_, a="bm25", b="manual/v1", k=2
        ),
        200,
    )
    assert compared.queries == 2 and compared.wins == 2

    # Errors parse as the documented error body.
    error = _ok(
        _op("collections_leaderboard_retrieve").sync_detailed("walk", client=sys_, k=3), 400
    )
    assert error.error.status == 400 and "k" in error.error.fields.additional_properties
