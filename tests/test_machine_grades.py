"""How machine judges' grades count (the collection's rule): one assessor, filling the pairs
no person judged, or not at all; in the stored scores, the qrels export, versions,
disagreements and adjudications alike."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils.html import escape

from annotations import selectors, services
from annotations.formats import trec
from annotations.formats.reports import latex_escape
from annotations.metrics.machine_grades import (
    JUDGED_COUNTS,
    MACHINE_RULES,
    RULE_EFFECTS,
    RULE_STATEMENTS,
    counted_grades,
    pair_grade,
)
from annotations.models import Collection, JudgementHistory, MachineJudge, PoolEntry
from annotations.scores.rescoring import scores_verify
from annotations.selectors import disagreements as disputes
from annotations.selectors.stored_scores import evaluated_queries
from annotations.selectors.versions import Mark, qrels_text_as_of
from annotations.services.versions import qrels_version_tag
from tests.conftest import TRIAL_RUNS
from tests.factories import machine_judge, record_grades
from tests.test_collection_settings import _post
from tests.test_scores import oracle, stored_ndcg

# --- the rule, by hand -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "people", "machine", "counted"),
    [
        ("assessor", [3], [0], [3, 0]),
        ("assessor", [], [2], [2]),
        ("fill", [3], [0], [3]),
        ("fill", [], [0, 2], [0, 2]),
        ("people", [3, 1], [0], [3, 1]),
        ("people", [], [2], []),
    ],
)
def test_the_grades_that_count_under_each_rule(
    rule: str, people: list[int], machine: list[int], counted: list[int]
) -> None:
    assert counted_grades(people, machine, rule) == counted


def test_a_pair_grade_is_its_adjudication_else_the_counted_grades_combined() -> None:
    assert pair_grade([3], [0], None, aggregation="median", rule="assessor") == 0
    assert pair_grade([3], [0], None, aggregation="median", rule="fill") == 3
    assert pair_grade([], [2], None, aggregation="median", rule="people") is None
    assert pair_grade([], [2], 1, aggregation="median", rule="people") == 1  # adjudicated
    assert pair_grade([], [], 1, aggregation="median", rule="fill") is None  # not judged
    with pytest.raises(ValueError, match="unknown rule for machine grades 'both'"):
        counted_grades([1], [2], "both")


# --- a collection judged by people and a machine -----------------------------------------

# alice: q1/d1 3, q1/d2 0; the machine: q1/d1 0, q1/d3 2, q2/d4 1 (q2 only the machine).
PEOPLE = {("q1", "d1"): 3, ("q1", "d2"): 0}
MACHINE = {("q1", "d1"): 0, ("q1", "d3"): 2, ("q2", "d4"): 1}
EXPECTED = {
    "assessor": {("q1", "d1"): 0, ("q1", "d2"): 0, ("q1", "d3"): 2, ("q2", "d4"): 1},
    "fill": {("q1", "d1"): 3, ("q1", "d2"): 0, ("q1", "d3"): 2, ("q2", "d4"): 1},
    "people": {("q1", "d1"): 3, ("q1", "d2"): 0},
}


@pytest.fixture
def machine_judged(transactional_db: None, trial: Collection) -> Collection:
    """The trial collection judged by alice and the machine judge umbrela, with real commits
    (the scores are computed after each, as in production); machine grades count as one
    assessor."""
    services.collection_update(collection=trial, machine_grades="assessor")
    judge = machine_judge(trial)
    record_grades(trial, get_user_model().objects.get(username="alice"), PEOPLE)
    record_grades(trial, judge.account, MACHINE)
    return trial


def _rule(collection: Collection, rule: str) -> Collection:
    services.collection_update(collection=collection, machine_grades=rule)
    collection.refresh_from_db()
    return collection


def _export(collection: Collection) -> dict[tuple[str, str], int]:
    text = b"".join(selectors.qrels_lines(collection=collection)).decode()
    streamed = "".join(trec.qrels_text(selectors.qrels_rows(collection=collection)))
    assert text == streamed  # the database's COPY and the row reader agree
    return {(qid, docno): int(grade) for qid, _, docno, grade in map(str.split, text.splitlines())}


@pytest.mark.parametrize("rule", ["assessor", "fill", "people"])
def test_each_rule_is_the_qrels_the_scores_the_leaderboard_and_trec_eval_agree_on(
    machine_judged: Collection, rule: str
) -> None:
    collection = _rule(machine_judged, rule)
    assert _export(collection) == EXPECTED[rule]
    assert stored_ndcg(collection) == oracle(collection)  # every bit, from the same qrels
    assert scores_verify(collection=collection) == []  # incremental == from scratch
    evaluated = [qid for _, qid, _ in evaluated_queries(collection, 5)]
    assert evaluated == (["q1"] if rule == "people" else ["q1", "q2"])


def test_a_new_machine_grade_counts_by_the_rule_as_it_arrives(machine_judged: Collection) -> None:
    collection = _rule(machine_judged, "fill")
    judge = MachineJudge.objects.get(collection=collection)
    record_grades(collection, judge.account, {("q1", "d2"): 3, ("q2", "d5"): 2})
    # q1/d2 stays alice's 0; q2/d5 is filled by the machine.
    assert _export(collection) == {**EXPECTED["fill"], ("q2", "d5"): 2}
    assert stored_ndcg(collection) == oracle(collection)
    assert scores_verify(collection=collection) == []


def test_changing_the_rule_rescores_every_query(machine_judged: Collection) -> None:
    before = stored_ndcg(machine_judged)
    collection = _rule(machine_judged, "people")
    after = stored_ndcg(collection)
    assert before != after and after == oracle(collection)
    assert all(qid == "q1" for _, qid, _ in after)


def test_the_rule_is_refused_unless_it_is_one_of_the_three(machine_judged: Collection) -> None:
    with pytest.raises(ValidationError, match="machine_grades"):
        services.collection_update(collection=machine_judged, machine_grades="both")
    machine_judged.refresh_from_db()
    assert machine_judged.machine_grades == "assessor"


def test_versions_tagged_for_each_rule_keep_each_qrels(machine_judged: Collection) -> None:
    collection = _rule(machine_judged, "fill")
    people = qrels_version_tag(collection=collection, name="people", machine_grades="people")
    filled = qrels_version_tag(collection=collection, name="filled")
    assert (people.machine_grades, filled.machine_grades) == ("people", "fill")
    _rule(collection, "assessor")
    collection.refresh_from_db()
    for version, rule in ((people, "people"), (filled, "fill")):
        text = "".join(qrels_text_as_of(collection=collection, mark=Mark.of_version(version)))
        parsed = {(q, d): int(g) for q, _, d, g in map(str.split, text.splitlines())}
        assert parsed == EXPECTED[rule]
    with pytest.raises(ValidationError, match="machine_grades"):
        qrels_version_tag(collection=collection, name="other", machine_grades="both")


def test_disagreements_show_the_grade_that_counts_and_adjudication_records_it(
    machine_judged: Collection,
) -> None:
    collection = _rule(machine_judged, "fill")
    (row,) = disputes.disagreements(collection=collection, min_difference=2)
    assert (row.qid, row.docno, sorted(g for _, g in row.grades)) == ("q1", "d1", [0, 3])
    assert row.effective == 3 and row.initial_grade == 3
    services.adjudication_record(
        query=collection.queries.get(qid="q1"),
        document=collection.documents.get(docno="d1"),
        organiser=get_user_model().objects.get(username="olga"),
        grade=1,
    )
    history = JudgementHistory.objects.filter(source="adjudication").get()
    assert (history.old_grade, history.new_grade) == (3, 1)
    assert _export(collection)[("q1", "d1")] == 1


def test_a_pair_only_machines_disagree_on_is_not_scored_under_people_only(
    machine_judged: Collection,
) -> None:
    second = machine_judge(machine_judged, "second", model="other-model")
    record_grades(machine_judged, second.account, {("q2", "d4"): 3})
    collection = _rule(machine_judged, "people")
    (row,) = [r for r in disputes.disagreements(collection=collection) if r.qid == "q2"]
    assert row.effective is None and row.initial_grade == 1  # the grades' lower median
    services.adjudication_record(
        query=collection.queries.get(qid="q2"),
        document=collection.documents.get(docno="d4"),
        organiser=get_user_model().objects.get(username="olga"),
        grade=2,
    )
    history = JudgementHistory.objects.filter(source="adjudication").get()
    assert (history.old_grade, history.new_grade) == (None, 2)
    assert _export(collection)[("q2", "d4")] == 2  # an organiser's grade counts
    assert stored_ndcg(collection) == oracle(collection)


# --- a new collection scores people only until an organiser chooses otherwise --------------


def test_every_way_of_creating_a_collection_starts_with_people_only(db: None) -> None:
    from django.core.management import call_command
    from rest_framework.test import APIClient

    from tests.factories import UserFactory

    staff = UserFactory(username="staff", is_staff=True)
    assert services.collection_create(slug="by-service").machine_grades == "people"
    call_command("create_collection", "by-command", stdout=io.StringIO())
    api = APIClient()
    api.force_authenticate(staff)
    assert api.post("/api/v1/collections/", {"slug": "by-api"}, format="json").status_code == 201
    assert api.get("/api/v1/collections/by-api/").json()["machine_grades"] == "people"
    page = Client()
    page.force_login(staff)
    form = page.get("/create-collection/").content.decode()
    radio = r'<input type="radio" name="machine_grades" value="(\w+)"[^>]* checked'
    assert re.findall(radio, form) == ["people"]
    for rule, effect in RULE_EFFECTS.items():  # each choice says what it does
        described = f'id="id_machine_grades_{MACHINE_RULES.index(rule)}_description"'
        assert f"{described}>{escape(effect)}<" in form
    fields = _post("by-form", [(0, "no", ""), (1, "yes", "")])
    assert "machine_grades" not in fields
    assert page.post("/create-collection/", fields).status_code == 302  # no rule posted
    rules = dict(Collection.objects.values_list("slug", "machine_grades"))
    assert {slug: rules[slug] for slug in ("by-command", "by-form")} == {
        "by-command": "people",
        "by-form": "people",
    }


@pytest.fixture
def judged_as_created(transactional_db: None, trial: Collection) -> Collection:
    """The trial collection as created (no rule chosen), judged by alice; the machine judge's
    grades are added by each test."""
    record_grades(trial, get_user_model().objects.get(username="alice"), PEOPLE)
    return trial


def _judged_at(collection: Collection, k: int) -> dict[str, float]:
    rows = selectors.leaderboard_rows(collection=collection, k=k)
    return {row.run.name: row.judged for row in rows}


def _judged_by_hand(rule: str, k: int) -> dict[str, float]:
    """judged@k of the trial runs: the share of each run's top k whose pair has a grade that
    counts under `rule`, averaged over the queries some counted grade judges."""
    counted = EXPECTED[rule]
    queries = sorted({qid for qid, _ in counted})
    return {
        run: sum(
            sum((qid, docno) in counted for docno in ranked.get(qid, [])[:k]) / k for qid in queries
        )
        / len(queries)
        for run, ranked in TRIAL_RUNS.items()
    }


def test_a_judges_grades_leave_a_new_collections_scores_as_they_were(
    judged_as_created: Collection,
) -> None:
    collection = judged_as_created
    before, judged_before = stored_ndcg(collection), _judged_at(collection, 5)
    record_grades(collection, machine_judge(collection).account, MACHINE)
    assert collection.machine_grades == "people"
    assert _export(collection) == EXPECTED["people"]
    assert stored_ndcg(collection) == before == oracle(collection)
    assert _judged_at(collection, 5) == judged_before == _judged_by_hand("people", 5)
    # With the rule switched on, the judge's grades count.
    collection = _rule(collection, "fill")
    assert _export(collection) == EXPECTED["fill"]
    assert stored_ndcg(collection) != before and stored_ndcg(collection) == oracle(collection)
    assert _judged_at(collection, 5) == _judged_by_hand("fill", 5) != judged_before


def test_migrating_keeps_an_existing_collections_rule(transactional_db: None) -> None:
    """Collections that predate the people-only default keep the rule they held."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("annotations", "0030_judge_runs_dependable")]
    after = [("annotations", "0031_machine_grades_people_default")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("annotations", "Collection")
    old.objects.create(slug="older", name="older", cutoffs=[5])
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    new = executor.loader.project_state(after).apps.get_model("annotations", "Collection")
    assert new.objects.get(slug="older").machine_grades == "assessor"
    assert new.objects.create(slug="newer", name="newer", cutoffs=[5]).machine_grades == "people"
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


# --- every score says which grades it counts ----------------------------------------------


def _api(username: str = "olga") -> Any:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def _client(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


@pytest.mark.parametrize("rule", ["people", "fill", "assessor"])
def test_the_leaderboard_its_api_reports_and_versions_state_the_rule(
    machine_judged: Collection, rule: str
) -> None:
    collection = _rule(machine_judged, rule)
    api = _api()
    board = api.get("/api/v1/collections/trial/leaderboard/?k=5").json()
    assert board["machine_grades"] == rule
    run = api.get("/api/v1/collections/trial/runs/bm25/scores/?k=5").json()
    assert run["machine_grades"] == rule
    pair = api.get("/api/v1/collections/trial/compare/?a=bm25&b=dense&k=5").json()
    assert pair["machine_grades"] == rule
    report = "/api/v1/collections/trial/leaderboard/report/?k=5&as="
    table = list(csv.DictReader(io.StringIO(api.get(report + "csv").content.decode())))
    assert [row["run"] for row in table] == [row["name"] for row in board["runs"]]
    assert {row["machine_grades"] for row in table} == {rule}
    assert [float(row["mean"]) for row in table] == [row["ndcg"] for row in board["runs"]]
    scores = "/api/v1/collections/trial/scores/export/"
    lines = b"".join(api.get(scores + "csv/").streaming_content).decode()
    assert {row["machine_grades"] for row in csv.DictReader(io.StringIO(lines))} == {rule}
    document = json.loads(b"".join(api.get(scores + "json/").streaming_content))
    assert document["machine_grades"] == rule
    exports = _client("olga").get("/collections/trial/exports/").content.decode()
    assert f'id="export-grades-scored" data-machine-grades="{rule}"' in exports
    latex = api.get(report + "latex").content.decode()
    caption = latex[latex.index(r"\caption{") : latex.index(r"\label{")]
    assert f"Grades scored, judged@5 included: {latex_escape(RULE_STATEMENTS[rule])}." in caption
    page = _client("olga").get("/collections/trial/leaderboard/?k=5").content.decode()
    stated = page[page.index('id="grades-scored"') :]
    assert stated.startswith(f'id="grades-scored" data-machine-grades="{rule}"')
    assert escape(RULE_STATEMENTS[rule]).capitalize() in stated[: stated.index("</p>")]
    assert f"judged, counting {escape(JUDGED_COUNTS[rule])}" in page
    run_page = _client("olga").get("/collections/trial/runs/bm25/?k=5").content.decode()
    assert f'id="run-grades-scored" data-machine-grades="{rule}"' in run_page
    compare = _client("olga").get("/collections/trial/compare/?a=bm25&b=dense&k=5")
    assert f"Grades scored: {escape(RULE_STATEMENTS[rule])}." in compare.content.decode()
    qrels_version_tag(collection=collection, name="tagged")
    _rule(collection, "people" if rule != "people" else "fill")  # the version keeps its own
    version = api.get("/api/v1/collections/trial/versions/tagged/leaderboard/?k=5").json()
    assert version["machine_grades"] == rule
    detail = _client("olga").get("/collections/trial/versions/tagged/?k=5").content.decode()
    assert f'id="version-grades-scored" data-machine-grades="{rule}"' in detail
    assert escape(RULE_STATEMENTS[rule]) in detail


def test_the_dashboard_counts_people_and_machine_judged_pairs_apart(
    machine_judged: Collection, django_capture_on_commit_callbacks: Any
) -> None:
    collection = _rule(machine_judged, "people")
    with django_capture_on_commit_callbacks(execute=True):
        services.pool_build(collection=collection, name="all", depth=4, include_judged=True)
    pooled = set(
        PoolEntry.objects.filter(pool__collection=collection).values_list(
            "query__qid", "document__docno"
        )
    )
    machine_only = set(MACHINE) - set(PEOPLE)
    assert set(PEOPLE) | set(MACHINE) <= pooled  # every graded pair is in the pool
    page = _client("olga").get("/collections/trial/dashboard/?k=5").content.decode()
    assert f'id="d-pooled">{len(pooled)}<' in page
    assert f'id="d-pooled-people">{len(PEOPLE)}<' in page  # not the machine's pairs too
    assert f'id="d-pooled-machine">{len(MACHINE)}<' in page
    assert f'id="d-pooled-machine-only">{len(machine_only)}<' in page
    assert 'id="d-grades-scored" data-machine-grades="people">' in page
    assert f"judged@5 per run, counting {escape(JUDGED_COUNTS['people'])}" in page
    _rule(collection, "fill")
    page = _client("olga").get("/collections/trial/dashboard/?k=5").content.decode()
    assert f'id="d-pooled-people">{len(PEOPLE)}<' in page  # counted apart whatever the rule
    assert f"judged@5 per run, counting {escape(JUDGED_COUNTS['fill'])}" in page
