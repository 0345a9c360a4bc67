"""The grading page's background answers: a pair as JSON, the pairs that follow, a grade's JSON."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotations import services
from annotations.models import Assignment, Collection, Judgement, JudgementHistory

JSON = {"HTTP_ACCEPT": "application/json"}


def as_user(name: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return client


@pytest.fixture
def assigned(trial: Collection) -> Assignment:
    """Alice's assignment: q1's four depth-2 pairs (d1 d2 d3 d6), positions 1-4."""
    q1 = trial.queries.get(qid="q1")
    pool, _ = services.pool_build(collection=trial, name="main", depth=2, queries=[q1])
    alice = get_user_model().objects.get(username="alice")
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[alice])
    return assignment


def grade_url(assignment: Assignment, position: int) -> str:
    return f"/judging/assignments/{assignment.id}/pairs/{position}/"


def item_id(assignment: Assignment, position: int) -> int:
    return assignment.items.get(position=position).id


def test_a_pair_asked_as_json_is_the_pages_fragment_without_systems_or_scores(
    assigned: Assignment,
) -> None:
    answer = as_user("alice").get(grade_url(assigned, 1), **JSON)
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    pair = answer.json()["pair"]
    assert (pair["item"], pair["position"], pair["url"]) == (
        item_id(assigned, 1), 1, grade_url(assigned, 1),
    )  # fmt: skip
    assert pair["title"] == "q1 / d1 · Judging"
    assert "stored in batteries" in pair["html"] and 'id="grade-form"' in pair["html"]
    assert 'name="idempotency_key"' in pair["html"]
    for secret in ("bm25", "dense", "nDCG", "score"):  # the page's blinding
        assert secret not in pair["html"]


def test_the_pairs_after_one_skip_the_excluded_and_wrap_round(assigned: Assignment) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 2), {"grade": "1"})  # d2 is done
    base = f"/judging/assignments/{assigned.id}/pairs/3/next/"
    pairs = client.get(f"{base}?count=2").json()["pairs"]
    assert [pair["position"] for pair in pairs] == [4, 1]  # after 3, wrapping; 2 is graded
    exclude = item_id(assigned, 4)
    pairs = client.get(f"{base}?count=3&exclude={exclude}").json()["pairs"]
    assert [pair["position"] for pair in pairs] == [1]  # 3 itself and the excluded left out
    many = client.get(f"/judging/assignments/{assigned.id}/pairs/1/next/?count=50").json()
    assert [pair["position"] for pair in many["pairs"]] == [3, 4]
    assert many["done_url"] == f"/judging/assignments/{assigned.id}/"


def test_the_pairs_after_are_only_the_assessors_own(assigned: Assignment) -> None:
    answer = as_user("bob").get(f"/judging/assignments/{assigned.id}/pairs/1/next/")
    assert answer.status_code == 404


def test_a_grade_posted_for_json_is_committed_with_its_dwell_and_replayed_once(
    assigned: Assignment,
) -> None:
    client = as_user("alice")
    form = {
        "grade": "2",
        "item": item_id(assigned, 1),
        "idempotency_key": "k-1",
        "dwell_ms": "4200",
    }
    first = client.post(grade_url(assigned, 1), form, **JSON)
    assert first.status_code == 200
    answer = first.json()
    assert answer["saved"] is True and answer["grade"] == 2 and answer["pair"] == "q1 / d1"
    assert answer["left"] == 3 and "1 / 4" in answer["progress"]
    retry = client.post(grade_url(assigned, 1), form, **JSON)  # the answer was lost
    assert retry["Idempotent-Replayed"] == "true" and json.loads(retry.content) == answer
    history = JudgementHistory.objects.get()
    assert (history.new_grade, history.source, history.dwell_ms) == (2, "form", 4200)


def test_a_dwell_past_the_cap_counts_as_the_cap_and_a_negative_one_is_refused(
    assigned: Assignment,
) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 1), {"grade": "1", "dwell_ms": str(10**9)}, **JSON)
    assert JudgementHistory.objects.get().dwell_ms == JudgementHistory.DWELL_CAP_MS
    refused = client.post(grade_url(assigned, 2), {"grade": "1", "dwell_ms": "-5"}, **JSON)
    assert refused.status_code == 400 and "dwell_ms" in refused.json()["errors"]
    assert Judgement.objects.count() == 1


def test_a_grade_off_the_scale_is_refused_as_json_and_nothing_saved(assigned: Assignment) -> None:
    answer = as_user("alice").post(grade_url(assigned, 1), {"grade": "7"}, **JSON)
    assert answer.status_code == 400
    assert "7" in answer.json()["error"] and "grade" in answer.json()["errors"]
    assert not Judgement.objects.exists() and not JudgementHistory.objects.exists()


def test_the_grade_goes_to_the_item_shown_not_the_position(assigned: Assignment) -> None:
    client = as_user("alice")
    shown = item_id(assigned, 3)  # re-prioritised meanwhile: the form names its item
    answer = client.post(grade_url(assigned, 1), {"grade": "3", "item": shown}, **JSON).json()
    assert (answer["item"], answer["position"], answer["pair"]) == (shown, 3, "q1 / d3")
    graded = Judgement.objects.get()
    assert graded.document.docno == "d3"


def test_a_skip_posted_for_json_says_so_and_withdraws_the_grade(assigned: Assignment) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 1), {"grade": "2"}, **JSON)
    answer = client.post(grade_url(assigned, 1), {"action": "skip", "note": "?"}, **JSON).json()
    assert (answer["action"], answer["grade"], answer["withdrawn"]) == ("skip", None, True)
    assert not Judgement.objects.exists()


def test_another_assessor_cannot_grade_through_json(assigned: Assignment) -> None:
    answer = as_user("bob").post(grade_url(assigned, 1), {"grade": "2"}, **JSON)
    assert answer.status_code == 404 and not Judgement.objects.exists()


def test_a_long_document_is_shown_in_blocks_that_keep_every_line() -> None:
    from annotations.views.grading import BLOCK_LINES, text_blocks

    short = "one\ntwo"
    assert text_blocks(short) == short
    lines = [f"line {n} <mark>solar</mark>" for n in range(BLOCK_LINES * 2 + 1)]
    blocked = text_blocks("\n".join(lines))
    assert blocked.count('<span class="text-block">') == 3
    unwrapped = blocked.replace('<span class="text-block">', "").replace("</span>", "\n")
    assert unwrapped.rstrip("\n").split("\n") == lines


def test_the_pairs_after_refuse_nothing_they_cannot_name(assigned: Assignment) -> None:
    client = as_user("alice")
    base = f"/judging/assignments/{assigned.id}/pairs"
    odd = client.get(f"{base}/1/next/?count={'9' * 5000}&exclude={'9' * 5000},x,-1,{2**70}")
    assert odd.status_code == 200 and len(odd.json()["pairs"]) == 1
    assert client.get(f"{base}/{2**40}/next/").status_code == 404


def test_a_background_save_is_thirteen_statements_in_all(
    assigned: Assignment, django_assert_num_queries, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from annotations import idempotency

    monkeypatch.setattr(idempotency, "SWEEP_EVERY", 2**62)  # the occasional sweep left out
    client = as_user("alice")
    form = {"grade": "2", "item": item_id(assigned, 2), "idempotency_key": "k-2", "dwell_ms": "9"}
    # The session and its user; the key claimed; the item with its assignment, pool and
    # collection; the scale; the judgement and its history row; the query marked for
    # rescoring; the webhook subscriptions; the progress; the answer kept with its key. And
    # the transaction's two (in a test, a savepoint and its release).
    with django_assert_num_queries(13):
        answer = client.post(grade_url(assigned, 1), form, **JSON)
    assert answer.status_code == 200 and answer.json()["pair"] == "q1 / d2"
    assert Judgement.objects.get().grade == 2
    assert JudgementHistory.objects.get().dwell_ms == 9
    assigned.items.filter(position=3).update(skipped=True, note="later")
    form = {"grade": "1", "item": item_id(assigned, 3), "idempotency_key": "k-3"}
    with django_assert_num_queries(14):  # and the item's skip mark cleared
        client.post(grade_url(assigned, 3), form, **JSON)
    assert not assigned.items.get(position=3).skipped
