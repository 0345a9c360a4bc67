"""Tests for the Django admin as an organiser uses it: pages open, judgement writes keep history."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotations import services
from annotations.models import (
    Adjudication,
    Collection,
    Document,
    ImportJob,
    Judgement,
    JudgementHistory,
    Membership,
    Query,
    QueryScore,
    Ranking,
    Run,
    RunScore,
)
from tests.factories import CollectionFactory, DocumentFactory, UserFactory
from tests.stored import packed_query_rows, query_score, run_score


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """Factories hash a password per user; the production hasher costs ~0.3 s each."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def organiser(db: None) -> Any:
    """A superuser (with `worked_example` the test's database stays transactional)."""
    return UserFactory(username="boss", is_staff=True, is_superuser=True)


@pytest.fixture
def organiser_client(client: Client, organiser: Any) -> Client:
    client.force_login(organiser)
    return client


@pytest.fixture
def judged(db: None) -> Collection:
    """A collection with alice's judgements of q1 (d1: 3, d2: 2, d3: 0), no commits needed."""
    collection = CollectionFactory(slug="c1")
    UserFactory(username="alice")
    services.judgements_import(
        collection=collection,
        source=io.BytesIO(b"q1 0 d1 3\nq1 0 d2 2\nq1 0 d3 0\n"),
        assessor=get_user_model().objects.get(username="alice"),
    )
    return collection


def url(model: type, view: str, *args: object) -> str:
    meta = model._meta  # type: ignore[attr-defined]
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_{view}", args=args)


def judgement_of(docno: str) -> Judgement:
    return Judgement.objects.get(document__docno=docno)


def form_data(judgement: Judgement, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "query": judgement.query_id,
        "document": judgement.document_id,
        "assessor": judgement.assessor_id,
        "grade": judgement.grade,
        "note": judgement.note,
        "_save": "Save",
    }
    data.update(changes)
    return data


# Every page opens ------------------------------------------------------------------------


def test_an_organiser_opens_the_list_and_an_entry_of_every_registered_model(
    worked_example: Collection, organiser: Any
) -> None:
    query, document = Query.objects.get(qid="q1"), Document.objects.get(docno="d1")
    Adjudication.objects.create(query=query, document=document, grade=2, organiser=organiser)
    Membership.objects.create(collection=worked_example, user=organiser, role="organiser")
    client = Client()
    client.force_login(organiser)
    failures = {}
    for model in admin.site._registry:
        changelist = client.get(url(model, "changelist"))
        if changelist.status_code != 200:
            failures[f"{model._meta.label} list"] = changelist.status_code
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            entry = client.get(url(model, "change", first.pk))
            if entry.status_code != 200:
                failures[f"{model._meta.label} entry"] = entry.status_code
    assert failures == {}
    # The scores were computed after commit, so their lists are not trivially empty; each
    # row shows its cutoffs and its nDCG at the first one.
    means = client.get(reverse("admin:annotations_runscore_changelist")).content.decode()
    assert "example" in means and '<td class="field-cutoffs">5,6,10</td>' in means
    assert "mean ndcg at the first cutoff" in means.lower()
    assert first_ndcg_cell(means) == pytest.approx(run_score(k=5).ndcg, rel=1e-12)
    per_query = client.get(reverse("admin:annotations_queryscore_changelist")).content.decode()
    assert "example" in per_query and '<td class="field-cutoffs">5,6,10</td>' in per_query
    assert "ndcg at the first cutoff" in per_query.lower()
    assert first_ndcg_cell(per_query) == pytest.approx(query_score(k=5).ndcg, rel=1e-12)


def first_ndcg_cell(html: str) -> float:
    """The one value of a changelist's "nDCG at the first cutoff" column."""
    (cell,) = re.findall(r'<td class="field-first_ndcg">([^<]*)</td>', html)
    return float(cell)


def test_the_admin_index_lists_the_judging_models(db: None, organiser_client: Client) -> None:
    page = organiser_client.get("/admin/").content.decode()
    for name in ("Collections", "Judgements", "Judgement history", "Runs", "Queries"):
        assert name in page


def test_judgement_history_is_read_only_in_the_admin(
    judged: Collection, organiser_client: Client
) -> None:
    row = JudgementHistory.objects.first()
    assert row is not None
    assert organiser_client.get(url(JudgementHistory, "add")).status_code == 403
    assert organiser_client.get(url(JudgementHistory, "delete", row.pk)).status_code == 403
    response = organiser_client.post(
        url(JudgementHistory, "change", row.pk), {"old_grade": 1, "new_grade": 2}
    )
    assert response.status_code == 403
    assert JudgementHistory.objects.get(pk=row.pk).new_grade == row.new_grade


