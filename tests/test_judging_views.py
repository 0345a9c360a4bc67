"""Judging pages through the test client: queue, grading, pools, agreement, permissions."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotations import scores, services
from annotations.models import (
    Assignment,
    AssignmentItem,
    Collection,
    Document,
    Judgement,
    JudgementHistory,
    Pool,
)


def user(name: str):  # type: ignore[no-untyped-def]
    return get_user_model().objects.get(username=name)


def as_user(name: str) -> Client:
    client = Client()
    client.force_login(user(name))
    return client


@pytest.fixture
def assigned(trial: Collection) -> Assignment:
    """Alice's assignment: q1's four depth-2 pairs (d1 d2 d3 d6), positions 1-4."""
    q1 = trial.queries.get(qid="q1")
    pool, _ = services.pool_build(collection=trial, name="main", depth=2, queries=[q1])
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[user("alice")])
    return assignment


def grade_url(assignment: Assignment, position: int) -> str:
    return f"/judging/assignments/{assignment.id}/pairs/{position}/"


def alice_grades() -> dict[str, int]:
    return dict(
        Judgement.objects.filter(assessor__username="alice").values_list("document__docno", "grade")
    )


# --- assessor pages ---------------------------------------------------------------------


def test_queue_shows_own_assignments_with_progress_and_continue(assigned: Assignment) -> None:
    page = as_user("alice").get("/judging/").content.decode()
    assert f'data-assignment="{assigned.id}"' in page
    assert "0 / 4 (0%)" in page
    assert f"/judging/assignments/{assigned.id}/continue/" in page


def test_continue_opens_the_next_ungraded_pair(assigned: Assignment) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 1), {"grade": "2"})
    response = client.get(f"/judging/assignments/{assigned.id}/continue/")
    assert response["Location"] == grade_url(assigned, 2)


def test_grading_page_shows_query_document_and_scale(assigned: Assignment) -> None:
    page = as_user("alice").get(grade_url(assigned, 1)).content.decode()
    assert "solar energy storage" in page
    assert "How is solar energy stored?" in page
    assert "Batteries or heat count." in page
    assert "<mark>Solar</mark> <mark>energy</mark> can be stored in batteries." in page
    assert "Perfectly relevant" in page
    assert "Exactly what the query asks for" in page
    assert 'data-key="3"' in page
    assert "https://example.org/d1" in page


def test_document_text_is_escaped_never_executed(assigned: Assignment) -> None:
    position = assigned.items.get(entry__document__docno="d3").position
    page = as_user("alice").get(grade_url(assigned, position)).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_an_unsafe_document_url_is_not_a_link(assigned: Assignment) -> None:
    Document.objects.filter(docno="d1").update(url="javascript:alert(1)")
    page = as_user("alice").get(grade_url(assigned, 1)).content.decode()
    assert 'href="javascript:' not in page


def test_posting_a_grade_saves_it_with_history_and_moves_on(assigned: Assignment) -> None:
    response = as_user("alice").post(grade_url(assigned, 1), {"grade": "3", "note": "clear"})
    assert response.status_code == 302
    assert response["Location"] == grade_url(assigned, 2)
    assert alice_grades() == {"d1": 3}
    history = JudgementHistory.objects.get()
    assert (history.old_grade, history.new_grade, history.source) == (None, 3, "form")
    assert history.changed_by == user("alice")


def test_a_double_submit_creates_one_judgement_and_one_history_row(
    assigned: Assignment,
) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 1), {"grade": "2"})
    client.post(grade_url(assigned, 1), {"grade": "2"})
    assert Judgement.objects.count() == 1
    assert JudgementHistory.objects.count() == 1


def test_a_grade_sent_twice_with_its_pages_key_is_answered_with_the_first_redirect(
    assigned: Assignment,
) -> None:
    client = as_user("alice")
    page = client.get(grade_url(assigned, 1))
    key = page.context["idempotency_key"]
    assert f'name="idempotency_key" value="{key}"' in page.content.decode()
    form = {"grade": "2", "idempotency_key": key}
    first = client.post(grade_url(assigned, 1), form)
    client.post(grade_url(assigned, 2), {"grade": "1"})  # the next pair meanwhile
    retry = client.post(grade_url(assigned, 1), form)
    assert first.status_code == retry.status_code == 302
    assert retry["Location"] == first["Location"] == grade_url(assigned, 2)
    assert retry["Idempotent-Replayed"] == "true"
    assert JudgementHistory.objects.filter(document__docno="d1").count() == 1
    # another grade from the same page is a new choice, and saved
    changed = client.post(grade_url(assigned, 1), {"grade": "0", "idempotency_key": key})
    assert changed.status_code == 302 and alice_grades()["d1"] == 0


def test_undo_takes_back_the_last_grade_then_the_one_before_it(assigned: Assignment) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 1), {"grade": "2"})
    client.post(grade_url(assigned, 2), {"grade": "1"})
    client.post(grade_url(assigned, 1), {"grade": "3"})  # d1 changed 2 -> 3
    undo = f"/judging/assignments/{assigned.id}/undo/"
    first = client.post(undo)
    assert first.status_code == 302 and first["Location"] == grade_url(assigned, 1)
    assert alice_grades() == {"d1": 2, "d2": 1}  # d1 back to 2
    second = client.post(undo)
    assert second["Location"] == grade_url(assigned, 2)
    assert alice_grades() == {"d1": 2}  # d2 had no grade before: withdrawn
    client.post(undo)
    assert alice_grades() == {}  # d1's first grade taken back too
    nothing = client.post(undo, {"position": "3"}, follow=True)
    assert "Nothing to undo" in nothing.content.decode()
    sources = list(JudgementHistory.objects.order_by("id").values_list("source", flat=True))
    assert sources == ["form", "form", "form", "undo", "undo", "undo"]
    assert as_user("bob").post(undo).status_code == 404  # another assessor's assignment
    assert client.get(undo).status_code == 405


def test_revisiting_changes_the_grade_and_records_old_and_new(assigned: Assignment) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 1), {"grade": "2"})
    client.post(grade_url(assigned, 1), {"grade": "0"})
    assert alice_grades() == {"d1": 0}
    rows = list(JudgementHistory.objects.values_list("old_grade", "new_grade", "source"))
    assert rows == [(None, 2, "form"), (2, 0, "form")]


def test_grading_the_last_pair_leads_to_the_finished_assignment(assigned: Assignment) -> None:
    client = as_user("alice")
    for position in (1, 2, 3):
        client.post(grade_url(assigned, position), {"grade": "1"})
    response = client.post(grade_url(assigned, 4), {"grade": "1"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/judging/assignments/{assigned.id}/"
    assert "4 / 4 (100%)" in response.content.decode()


def test_skip_with_a_note_is_passed_over_but_not_counted_as_done(assigned: Assignment) -> None:
    client = as_user("alice")
    response = client.post(grade_url(assigned, 1), {"action": "skip", "note": "foreign language"})
    assert response["Location"] == grade_url(assigned, 2)
    item = assigned.items.get(position=1)
    assert (item.skipped, item.note) == (True, "foreign language")
    assert not Judgement.objects.exists()
    queue = client.get("/judging/").content.decode()
    assert "0 / 4 (0%)" in queue and "1 skipped · 3 left" in queue


def test_an_assignment_of_skips_only_is_not_done(assigned: Assignment) -> None:
    client = as_user("alice")
    for position in (1, 2, 3, 4):
        client.post(grade_url(assigned, position), {"action": "skip"})
    queue = client.get("/judging/").content.decode()
    assert "0 / 4 (0%)" in queue and "4 skipped · 0 left" in queue
    assert "4 skipped · <a" in queue and "Done ·" not in queue


def test_skipping_a_graded_pair_withdraws_the_grade_with_history(assigned: Assignment) -> None:
    client = as_user("alice")
    client.post(grade_url(assigned, 1), {"grade": "2"})
    client.post(grade_url(assigned, 1), {"action": "skip"})
    assert not Judgement.objects.exists()
    assert list(JudgementHistory.objects.values_list("old_grade", "new_grade")) == [
        (None, 2),
        (2, None),
    ]
    client.post(grade_url(assigned, 1), {"grade": "1"})
    assert not AssignmentItem.objects.get(assignment=assigned, position=1).skipped


def test_a_grade_off_the_scale_is_refused_and_nothing_saved(assigned: Assignment) -> None:
    response = as_user("alice").post(grade_url(assigned, 1), {"grade": "7"})
    assert response.status_code == 200
    assert not Judgement.objects.exists()


# --- permissions ------------------------------------------------------------------------


def test_another_assessor_can_neither_see_nor_grade_an_assignment(assigned: Assignment) -> None:
    bob = as_user("bob")
    assert bob.get(grade_url(assigned, 1)).status_code == 404
    assert bob.post(grade_url(assigned, 1), {"grade": "3"}).status_code == 404
    assert bob.get(f"/judging/assignments/{assigned.id}/").status_code == 404
    assert bob.get(f"/judging/assignments/{assigned.id}/continue/").status_code == 404
    assert f'data-assignment="{assigned.id}"' not in bob.get("/judging/").content.decode()
    assert not Judgement.objects.exists()


def test_even_an_organiser_cannot_grade_in_an_assessors_name(assigned: Assignment) -> None:
    assert as_user("olga").post(grade_url(assigned, 1), {"grade": "3"}).status_code == 404
    assert not Judgement.objects.exists()


def test_anonymous_users_are_sent_to_the_login_page(assigned: Assignment) -> None:
    response = Client().get(grade_url(assigned, 1))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(
    "path", ["pools/", "agreement/", "disagreements/"], ids=["pools", "agreement", "disagreements"]
)
def test_non_members_get_404_and_assessors_403_on_organiser_pages(
    trial: Collection, path: str
) -> None:
    url = f"/collections/trial/{path}"
    assert as_user("eve").get(url).status_code == 404
    assert as_user("alice").get(url).status_code == 403
    assert as_user("olga").get(url).status_code == 200


def test_assessors_cannot_build_pools_or_adjudicate(trial: Collection) -> None:
    alice = as_user("alice")
    assert alice.post("/collections/trial/pools/", {"name": "x", "depth": "2"}).status_code == 403
    response = alice.post(
        "/collections/trial/disagreements/", {"query": "1", "document": "1", "grade": "3"}
    )
    assert response.status_code == 403
    assert not Pool.objects.exists()


# --- organiser pages --------------------------------------------------------------------


def test_organiser_builds_a_pool_and_assigns_it_through_the_pages(trial: Collection) -> None:
    olga = as_user("olga")
    response = olga.post("/collections/trial/pools/", {"name": "main", "depth": "2"})
    pool = Pool.objects.get(name="main")
    assert response["Location"] == f"/collections/trial/pools/{pool.id}/"
    response = olga.post(
        f"/collections/trial/pools/{pool.id}/assign/",
        {"assessors": [user("alice").pk, user("bob").pk], "overlap": "2"},
    )
    assert response.status_code == 302
    assert AssignmentItem.objects.count() == 14
    page = olga.get(f"/collections/trial/pools/{pool.id}/").content.decode()
    assert "0 / 7 (0%)" in page


def test_the_pool_form_names_each_run_once_without_the_collection(trial: Collection) -> None:
    page = as_user("olga").get("/collections/trial/pools/").content.decode()
    assert "trial/bm25" not in page and "trial/dense" not in page
    assert 'id="id_runs_0">\n bm25</label>' in page


def test_a_second_pool_of_the_same_name_is_refused_in_plain_words(trial: Collection) -> None:
    olga = as_user("olga")
    olga.post("/collections/trial/pools/", {"name": "main", "depth": "2"})
    again = olga.post("/collections/trial/pools/", {"name": "main", "depth": "3"})
    html = again.content.decode()
    assert again.status_code == 200 and "A pool called &#x27;main&#x27; exists" in html
    assert "Collection and Name already exists" not in html
    assert Pool.objects.filter(name="main").count() == 1


def test_assigning_with_too_large_an_overlap_shows_the_error(trial: Collection) -> None:
    olga = as_user("olga")
    olga.post("/collections/trial/pools/", {"name": "main", "depth": "2"})
    pool = Pool.objects.get(name="main")
    response = olga.post(
        f"/collections/trial/pools/{pool.id}/assign/",
        {"assessors": [user("alice").pk], "overlap": "2"},
    )
    assert response.status_code == 200
    assert "needs at least 2 assessors" in response.content.decode()


def test_organiser_extends_a_pool_through_the_page(trial: Collection) -> None:
    olga = as_user("olga")
    olga.post("/collections/trial/pools/", {"name": "main", "depth": "1"})
    pool = Pool.objects.get(name="main")
    olga.post(f"/collections/trial/pools/{pool.id}/extend/", {"depth": "2"})
    assert pool.entries.count() == 7


def test_organiser_hands_over_then_releases_what_an_assessor_left(
    assigned: Assignment,
) -> None:
    alice = as_user("alice")
    alice.post(grade_url(assigned, 1), {"grade": "2"})
    alice.post(grade_url(assigned, 2), {"action": "skip", "note": "unsure"})
    olga = as_user("olga")
    pool = assigned.pool
    page = olga.get(f"/collections/trial/pools/{pool.id}/").content.decode()
    release = f"/collections/trial/pools/{pool.id}/assignments/{assigned.id}/release/"
    assert f'action="{release}"' in page and "Release 3 left" in page
    options = page[page.index(f'id="release-{assigned.id}"') :]
    options = options[: options.index("</select>")]
    assert '<option value="bob">' in options and '<option value="alice">' not in options

    response = olga.post(release, {"to": "bob"}, follow=True)
    assert "3 pairs alice had left are handed to bob." in response.content.decode()
    bobs = Assignment.objects.get(pool=pool, assessor__username="bob")
    assert bobs.items.count() == 3 and assigned.items.count() == 1
    assert alice_grades() == {"d1": 2}  # the grade given stays with alice

    response = olga.post(
        f"/collections/trial/pools/{pool.id}/assignments/{bobs.id}/release/",
        {"to": ""},
        follow=True,
    )
    assert "3 pairs bob had left are back in the pool" in response.content.decode()
    assert bobs.items.count() == 0
    again = olga.post(release, {"to": ""}, follow=True).content.decode()
    assert "alice has nothing left to release in this pool." in again


def test_release_refuses_unknown_people_and_non_organisers(assigned: Assignment) -> None:
    pool = assigned.pool
    release = f"/collections/trial/pools/{pool.id}/assignments/{assigned.id}/release/"
    assert as_user("alice").post(release, {"to": "bob"}).status_code == 403
    assert as_user("eve").post(release, {"to": "bob"}).status_code == 404
    response = as_user("olga").post(release, {"to": "eve"}, follow=True)
    assert (
        "Not released: &#x27;eve&#x27; is not an assessor or organiser of this collection"
        in response.content.decode()
    )
    assert assigned.items.count() == 4
    other = services.pool_build(collection=assigned.pool.collection, name="other", depth=1)[0]
    wrong_pool = f"/collections/trial/pools/{other.id}/assignments/{assigned.id}/release/"
    assert as_user("olga").post(wrong_pool, {"to": ""}).status_code == 404


def test_agreement_page_shows_alpha_kappa_and_the_confusion_matrix(trial: Collection) -> None:
    q1 = trial.queries.get(qid="q1")
    for docno, alice, bob in [("d1", 3, 3), ("d2", 0, 2), ("d3", 1, 1)]:
        document = trial.documents.get(docno=docno)
        for name, grade in (("alice", alice), ("bob", bob)):
            services.judgement_record(
                query=q1, document=document, assessor=user(name), grade=grade, source="form"
            )
    page = as_user("olga").get("/collections/trial/agreement/").content.decode()
    assert "alice and bob" in page
    assert "3 common pairs" in page
    # Hand-computed with w = (i - j)^2 / 9: observed sum(w * o) = 4/9 (the one 0-vs-2 pair);
    # expected sum(w * e) = (1/3) * (14 + 5 + 5) / 9 = 8/9; kappa = 1 - (4/9) / (8/9) = 0.5.
    assert '<strong class="kappa">0.500</strong>' in page
    assert "over 3 pairs judged by two or more assessors" in page
    # the matrix is shaded by count (all cells hold 0 or 1 here: the 1s are darkest) and
    # its diagonal, agreement, is outlined
    assert page.count('class="num shade-5 agree"') == 2  # (1, 1) and (3, 3)
    assert page.count('class="num shade-5"') == 1  # alice 0, bob 2
    assert 'class="num shade-0 agree"' in page


def test_disagreement_list_filters_by_spread(trial: Collection) -> None:
    q1 = trial.queries.get(qid="q1")
    for docno, alice, bob in [("d1", 3, 2), ("d2", 0, 2)]:
        document = trial.documents.get(docno=docno)
        for name, grade in (("alice", alice), ("bob", bob)):
            services.judgement_record(
                query=q1, document=document, assessor=user(name), grade=grade, source="form"
            )
    olga = as_user("olga")
    wide = olga.get("/collections/trial/disagreements/").content.decode()
    assert 'data-pair="q1/d2"' in wide
    assert 'data-pair="q1/d1"' not in wide
    every = olga.get("/collections/trial/disagreements/?min=1").content.decode()
    assert 'data-pair="q1/d1"' in every
    assert 'data-pair="q1/d2"' in every


def test_the_adjudication_form_starts_at_the_effective_grade_with_text_and_notes(
    trial: Collection,
) -> None:
    q1, d2 = trial.queries.get(qid="q1"), trial.documents.get(docno="d2")
    for name, grade, note in (("alice", 0, "about heat, not power"), ("bob", 3, "")):
        services.judgement_record(
            query=q1, document=d2, assessor=user(name), grade=grade, source="form", note=note
        )
    page = as_user("olga").get("/collections/trial/disagreements/").content.decode()
    row = page[page.index('data-pair="q1/d2"') :]
    row = row[: row.index("</tr>")]
    assert "Heat storage keeps solar plants running at night." in row  # the document text
    assert "alice:</span> about heat, not power" in row  # the assessor's note
    # median of 0 and 3 (lower median on a tie) is 0: the form starts there
    assert '<option value="0" selected>' in row and row.count(" selected>") == 1


def test_agreement_page_shows_how_the_ranking_depends_on_who_judged(trial: Collection) -> None:
    q1 = trial.queries.get(qid="q1")
    for docno, alice, bob in [("d1", 3, 0), ("d2", 0, 3), ("d3", 1, 1)]:
        document = trial.documents.get(docno=docno)
        for name, grade in (("alice", alice), ("bob", bob)):
            services.judgement_record(
                query=q1, document=document, assessor=user(name), grade=grade, source="form"
            )
    scores.scores_sweep_stale(collection=trial)  # this test's writes commit nothing
    k = trial.sorted_cutoffs[0]
    response = as_user("olga").get(f"/collections/trial/agreement/?k={k}")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="sensitivity-assessors"' in page and 'id="sensitivity-swings"' in page
    assert '<th scope="row">alice</th>' in page and '<th scope="row">bob</th>' in page
    assert "alice and bob" in page
    for run in trial.runs.values_list("name", flat=True):
        assert f'<th scope="row"><span class="cut" title="{run}">{run}</span></th>' in page
    # assessors do not see it (the page is the organisers')
    assert as_user("alice").get("/collections/trial/agreement/").status_code in (403, 404)
