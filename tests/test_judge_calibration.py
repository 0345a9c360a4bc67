"""Machine judges calibrated against people: the pure computation (hand-computed cases), the
selector's statements, the agreement page's section and the agreement API, by role."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from annotations import services
from annotations.metrics.calibration import (
    Calibration,
    GradeBias,
    QueryDispute,
    judge_calibration,
    reference_agreement,
)
from annotations.models import Collection, MachineJudge
from annotations.selectors.calibration import judges_calibration
from tests.factories import machine_judge, record_grades

# --- the pure computation ----------------------------------------------------------------

LEVELS = [0, 1, 2]
# The judge, alice and bob on six pairs of three queries. Against alice the judge's grades
# are (2, 1), (1, 1), (2, 2), (0, 0); against bob (2, 0), (2, 0), (2, 0), (0, 1).
JUDGE = {
    ("q1", "d1"): 2, ("q1", "d2"): 1, ("q1", "d3"): 2,
    ("q2", "d1"): 0, ("q2", "d2"): 2, ("q3", "d1"): 2,
}  # fmt: skip
ALICE = {("q1", "d1"): 1, ("q1", "d2"): 1, ("q1", "d3"): 2, ("q2", "d1"): 0}
BOB = {("q1", "d1"): 0, ("q2", "d2"): 0, ("q3", "d1"): 0, ("q2", "d1"): 1, ("q9", "d9"): 2}


def _worked() -> Calibration:
    return judge_calibration(
        judge=JUDGE,
        people={"bob": BOB, "alice": ALICE},
        adjudicated={("q1", "d1"): 1, ("q9", "d9"): 2},
        levels=LEVELS,
    )


def test_agreement_with_each_person_is_kappa_alpha_and_the_matrix_by_hand() -> None:
    alice, bob = _worked().people
    assert (alice.second, alice.items, bob.second, bob.items) == ("alice", 4, "bob", 4)
    # Alice: observed sum(w * o) = 1/4 (the one 2-vs-1 pair, w = 1/4), expected with the
    # marginals rows (1, 1, 2), columns (1, 2, 1) over 4: 5/4; kappa = 1 - (1/4) / (5/4).
    assert alice.kappa == pytest.approx(0.8)
    # Coincidences n = (2, 3, 3) of 8, mid-ranks (1, 3.5, 6.5): observed 2 * 9 = 18,
    # expected 2 * (6 * 6.25 + 6 * 30.25 + 9 * 9) = 600; alpha = 1 - 7 * 18 / 600.
    assert alice.alpha == pytest.approx(0.79)
    assert alice.matrix == [[1, 0, 0], [0, 1, 0], [0, 1, 1]]  # rows: the judge's grades
    # Bob: observed 1/4 + 3 = 13/4, expected 1/16 + 9/4 + 3/16 = 5/2; kappa = 1 - 13/10.
    assert bob.kappa == pytest.approx(-0.3)
    # n = (4, 1, 3), mid-ranks (2, 4.5, 6.5): observed 2 * (3 * 20.25 + 6.25) = 134,
    # expected 2 * (4 * 6.25 + 12 * 20.25 + 3 * 4) = 560; alpha = 1 - 7 * 134 / 560.
    assert bob.alpha == pytest.approx(-0.675)
    assert bob.matrix == [[0, 1, 0], [0, 0, 0], [3, 0, 0]]


def test_the_adjudicated_grades_count_only_where_the_judge_graded() -> None:
    adjudicated = _worked().adjudicated
    # One pair, judge 2 and adjudicated 1: observed and expected disagreement are equal.
    assert adjudicated.items == 1 and adjudicated.matrix == [[0, 0, 0], [0, 0, 0], [0, 1, 0]]
    assert adjudicated.kappa == pytest.approx(0.0) and adjudicated.alpha == pytest.approx(0.0)
    nothing_settled = judge_calibration(
        judge=JUDGE, people={}, adjudicated={("q9", "d9"): 2}, levels=LEVELS
    )
    assert nothing_settled.adjudicated == reference_agreement("adjudicated", [], LEVELS)
    assert nothing_settled.adjudicated.items == 0 and nothing_settled.adjudicated.kappa is None


def test_bias_per_grade_and_the_mean_difference_by_hand() -> None:
    calibration = _worked()
    # Where people gave 0: the judge gave 0 (alice q2/d1) and 2, 2, 2 (bob): mean 1.5.
    # Where they gave 1: 2 and 1 (alice), 0 (bob): mean 1. Where they gave 2: 2 (alice).
    assert calibration.bias == [
        GradeBias(grade=0, items=4, judge_mean=1.5, difference=1.5),
        GradeBias(grade=1, items=3, judge_mean=1.0, difference=0.0),
        GradeBias(grade=2, items=1, judge_mean=2.0, difference=0.0),
    ]
    # judge - person: alice 1, 0, 0, 0; bob 2, 2, 2, -1: 6 over 8 comparisons.
    assert calibration.mean_difference == pytest.approx(0.75)
    assert (calibration.pairs, calibration.comparisons) == (6, 8)


def test_disputed_queries_average_each_pair_over_its_people_first() -> None:
    # q1: d1 (|2-1| + |2-0|) / 2 = 1.5, d2 0, d3 0: 0.5 over 3 pairs. q2: d1 (0 + 1) / 2,
    # d2 2: 1.25 over 2. q3 has a single common pair, fewer than two: left out.
    assert _worked().queries == [
        QueryDispute(qid="q2", pairs=2, mean_absolute_difference=1.25),
        QueryDispute(qid="q1", pairs=3, mean_absolute_difference=0.5),
    ]


def test_the_ten_queries_disputed_most_come_first_ties_by_more_pairs_then_qid() -> None:
    judge: dict[tuple[str, str], int] = {}
    person: dict[tuple[str, str], int] = {}
    for number in range(14):  # three pairs each: q00 and q01 agree, then 1/3, 1/3, 2/3 ...
        qid = f"q{number:02d}"
        for docno in ("a", "b", "c"):
            judge[(qid, docno)] = 0
            person[(qid, docno)] = 0
        person[(qid, "a")] = min(3, number // 2)
        person[(qid, "b")] = max(0, number // 2 - 3)
    scale = [0, 1, 2, 3]
    found = judge_calibration(judge=judge, people={"p": person}, adjudicated={}, levels=scale)
    assert [d.qid for d in found.queries] == [
        "q12", "q13", "q10", "q11", "q08", "q09", "q06", "q07", "q04", "q05",
    ]  # fmt: skip
    assert found.queries[0] == QueryDispute(qid="q12", pairs=3, mean_absolute_difference=2.0)
    top3 = judge_calibration(judge=judge, people={"p": person}, adjudicated={}, levels=scale, top=3)
    assert top3.queries == found.queries[:3]
    # Equal means: the query with more pairs first, whatever its qid.
    tied = judge_calibration(
        judge={("qa", "1"): 1, ("qa", "2"): 1, ("qb", "1"): 1, ("qb", "2"): 1, ("qb", "3"): 1},
        people={"p": {("qa", "1"): 0, ("qa", "2"): 0, ("qb", "1"): 0, ("qb", "2"): 0,
                      ("qb", "3"): 0}},
        adjudicated={}, levels=scale,
    )  # fmt: skip
    assert [(d.qid, d.pairs) for d in tied.queries] == [("qb", 3), ("qa", 2)]
    # A query counts with two common pairs, not one; none with no difference at all.
    assert not judge_calibration(
        judge={("q", "a"): 2}, people={"p": {("q", "a"): 0}}, adjudicated={}, levels=LEVELS
    ).queries


def test_no_common_pairs_gives_empty_agreement_and_no_means() -> None:
    calibration = judge_calibration(
        judge={("q1", "d1"): 1}, people={"alice": {("q2", "d1"): 0}}, adjudicated={},
        levels=LEVELS,
    )  # fmt: skip
    assert calibration == Calibration(
        levels=LEVELS, pairs=0, comparisons=0, people=[],
        adjudicated=reference_agreement("adjudicated", [], LEVELS), bias=[],
        mean_difference=None, queries=[],
    )  # fmt: skip
    empty = reference_agreement("nobody", [], LEVELS)
    assert empty.items == 0 and empty.kappa is None and empty.alpha is None
    assert empty.matrix == [[0] * 3 for _ in range(3)]


def test_a_single_level_has_a_matrix_but_no_kappa_or_alpha() -> None:
    calibration = judge_calibration(
        judge={("q1", "d1"): 1, ("q1", "d2"): 1}, people={"alice": {("q1", "d1"): 1,
        ("q1", "d2"): 1}}, adjudicated={("q1", "d1"): 1}, levels=[1],
    )  # fmt: skip
    (alice,) = calibration.people
    assert alice.matrix == [[2]] and alice.kappa is None and alice.alpha is None
    assert calibration.adjudicated.items == 1 and calibration.adjudicated.kappa is None
    assert calibration.bias == [GradeBias(grade=1, items=2, judge_mean=1.0, difference=0.0)]
    assert calibration.mean_difference == 0.0 and calibration.queries == []


def test_perfect_agreement_is_one_and_no_query_is_disputed() -> None:
    same = {("q1", "d1"): 0, ("q1", "d2"): 2, ("q2", "d1"): 1, ("q2", "d2"): 2}
    calibration = judge_calibration(
        judge=same, people={"alice": dict(same)}, adjudicated={}, levels=LEVELS
    )
    (alice,) = calibration.people
    assert alice.kappa == 1.0 and alice.alpha == 1.0
    assert alice.matrix == [[1, 0, 0], [0, 1, 0], [0, 0, 2]]
    assert all(row.difference == 0 for row in calibration.bias)
    assert calibration.mean_difference == 0.0 and calibration.queries == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"levels": []}, "at least one grade"),
        ({"levels": [2, 1, 0]}, "strictly increasing"),
        ({"judge": {("q", "d"): 5}}, "judge, pair ('q', 'd'): grade 5"),
        ({"people": {"eve": {("q", "d"): -1}}}, "person 'eve'"),
        ({"adjudicated": {("q", "d"): 7}}, "adjudicated"),
        ({"top": -1}, "top"),
        ({"min_pairs": 0}, "min_pairs"),
    ],
)
def test_bad_input_is_a_value_error(arguments: dict[str, Any], message: str) -> None:
    given: dict[str, Any] = {"judge": {}, "people": {}, "adjudicated": {}, "levels": LEVELS}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        judge_calibration(**(given | arguments))


# --- the selector, the page and the API ---------------------------------------------------


def _user(name: str) -> Any:
    return get_user_model().objects.get(username=name)


@pytest.fixture
def judged(trial: Collection) -> MachineJudge:
    """The judge umbrela beside alice and bob on q1 and q2; q1/d1 adjudicated 1 by olga."""
    judge = machine_judge(trial)
    record_grades(trial, judge.account, {
        ("q1", "d1"): 3, ("q1", "d2"): 2, ("q1", "d3"): 3, ("q2", "d3"): 0, ("q2", "d5"): 3,
        ("q2", "d4"): 1,
    })  # fmt: skip
    record_grades(trial, _user("alice"), {("q1", "d1"): 1, ("q1", "d2"): 2, ("q1", "d3"): 3})
    record_grades(trial, _user("bob"), {("q1", "d1"): 1, ("q2", "d3"): 3, ("q2", "d5"): 0})
    services.adjudication_record(
        query=trial.queries.get(qid="q1"),
        document=trial.documents.get(docno="d1"),
        organiser=_user("olga"),
        grade=1,
    )
    return judge


def test_the_selector_calibrates_each_judge_against_people_only(
    judged: MachineJudge, trial: Collection
) -> None:
    (found,) = judges_calibration(collection=trial)
    assert (found.name, found.model, found.graded) == ("umbrela", "test-model", 6)
    calibration = found.calibration
    assert [row.second for row in calibration.people] == ["alice", "bob"]
    assert [row.items for row in calibration.people] == [3, 3]
    assert calibration.adjudicated.items == 1
    # judge - person: alice 2, 0, 0; bob 2, -3, 3: mean 4/6. q2: |0-3|, |3-0| over 2 pairs;
    # q1: d1 (2 + 2) / 2, d2 0, d3 0 over 3 pairs.
    assert calibration.mean_difference == pytest.approx(4 / 6)
    assert calibration.queries == [
        QueryDispute(qid="q2", pairs=2, mean_absolute_difference=3.0),
        QueryDispute(qid="q1", pairs=3, mean_absolute_difference=2 / 3),
    ]


def test_the_selector_reads_in_four_statements_however_many_judges_and_pairs(
    judged: MachineJudge, trial: Collection, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(4):
        judges_calibration(collection=trial)
    for name in ("second", "third"):
        other = machine_judge(trial, name)
        record_grades(trial, other.account, {(q, d): 1 for q in ("q1", "q2") for d in ("d1", "d2")})
    with django_assert_max_num_queries(4):
        assert [found.name for found in judges_calibration(collection=trial)] == [
            "second", "third", "umbrela",
        ]  # fmt: skip


def test_a_collection_without_judges_reads_two_statements(
    trial: Collection, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(2):
        assert judges_calibration(collection=trial) == []


def test_the_people_agreement_leaves_machine_judges_out(judged: MachineJudge) -> None:
    people = _page("olga").split('id="machine-judges"')[0]  # (the ranking's section has it)
    assert "alice and bob" in people and "judge:trial:umbrela" not in people


def _page(username: str) -> str:
    client = Client()
    client.force_login(_user(username))
    response = client.get("/collections/trial/agreement/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_agreement_page_shows_each_judge_against_people(judged: MachineJudge) -> None:
    page = _page("olga")
    section = page[page.index('id="machine-judges"') : page.index('id="sensitivity"')]
    assert '<a href="/collections/trial/judges/umbrela/">umbrela</a>' in section
    assert "6 pairs graded, 5 of them also by people (6 comparisons" in section
    assert "Confusion matrix: umbrela and alice" in section
    assert "Confusion matrix: umbrela and the adjudicated grades" in section
    assert section.count('class="data confusion"') == 3
    assert '<a href="/collections/trial/queries/q2/">q2</a>' in section
    assert '<td class="num mean-difference">0.667</td>' in section
    # Every table sits in a focusable region that scrolls on its own.
    assert section.count("<table") == section.count(
        '<div class="scroll" tabindex="0" role="region"'
    )


def test_the_page_says_when_no_judge_or_no_common_pair_exists(trial: Collection) -> None:
    assert "This collection has no machine judge." in _page("olga")
    machine_judge(trial)
    assert "No person has graded a pair this judge graded yet." in _page("olga")


def test_assessors_and_strangers_never_see_the_calibration(judged: MachineJudge) -> None:
    for name, status in (("alice", 403), ("eve", 404)):
        client = Client()
        client.force_login(_user(name))
        assert client.get("/collections/trial/agreement/").status_code == status
        api = APIClient()
        api.force_authenticate(_user(name))
        assert api.get("/api/v1/collections/trial/agreement/").status_code == status


def test_the_agreement_api_gives_each_judge_calibrated(judged: MachineJudge) -> None:
    api = APIClient()
    api.force_authenticate(_user("olga"))
    body = api.get("/api/v1/collections/trial/agreement/").json()
    assert [pair["first"] + "/" + pair["second"] for pair in body["pairs"]] == ["alice/bob"]
    (judge,) = body["machine_judges"]
    assert {key: judge[key] for key in ("judge", "model", "graded", "pairs", "comparisons")} == {
        "judge": "umbrela", "model": "test-model", "graded": 6, "pairs": 5, "comparisons": 6,
    }  # fmt: skip
    alice = judge["people"][0]
    assert alice["person"] == "alice" and alice["items"] == 3
    assert alice["matrix"][3] == [0, 1, 0, 1]  # the judge's 3s: alice 1 once, 3 once
    assert judge["adjudicated"]["items"] == 1 and judge["adjudicated"]["matrix"][3][1] == 1
    assert judge["bias"][0] == {"grade": 0, "items": 1, "judge_mean": 3.0, "difference": 3.0}
    assert judge["mean_difference"] == pytest.approx(4 / 6)
    assert judge["queries"][0] == {"qid": "q2", "pairs": 2, "mean_absolute_difference": 3.0}
    refused = api.get("/api/v1/collections/trial/agreement/?judge=umbrela")
    assert refused.status_code == 400 and "judge" in refused.json()["error"]["fields"]


# --- in a real browser ---------------------------------------------------------------------

LONG = "person-" + "x" * 143  # 150 characters, the longest username Django allows
# Every table of the section and whether it sits in a focusable region of its own.
TABLES = """[...document.querySelectorAll('#machine-judges table')].map(t => {
  const region = t.closest('.scroll[tabindex="0"]');
  return region !== null && region.parentElement.closest('.scroll') === null; })"""


@pytest.mark.browser
def test_the_section_passes_axe_wraps_long_names_and_scrolls_its_tables_at_390_px(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    from tests.conftest import browser_page, log_in
    from tests.factories import MembershipFactory, UserFactory
    from tests.test_browser_accessibility import PHONE, page_problems

    person = UserFactory(username=LONG)
    MembershipFactory(collection=trial, user=person, role="assessor")
    judge = machine_judge(trial, "judge-" + "y" * 54)  # 60 characters, the longest judge name
    pairs = [(q, d) for q in ("q1", "q2") for d in ("d1", "d3", "d5")]
    record_grades(trial, judge.account, {pair: number % 4 for number, pair in enumerate(pairs)})
    record_grades(trial, person, {pair: (number * 3) % 4 for number, pair in enumerate(pairs)})
    services.adjudication_record(
        query=trial.queries.get(qid="q1"), document=trial.documents.get(docno="d1"),
        organiser=_user("olga"), grade=2,
    )  # fmt: skip
    with browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")
        problems = page_problems(page, "/collections/trial/agreement/")
        summaries = page.locator("#machine-judges details summary")
        summaries.first.focus()
        page.keyboard.press("Enter")  # a matrix opens from the keyboard
        assert page.locator("#machine-judges details").first.get_attribute("open") is not None
        for summary in summaries.all()[1:]:
            summary.click()  # every confusion matrix open: they must pass and fit as well
        problems += [
            f"open matrices: {violation['id']} ({violation['impact']})"
            for violation in Axe().run(page).response["violations"]
            if violation["impact"] in ("serious", "critical")
        ]
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the page is {width} px wide"
        in_regions = page.evaluate(TABLES)
        assert len(in_regions) == 5 and all(in_regions), in_regions
        region = page.locator("#machine-judges .scroll[tabindex='0']").first
        region.focus()
        assert page.evaluate("document.activeElement.classList.contains('scroll')")
        heading = page.locator(f"#judge-{judge.name}-title")
        assert heading.bounding_box()["width"] <= PHONE["width"]  # type: ignore[index]
        name_cell = page.locator("table.calibration-agreement th[scope=row]").first
        assert name_cell.inner_text() == LONG
        assert name_cell.bounding_box()["width"] < PHONE["width"] / 2  # type: ignore[index]
    assert not problems, "\n".join(problems)
