"""How machine judges' grades count (the collection's rule): one assessor, filling the pairs
no person judged, or not at all; in the stored scores, the qrels export, versions,
disagreements and adjudications alike."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from annotations import selectors, services
from annotations.formats import trec
from annotations.metrics.machine_grades import counted_grades, pair_grade
from annotations.models import Collection, JudgementHistory, MachineJudge
from annotations.scores.rescoring import scores_verify
from annotations.selectors import disagreements as disputes
from annotations.selectors.stored_scores import evaluated_queries
from annotations.selectors.versions import Mark, qrels_text_as_of
from annotations.services.versions import qrels_version_tag
from tests.factories import machine_judge, record_grades
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
    (the scores are computed after each, as in production)."""
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
