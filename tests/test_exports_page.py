"""The exports page: qrels, each assessor's qrels, history, a run, scores; streamed, organisers."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from annotations import services
from annotations.models import Collection, Membership
from tests.factories import UserFactory, grade_pair

Capture = Callable[..., AbstractContextManager[Any]]
PAGE = "/collections/demo/exports/"


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def judged(worked_example: Collection, assessor: Any) -> Collection:
    """The worked example, a second assessor who disagrees on d4, and an organiser."""
    Membership.objects.create(
        collection=worked_example, user=UserFactory(username="olga"), role="organiser"
    )
    Membership.objects.create(collection=worked_example, user=assessor, role="assessor")
    grade_pair(worked_example, "q1", "d4", "bob", 2, source="form")
    return worked_example


def as_user(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def _text(response: Any) -> str:
    assert response.status_code == 200, response.content[:500]
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def _command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_only_organisers_export(judged: Collection) -> None:
    assert as_user("olga").get(PAGE).status_code == 200
    assert as_user("alice").get(PAGE).status_code == 403
    assert as_user("alice").get(f"{PAGE}qrels/").status_code == 403


def test_the_effective_qrels_are_what_export_qrels_writes(judged: Collection) -> None:
    body = _text(as_user("olga").get(f"{PAGE}qrels/"))
    assert body == _command("export_qrels", "demo")
    assert "q1 0 d4 0\n" in body  # median of 0 and 2, lower on a tie


def test_each_assessors_own_qrels(judged: Collection) -> None:
    html = as_user("olga").get(PAGE).content.decode()
    assert "alice</a> (8 judgements)" in html and "bob</a> (1 judgement)" in html
    assert _text(as_user("olga").get(f"{PAGE}assessor-qrels/?assessor=bob")) == "q1 0 d4 2\n"
    alice = _text(as_user("olga").get(f"{PAGE}assessor-qrels/?assessor=alice"))
    assert alice.count("\n") == 8 and "q1 0 d4 0\n" in alice
    assert as_user("olga").get(f"{PAGE}assessor-qrels/?assessor=olga").status_code == 404


def test_the_judgement_history_as_csv(judged: Collection) -> None:
    rows = list(csv.DictReader(io.StringIO(_text(as_user("olga").get(f"{PAGE}history/")))))
    assert len(rows) == 9
    assert rows[-1]["docno"] == "d4" and rows[-1]["assessor"] == "bob"
    assert rows[-1]["old_grade"] == "" and rows[-1]["new_grade"] == "2"
    assert rows[-1]["source"] == "form"


def test_a_run_as_export_run_writes_it(judged: Collection) -> None:
    body = _text(as_user("olga").get(f"{PAGE}run/?run-run=example"))
    assert body == _command("export_run", "demo", "example")
    missing = as_user("olga").get(f"{PAGE}run/?run-run=ghost")
    assert missing.status_code == 400 and "Select a valid choice" in missing.content.decode()


@pytest.mark.parametrize(
    ("query", "command"),
    [
        (
            "scores-format=trec&scores-run=example&scores-k=6",
            ("evaluate", "demo", "--run", "example", "--k", "6"),
        ),
        (
            "scores-format=trec&scores-run=example&scores-per_query=on",
            ("evaluate", "demo", "--run", "example", "-q"),
        ),
        ("scores-format=csv", ("evaluate", "demo", "--format", "csv")),
        ("scores-format=csv&scores-k=10", ("evaluate", "demo", "--format", "csv", "--k", "10")),
        ("scores-format=json", ("evaluate", "demo", "--format", "json")),
    ],
)
def test_scores_at_any_k_as_evaluate_prints_them(
    judged: Collection, query: str, command: tuple[str, ...]
) -> None:
    body = _text(as_user("olga").get(f"{PAGE}scores/?{query}"))
    assert body.rstrip("\n") == _command(*command).rstrip("\n")


def test_the_trec_score_line_is_the_worked_example(judged: Collection) -> None:
    query = "scores-format=trec&scores-run=example&scores-k=6"
    body = _text(as_user("olga").get(f"{PAGE}scores/?{query}"))
    assert body == "ndcg_cut_6            \tall\t0.7850\n"
    document = json.loads(_text(as_user("olga").get(f"{PAGE}scores/?scores-format=json")))
    assert document["runs"]["example"]["all"]["6"]["ndcg"] == pytest.approx(0.7850023719699)


def test_bad_score_requests_are_refused_on_the_page(judged: Collection) -> None:
    for query, message in (
        ("scores-format=trec", "The trec_eval format shows one run"),
        ("scores-format=csv&scores-k=7", "Select a valid choice"),
        ("scores-format=xml", "Select a valid choice"),
    ):
        response = as_user("olga").get(f"{PAGE}scores/?{query}")
        assert response.status_code == 400 and message in response.content.decode()


def test_csv_downloads_show_formula_like_names_as_text(
    judged: Collection, write_file: Callable[..., Path]
) -> None:
    run = write_file("evil.run", "q1 Q0 d1 1 1.0 t\n")
    services.run_import(collection=judged, source=run, run_name="=1+1")
    body = _text(as_user("olga").get(f"{PAGE}scores/?scores-format=csv"))
    assert {row["run"] for row in csv.DictReader(io.StringIO(body))} == {"example", "'=1+1"}
    grade_pair(judged, "q1", "d5", "@admin", 0)
    history = list(csv.DictReader(io.StringIO(_text(as_user("olga").get(f"{PAGE}history/")))))
    assert history[-1]["assessor"] == "'@admin" and history[-1]["new_grade"] == "0"
