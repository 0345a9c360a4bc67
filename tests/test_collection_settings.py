"""Creating and editing collections in the app: settings, the grade-scale editor, refusals."""

from __future__ import annotations

import io
from typing import Any

from django.contrib.auth import get_user_model
from django.test import Client

from annotations import services
from annotations.models import Collection, GradeLevel, Membership, Run
from tests.factories import UserFactory

NEW = "/create-collection/"


def as_user(username: str | None) -> Client:
    client = Client()
    if username:
        client.force_login(get_user_model().objects.get(username=username))
    return client


def _post(slug: str | None, levels: list[tuple[Any, str, str]], **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "Track",
        "description": "",
        "gain": "linear",
        "cutoffs": "5, 10",
        "missing_queries": "zero",
        "aggregation": "median",
        "stale_judgements": "count",
        "grades-TOTAL_FORMS": str(len(levels)),
        "grades-INITIAL_FORMS": "0",
        "grades-MIN_NUM_FORMS": "0",
        "grades-MAX_NUM_FORMS": "1000",
    }
    if slug is not None:
        data["slug"] = slug
    for index, (value, label, definition) in enumerate(levels):
        data[f"grades-{index}-value"] = value
        data[f"grades-{index}-label"] = label
        data[f"grades-{index}-definition"] = definition
    data.update(fields)
    return data


def _scale(slug: str) -> list[tuple[int, str, str]]:
    return list(
        GradeLevel.objects.filter(collection__slug=slug).values_list("value", "label", "definition")
    )


def test_who_may_create_collections(trial: Collection) -> None:
    UserFactory(username="root", is_staff=True)
    assert as_user("root").get(NEW).status_code == 200
    assert as_user("olga").get(NEW).status_code == 200  # organises trial
    assert as_user("alice").get(NEW).status_code == 403
    assert 'id="new-collection"' not in as_user("alice").get("/").content.decode()
    assert as_user(None).get(NEW).status_code == 302


def test_the_new_form_starts_from_the_default_scale_and_two_empty_rows(trial: Collection) -> None:
    html = as_user("olga").get(NEW).content.decode()
    assert 'value="Perfectly relevant"' in html and 'name="grades-5-label"' in html
    assert 'name="grades-6-label"' not in html
    assert '<template id="level-template">' in html  # for the script's "Add a level"


def test_an_organiser_creates_a_collection_with_a_custom_scale(trial: Collection) -> None:
    levels = [("0", "Off topic", "Nothing useful."), ("1", "On topic", ""), ("", "", "")]
    response = as_user("olga").post(
        NEW,
        _post(
            "track",
            levels,
            gain="exponential",
            cutoffs="10 20",
            aggregation="mean",
            assessors_see_leaderboard="on",
            public_leaderboard="on",
        ),
    )
    assert response.status_code == 302 and response["Location"] == "/collections/track/"
    collection = Collection.objects.get(slug="track")
    assert (collection.gain, collection.cutoffs, collection.aggregation) == (
        "exponential",
        [10, 20],
        "mean",
    )
    assert collection.public_leaderboard and collection.assessors_see_leaderboard
    assert _scale("track") == [(0, "Off topic", "Nothing useful."), (1, "On topic", "")]
    assert Membership.objects.filter(
        collection=collection, user__username="olga", role="organiser"
    ).exists()


def test_bad_settings_are_shown_inline_and_nothing_is_created(trial: Collection) -> None:
    cases = [
        (_post("trial", [("0", "No", "")]), "already exists"),
        (_post("bad slug", [("0", "No", "")]), "slug"),
        (_post("fresh", [("0", "No", "")], cutoffs="5, ten"), "write whole numbers"),
        (_post("fresh", [("0", "No", "")], cutoffs="0"), "Cutoffs must be"),
        (_post("fresh", [("1", "a", ""), ("1", "b", "")]), "1 appears twice"),
        (_post("fresh", [("0", "", "")]), "This field is required"),
        (_post("fresh", [("", "", "")]), "at least one level"),
        (_post("fresh", [("150", "x", "")]), "less than or equal to 99"),
    ]
    for data, message in cases:
        response = as_user("olga").post(NEW, data)
        html = response.content.decode()
        assert response.status_code == 400, message
        assert message in html, (message, html[html.find("error-summary") - 50 :][:800])
        assert "Nothing was saved" in html
    assert not Collection.objects.filter(slug__in=["fresh", "bad slug"]).exists()


def _edit(collection: Collection, **fields: Any) -> dict[str, Any]:
    levels = [(str(g.value), g.label, g.definition) for g in collection.grades.all()]
    data = _post(None, levels, **fields)
    data["grades-INITIAL_FORMS"] = str(len(levels))
    return data


def test_rows_of_the_default_scale_left_blank_are_skipped(trial: Collection) -> None:
    data = _post("pair", [("", "", ""), ("1", "Relevant", ""), ("", "", ""), ("", "", "")])
    data["grades-INITIAL_FORMS"] = "4"  # as the new-collection page posts its default rows
    assert as_user("olga").post(NEW, data).status_code == 302
    assert _scale("pair") == [(1, "Relevant", "")]


def test_editing_settings_and_the_scale(
    trial: Collection, django_capture_on_commit_callbacks: Any
) -> None:
    url = "/collections/trial/settings/"
    assert as_user("alice").get(url).status_code == 403
    html = as_user("olga").get(url).content.decode()
    assert 'value="5, 10"' in html and "Slug <code>trial</code>" in html
    data = _edit(trial, name="Trial run", cutoffs="5, 10, 20")
    data["grades-3-label"] = "Key"  # grade 3 renamed
    data["grades-0-DELETE"] = "on"  # grade 0 removed
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user("olga").post(url, data)
    assert response.status_code == 302
    trial.refresh_from_db()
    assert trial.name == "Trial run" and trial.cutoffs == [5, 10, 20]
    assert [(v, lb) for v, lb, _ in _scale("trial")] == [
        (1, "Marginally relevant"),
        (2, "Highly relevant"),
        (3, "Key"),
    ]
    assert not Run.objects.filter(collection=trial, scored_at__isnull=True).exists()  # rescored


def test_a_grade_that_judgements_hold_stays_and_nothing_changes(trial: Collection) -> None:
    services.judgements_import(
        collection=trial, source=io.BytesIO(b"q1 0 d1 3\n"), assessor=UserFactory(username="j")
    )
    data = _edit(trial, name="Renamed")
    data["grades-3-DELETE"] = "on"
    response = as_user("olga").post("/collections/trial/settings/", data)
    assert response.status_code == 400
    assert "Grade 3 is held by 1 judgement" in response.content.decode()
    trial.refresh_from_db()
    assert trial.name == "Trial" and len(_scale("trial")) == 4  # all or nothing
