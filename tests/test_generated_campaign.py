"""A whole judging campaign through a client generated from the served schema at test time
(openapi-python-client): collection, topics, documents, qrels, runs, a pool assigned with
overlap, the assessors' accounts, judging with their tokens, adjudication, a version tag,
leaderboard, per-query scores, comparison and exports. Every call is the generated client's;
only the person setting a password follows the link in a browser (Django's test client)."""

from __future__ import annotations

import importlib
import io
import json
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client

from annotations.models import Adjudication, Collection, Judgement, QrelsVersion
from tests.factories import UserFactory
from tests.test_generated_client import PACKAGE, generated  # noqa: F401  (the fixture)

TOPICS = b"".join(f"q{i}\ttopic {i}\n".encode() for i in range(1, 7))
DOCUMENTS = b"".join(
    json.dumps({"docno": f"d{i}", "text": f"document {i}"}).encode() + b"\n" for i in range(1, 9)
)
QRELS = b"q1 0 d1 2\nq2 0 d2 1\n"


def _run(tag: str, shift: int) -> bytes:
    lines = [
        f"q{q} Q0 d{(q + rank + shift) % 8 + 1} {rank} {10 - rank} {tag}\n"
        for q in range(1, 7)
        for rank in range(1, 4)
    ]
    return "".join(lines).encode()


def _op(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.api.collections.{name}")


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.content[:400])
    return response.parsed


def _set_password(url: str, password: str) -> None:
    """What the person does with the link: open it in a browser and choose a password."""
    browser = Client()
    page = browser.get(urlsplit(url).path, follow=True)
    assert page.status_code == 200
    form_path = page.redirect_chain[-1][0] if page.redirect_chain else urlsplit(url).path
    done = browser.post(form_path, {"new_password1": password, "new_password2": password})
    assert done.status_code == 302, done.content[:300]