# Changing and adding judgements ----------------------------------------------------------


def test_changing_a_judgement_in_the_admin_records_history_from_admin(
    judged: Collection, organiser_client: Client, organiser: Any
) -> None:
    judgement = judgement_of("d1")
    version = judgement.query.judgements_version
    response = organiser_client.post(
        url(Judgement, "change", judgement.pk), form_data(judgement, grade=1, note="on reflection")
    )
    assert response.status_code == 302
    changed = judgement_of("d1")
    assert (changed.pk, changed.grade, changed.note) == (judgement.pk, 1, "on reflection")
    latest = JudgementHistory.objects.latest("id")
    assert (latest.old_grade, latest.new_grade, latest.source) == (3, 1, "admin")
    assert (latest.assessor, latest.changed_by) == (judgement.assessor, organiser)
    assert Query.objects.get(pk=judgement.query_id).judgements_version == version + 1
    assert Judgement.objects.count() == 3


def test_saving_an_unchanged_judgement_in_the_admin_writes_no_history(
    judged: Collection, organiser_client: Client
) -> None:
    judgement = judgement_of("d2")
    count = JudgementHistory.objects.count()
    response = organiser_client.post(url(Judgement, "change", judgement.pk), form_data(judgement))
    assert response.status_code == 302
    assert JudgementHistory.objects.count() == count