@pytest.mark.django_db(transaction=True)
def test_a_whole_campaign_with_the_generated_client(
    generated: ModuleType,  # noqa: F811
    live_server: Any,
    settings: Any,
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    models = importlib.import_module(f"{PACKAGE}.models")
    types = importlib.import_module(f"{PACKAGE}.types")
    token_create = importlib.import_module(f"{PACKAGE}.api.token.token_create")
    UserFactory(username="chief", password="chief-password-1", is_staff=True)

    def login(username: str, password: str) -> Any:
        anonymous = generated.Client(base_url=live_server.url)
        body = models.TokenRequest(username=username, password=password)
        token = _ok(token_create.sync_detailed(client=anonymous, body=body)).token
        return generated.AuthenticatedClient(base_url=live_server.url, token=token, prefix="Token")

    def upload(payload: bytes, name: str) -> Any:
        return types.File(payload=io.BytesIO(payload), file_name=name)

    org = login("chief", "chief-password-1")

    # A collection with its scale and cutoffs; topics, documents, qrels and three runs.
    grades = [models.GradeLevel(value=v, label=f"g{v}") for v in (0, 1, 2)]
    body = models.CollectionCreate(slug="camp", cutoffs=[3, 5], grades=grades)
    _ok(_op("collections_create").sync_detailed(client=org, body=body), 201)
    topics = models.TopicsUpload(file=upload(TOPICS, "topics.tsv"))
    assert (
        _ok(
            _op("collections_imports_topics_create").sync_detailed("camp", client=org, body=topics)
        ).created
        == 6
    )
    documents = models.DocumentsUpload(file=upload(DOCUMENTS, "docs.jsonl"))
    _ok(
        _op("collections_imports_documents_create").sync_detailed(
            "camp", client=org, body=documents
        )
    )
    qrels = models.QrelsUpload(file=upload(QRELS, "seed.qrels"))
    _ok(_op("collections_imports_qrels_create").sync_detailed("camp", client=org, body=qrels))
    for shift, tag in enumerate(("bm25", "dense", "hybrid")):
        body = models.RunUpload(file=upload(_run(tag, shift), f"{tag}.run"))
        _ok(_op("collections_runs_create").sync_detailed("camp", client=org, body=body), 201)

    # The assessors' accounts, each with a one-time link to set a password.
    tokens = {}
    for name in ("ann", "bob"):
        account = models.AccountCreate(username=name, role=models.RoleEnum.ASSESSOR)
        made = _ok(
            _op("collections_accounts_create").sync_detailed("camp", client=org, body=account), 201
        )
        assert made.member.role == models.RoleEnum.ASSESSOR and made.link.url.startswith("http")
        _set_password(made.link.url, f"{name}-password-9")
        tokens[name] = login(name, f"{name}-password-9")
    members = _ok(_op("collections_members_list").sync_detailed("camp", client=org)).results
    assert sorted(m.username for m in members) == ["ann", "bob", "chief"]

    # A pool of every run's top 2 for q1..q4, each pair to both assessors.
    pool_body = models.PoolCreate(name="round-1", depth=2, queries=["q1", "q2", "q3", "q4"])
    pool = _ok(
        _op("collections_pools_create").sync_detailed("camp", client=org, body=pool_body), 201
    )
    assign = models.AssignInput(assessors=["ann", "bob"], overlap=2)
    assigned = _ok(
        _op("collections_pools_assign_create").sync_detailed(
            "camp", pool.id, client=org, body=assign
        )
    )
    assert [a.added for a in assigned] == [pool.entries, pool.entries]

    # Each assessor judges their own pairs with their own token: ann generous, bob strict.
    for name, grade in (("ann", 2), ("bob", 0)):
        client = tokens[name]
        mine = _ok(_op("collections_assignments_list").sync_detailed("camp", client=client)).results
        assert [a.assessor for a in mine] == [name]
        items = _ok(
            _op("collections_assignments_items_list").sync_detailed(
                "camp", mine[0].id, client=client
            )
        ).results
        for item in items:
            judgement = models.JudgementInput(qid=item.qid, docno=item.docno, grade=grade)
            _ok(
                _op("collections_judgements_create").sync_detailed(
                    "camp", client=client, body=judgement
                ),
                201,
            )
        # Blinded: an assessor reads no leaderboard and no runs.
        assert (
            _op("collections_leaderboard_retrieve").sync_detailed("camp", client=client).status_code
            == 404
        )
    status = _ok(_op("collections_pools_retrieve").sync_detailed("camp", pool.id, client=org))
    assert [a.progress.percent for a in status.assignments] == [100, 100]

    # Disagreements, adjudicated; agreement; the history.
    disputes = _ok(_op("collections_disagreements_list").sync_detailed("camp", client=org)).results
    assert disputes and all(d.spread == 2 for d in disputes)
    spread_one = _op("collections_disagreements_list").sync_detailed("camp", client=org, min_=1)
    assert _ok(spread_one).count >= len(disputes)  # a number, not an enum member
    for dispute in disputes:
        verdict = models.AdjudicationInput(qid=dispute.qid, docno=dispute.docno, grade=1)
        _ok(_op("collections_adjudications_create").sync_detailed("camp", client=org, body=verdict))
    assert Adjudication.objects.filter(query__collection__slug="camp").count() == len(disputes)
    agreement = _ok(_op("collections_agreement_retrieve").sync_detailed("camp", client=org))
    assert agreement.units == pool.entries and agreement.pairs[0].first == "ann"
    history = _ok(
        _op("collections_history_list").sync_detailed("camp", client=org, assessor="bob", limit=5)
    )
    assert history.count == pool.entries and len(history.results) == 5

    # A version tag; leaderboard, per-query scores, comparison.
    version = models.QrelsVersionCreate(name="adjudicated")
    tagged = _op("collections_versions_create").sync_detailed("camp", client=org, body=version)
    assert tagged.status_code == 201
    assert tagged.headers["Location"].endswith("/api/v1/collections/camp/versions/adjudicated/")
    again = _ok(
        _op("collections_versions_retrieve").sync_detailed("camp", "adjudicated", client=org)
    )
    assert again.name == "adjudicated" and again.created == tagged.parsed.created
    assert QrelsVersion.objects.filter(name="adjudicated").exists()
    board = _ok(_op("collections_leaderboard_retrieve").sync_detailed("camp", client=org, k=3))
    assert not board.pending and {row.name for row in board.runs} == {"bm25", "dense", "hybrid"}
    scores = _ok(
        _op("collections_runs_scores_retrieve").sync_detailed("camp", "bm25", client=org, k=3)
    )
    assert {row.qid for row in scores.per_query} >= {"q1", "q2", "q3", "q4"}
    compared = _ok(
        _op("collections_compare_retrieve").sync_detailed(
            "camp", client=org, a="bm25", b="dense", k=3
        )
    )
    assert compared.queries == scores.queries

    # Exports: qrels, one assessor's own grades, a run file, scores in three layouts.
    qrels_text = _ok(_op("collections_qrels_retrieve").sync_detailed("camp", client=org))
    effective = (
        Judgement.objects.filter(query__collection__slug="camp")
        .values("query", "document")
        .distinct()
        .count()
    )
    assert len(qrels_text.splitlines()) == effective
    bob_qrels = _ok(
        _op("collections_assessor_qrels_retrieve").sync_detailed("camp", client=org, assessor="bob")
    )
    assert len(bob_qrels.splitlines()) == pool.entries and {
        line.split()[3] for line in bob_qrels.splitlines()
    } == {"0"}
    run_text = _ok(
        _op("collections_runs_download_retrieve").sync_detailed("camp", "bm25", client=org)
    )
    assert run_text.splitlines()[0].split()[:2] == ["q1", "Q0"] and len(run_text.splitlines()) == 18
    trec = _ok(
        _op("collections_scores_export_trec_retrieve").sync_detailed(
            "camp", client=org, run="bm25", k=3
        )
    )
    mean = next(line for line in trec.splitlines() if "\tall\t" in line)
    assert float(mean.split("\t")[2]) == pytest.approx(
        board.runs[[r.name for r in board.runs].index("bm25")].ndcg, abs=5e-5
    )
    csv_text = _ok(_op("collections_scores_export_csv_retrieve").sync_detailed("camp", client=org))
    assert csv_text.startswith("run,qid,k,ndcg")
    document = _ok(
        _op("collections_scores_export_json_retrieve").sync_detailed("camp", client=org, k=5)
    )
    assert set(document.additional_properties["runs"]) == {"bm25", "dense", "hybrid"}
    assert Collection.objects.get(slug="camp").pools.count() == 1