@pytest.mark.parametrize(
    ("grade", "error"),
    [
        (7, "7 is not on this collection's scale [0, 1, 2, 3]."),
        (-1, "-1 is not on this collection's scale [0, 1, 2, 3]."),
        (40000, None),  # the field's range (PostgreSQL) or the scale check (SQLite) refuses it
        ("high", "Enter a whole number."),
    ],
)
def test_a_grade_off_the_scale_in_the_admin_is_a_form_error(
    judged: Collection, organiser_client: Client, grade: object, error: str | None
) -> None:
    judgement = judgement_of("d1")
    count = JudgementHistory.objects.count()
    response = organiser_client.post(
        url(Judgement, "change", judgement.pk), form_data(judgement, grade=grade)
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["grade"]
    if error is None:
        assert len(errors) == 1
    else:
        assert errors == [error]
    assert judgement_of("d1").grade == 3
    assert JudgementHistory.objects.count() == count


def test_adding_a_judgement_in_the_admin_records_history_from_admin(
    judged: Collection, organiser_client: Client, organiser: Any
) -> None:
    query = Query.objects.get(qid="q1")
    document = DocumentFactory(collection=judged, docno="d9")
    bob = UserFactory(username="bob")
    data = {"query": query.pk, "document": document.pk, "assessor": bob.pk, "grade": 2}
    response = organiser_client.post(url(Judgement, "add"), {**data, "note": "", "_save": "Save"})
    assert response.status_code == 302
    added = Judgement.objects.get(document=document)
    assert (added.assessor, added.grade) == (bob, 2)
    latest = JudgementHistory.objects.latest("id")
    assert (latest.old_grade, latest.new_grade, latest.source) == (None, 2, "admin")
    assert latest.changed_by == organiser


def test_adding_a_judgement_of_another_collections_document_is_a_form_error(
    judged: Collection, organiser_client: Client
) -> None:
    query = Query.objects.get(qid="q1")
    stranger = DocumentFactory()  # in a collection of its own
    data = {"query": query.pk, "document": stranger.pk, "assessor": judgement_of("d1").assessor_id}
    response = organiser_client.post(
        url(Judgement, "add"), {**data, "grade": 1, "note": "", "_save": "Save"}
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["document"] == [
        "The document belongs to another collection."
    ]
    assert not Judgement.objects.filter(document=stranger).exists()


# Deleting judgements ---------------------------------------------------------------------


def test_the_admin_offers_only_the_delete_action_that_keeps_history(
    judged: Collection, organiser_client: Client
) -> None:
    response = organiser_client.get(url(Judgement, "changelist"))
    actions = dict(response.context["action_form"].fields["action"].choices)
    assert "delete_selected" not in actions
    assert actions["delete_with_history"] == (
        "Delete selected judgements (history kept, scores follow)"
    )


def test_delete_selected_judgements_keeps_their_history(
    judged: Collection, organiser_client: Client, organiser: Any
) -> None:
    doomed = [judgement_of("d1"), judgement_of("d3")]
    response = organiser_client.post(
        url(Judgement, "changelist"),
        {"action": "delete_with_history", "_selected_action": [j.pk for j in doomed]},
    )
    assert response.status_code == 302
    assert list(Judgement.objects.values_list("document__docno", flat=True)) == ["d2"]
    deletions = JudgementHistory.objects.filter(new_grade__isnull=True).order_by("id")
    assert [(h.document.docno, h.old_grade, h.source, h.changed_by) for h in deletions] == [
        ("d1", 3, "admin", organiser),
        ("d3", 0, "admin", organiser),
    ]
    # The creation rows are still there too.
    assert JudgementHistory.objects.filter(old_grade__isnull=True).count() == 3


def test_deleting_one_judgement_from_its_page_keeps_its_history(
    judged: Collection, organiser_client: Client
) -> None:
    judgement = judgement_of("d2")
    response = organiser_client.post(url(Judgement, "delete", judgement.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Judgement.objects.filter(pk=judgement.pk).exists()
    latest = JudgementHistory.objects.latest("id")
    assert (latest.document.docno, latest.old_grade, latest.new_grade, latest.source) == (
        "d2",
        2,
        None,
        "admin",
    )


def test_a_non_staff_assessor_cannot_open_the_admin(judged: Collection, client: Client) -> None:
    client.force_login(get_user_model().objects.get(username="alice"))
    response = client.get(url(Judgement, "changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_the_pair_and_assessor_of_an_existing_judgement_are_read_only_in_the_admin(
    judged: Collection, organiser_client: Client
) -> None:
    """Editing them would record another judgement and leave this one behind."""
    judgement = judgement_of("d1")
    bob, d2 = UserFactory(username="bob"), Document.objects.get(docno="d2")
    response = organiser_client.post(
        url(Judgement, "change", judgement.pk),
        form_data(judgement, assessor=bob.pk, document=d2.pk, grade=1),
    )
    assert response.status_code == 302
    assert Judgement.objects.count() == 3
    changed = Judgement.objects.get(pk=judgement.pk)
    assert (changed.document.docno, changed.assessor.username, changed.grade) == ("d1", "alice", 1)
    assert not Judgement.objects.filter(assessor=bob).exists()


# Runs ------------------------------------------------------------------------------------


def test_an_organiser_deletes_a_scored_run_with_its_scores(
    worked_example: Collection, organiser: Any, write_file: Any
) -> None:
    services.run_import(
        collection=worked_example, source=write_file("other.run", "q1 Q0 d3 1 1.0 other\n")
    )
    run, other = Run.objects.get(name="example"), Run.objects.get(name="other")
    assert QueryScore.objects.filter(run=run).exists() and run.scored_at is not None
    kept = packed_query_rows(run=other)
    assert len(kept) == 1
    client = Client()
    client.force_login(organiser)
    page = client.get(url(Run, "delete", run.pk))
    assert page.status_code == 200
    text = page.content.decode()
    # One packed per-query row (q1, every cutoff) and one row of means.
    assert "Cannot delete" not in text
    assert "per-query scores: 1" in text.lower() and "run scores: 1" in text.lower()
    assert client.post(url(Run, "delete", run.pk), {"post": "yes"}).status_code == 302
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not Ranking.objects.filter(run_id=run.pk).exists()
    assert not QueryScore.objects.filter(run_id=run.pk).exists()
    assert not RunScore.objects.filter(run_id=run.pk).exists()
    assert packed_query_rows(run=other) == kept


def test_the_delete_action_deletes_several_scored_runs(
    worked_example: Collection, organiser: Any, write_file: Any
) -> None:
    services.run_import(
        collection=worked_example, source=write_file("other.run", "q1 Q0 d3 1 1.0 other\n")
    )
    client = Client()
    client.force_login(organiser)
    ids = list(Run.objects.values_list("pk", flat=True))
    confirm = client.post(
        url(Run, "changelist"), {"action": "delete_selected", "_selected_action": ids}
    )
    assert confirm.status_code == 200 and "Cannot delete" not in confirm.content.decode()
    done = client.post(
        url(Run, "changelist"),
        {"action": "delete_selected", "_selected_action": ids, "post": "yes"},
    )
    assert done.status_code == 302
    assert not Run.objects.exists() and not RunScore.objects.exists()


def add_run(client: Client, collection: Collection, content: bytes | None, **extra: Any) -> Any:
    data: dict[str, Any] = {"collection": collection.pk, "description": "", **extra}
    if content is not None:
        data["file"] = SimpleUploadedFile("admin.run", content)
    return client.post(url(Run, "add"), data)


def test_a_run_is_added_in_the_admin_with_its_file_and_scored(
    worked_example: Collection, organiser: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    client.force_login(organiser)
    assert 'type="file"' in client.get(url(Run, "add")).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = add_run(client, worked_example, b"q1 Q0 d7 1 2.0 added\nq1 Q0 d1 2 1.0 added\n")
    assert response.status_code == 302, response.content.decode()
    run = Run.objects.get(name="added")
    assert run.scored_at is not None and run.rankings.get().size == 2
    assert RunScore.objects.filter(run=run).exists()
    renamed = add_run(client, worked_example, b"q1 Q0 d2 1 1 tag\n", name="renamed")
    assert renamed.status_code == 302
    assert Run.objects.filter(name="renamed").exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "This field is required."),
        (b"", "The submitted file is empty."),
        (b"# comments only\n", "admin.run: file is empty"),
        (b"q1 Q0 d1 1 1 a\nq1 Q0 d2 2 0.5 b\n", "admin.run:2: tag: &#x27;b&#x27; differs"),
        (b"q1 Q0 d1 1 x a\n", "admin.run:1: score: &#x27;x&#x27; is not a number"),
        (b"q1 Q0 d1 1 1 example\n", "run &#x27;example&#x27; already exists in demo"),
    ],
)
def test_a_run_without_results_or_with_a_bad_file_is_refused_by_the_admin(
    worked_example: Collection, organiser: Any, content: bytes | None, problem: str
) -> None:
    client = Client()
    client.force_login(organiser)
    before = list(Run.objects.values_list("name", "scored_at"))
    response = add_run(client, worked_example, content)
    assert response.status_code == 200  # the form again, with the error
    assert problem in response.content.decode()
    assert list(Run.objects.values_list("name", "scored_at")) == before
    assert Ranking.objects.count() == 1


def test_a_runs_collection_and_name_are_read_only_in_the_admin(
    worked_example: Collection, organiser: Any
) -> None:
    run = Run.objects.get()
    client = Client()
    client.force_login(organiser)
    other = CollectionFactory(slug="elsewhere")
    response = client.post(
        url(Run, "change", run.pk),
        {"collection": other.pk, "name": "a b", "owner": "", "description": "notes"},
    )
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.collection.slug, run.name, run.description) == ("demo", "example", "notes")
    assert run.scored_at is not None
    assert client.get(url(Ranking, "delete", run.rankings.get().pk)).status_code == 403


def test_the_admin_splits_tags_on_request_and_shows_the_import_summary(
    worked_example: Collection, organiser: Any
) -> None:
    client = Client()
    client.force_login(organiser)
    content = b"q1 Q0 d1 1 2.0 one\nq1 Q0 d2 two 1.0 two\nq1 Q0 d3 1 3.0 one\n"
    refused = add_run(client, worked_example, content)
    assert "split_tags=true" in refused.content.decode()  # how to import it
    response = add_run(client, worked_example, content, split_tags="on")
    assert response.status_code == 302
    shown = [str(message) for message in response.wsgi_request._messages]
    assert shown[:2] == [
        "run: one, 2 results",
        "run: two, 1 results; rank ignored on 1 line (not a 32-bit integer; results are "
        "ordered by score), first admin.run:2",
    ]
    assert set(Run.objects.values_list("name", flat=True)) == {"example", "one", "two"}


def test_import_jobs_are_listed_read_only_and_only_finished_ones_deleted(
    db: None, organiser_client: Client
) -> None:
    collection = CollectionFactory(slug="jobs")
    done = ImportJob.objects.create(
        collection=collection,
        kind="run",
        file_name="bm25.txt",
        size=10,
        state="done",
        summary="run: bm25, 1000 results",
        split_tags=True,
    )
    running = ImportJob.objects.create(
        collection=collection, kind="qrels", file_name="qrels.txt", size=10, state="running"
    )
    listing = organiser_client.get(url(ImportJob, "changelist")).content.decode()
    assert "bm25.txt" in listing and "qrels.txt" in listing
    page = organiser_client.get(url(ImportJob, "change", done.pk)).content.decode()
    assert "run: bm25, 1000 results" in page and 'name="summary"' not in page  # read only
    assert organiser_client.get(url(ImportJob, "delete", running.pk)).status_code == 403
    organiser_client.post(url(ImportJob, "delete", done.pk), {"post": "yes"})
    assert list(ImportJob.objects.values_list("file_name", flat=True)) == ["qrels.txt"]
