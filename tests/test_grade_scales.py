"""Every collection has a grade scale from the moment it exists, whichever path made it."""

from __future__ import annotations

import importlib
import io
from typing import Any

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotations import services
from annotations.models import DEFAULT_GRADES, Collection, GradeLevel
from tests.factories import CollectionFactory, UserFactory

DEFAULT_VALUES = [value for value, _, _ in DEFAULT_GRADES]


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _scale(slug: str) -> list[tuple[int, str]]:
    return list(GradeLevel.objects.filter(collection__slug=slug).values_list("value", "label"))


def test_a_collection_saved_with_the_orm_gets_the_default_scale(db: None) -> None:
    collection = Collection.objects.create(slug="bare", name="Bare")
    assert _scale("bare") == [(value, label) for value, label, _ in DEFAULT_GRADES]
    collection.name = "Renamed"
    collection.save()  # saving again adds nothing
    assert GradeLevel.objects.filter(collection=collection).count() == 4


def test_the_service_stores_the_scale_it_is_given_or_the_default(db: None) -> None:
    services.collection_create(slug="plain")
    assert [v for v, _ in _scale("plain")] == DEFAULT_VALUES
    services.collection_create(slug="binary", grades=[(0, "No", ""), (1, "Yes", "Useful")])
    assert _scale("binary") == [(0, "No"), (1, "Yes")]


@pytest.mark.parametrize(
    ("grades", "message"),
    [
        ([], "at least one level"),
        ([(1, "a", ""), (1, "b", "")], "1 appears twice"),
        ([(0, "", "")], "grade 0: label"),
        ([(120, "far", "")], "grade 120"),
    ],
)
def test_a_bad_scale_is_refused_and_no_collection_is_made(
    db: None, grades: list[tuple[int, str, str]], message: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        services.collection_create(slug="refused", grades=grades)
    assert message in " ".join(raised.value.messages)
    assert not Collection.objects.filter(slug="refused").exists()


def test_the_cli_gives_the_default_scale(db: None) -> None:
    call_command("create_collection", "cli", stdout=io.StringIO())
    assert [v for v, _ in _scale("cli")] == DEFAULT_VALUES


def test_the_api_gives_the_default_scale_unless_one_is_given(db: None) -> None:
    client = APIClient()
    client.force_authenticate(UserFactory(username="staff", is_staff=True))
    response = client.post("/api/v1/collections/", {"slug": "api"}, format="json")
    assert response.status_code == 201, response.content
    assert [g["value"] for g in response.json()["grades"]] == DEFAULT_VALUES
    body = {"slug": "api2", "grades": [{"value": 0, "label": "No"}, {"value": 2, "label": "Yes"}]}
    assert client.post("/api/v1/collections/", body, format="json").status_code == 201
    assert _scale("api2") == [(0, "No"), (2, "Yes")]


def _admin_post(rows: list[tuple[int, str, str]], slug: str, **extra: str) -> dict[str, str]:
    data = {
        "slug": slug,
        "name": slug,
        "description": "",
        "gain": "linear",
        "cutoffs": "[5, 10]",
        "missing_queries": "zero",
        "aggregation": "median",
        "stale_judgements": "count",
        "machine_grades": "assessor",
        "grades-TOTAL_FORMS": str(len(rows)),
        "grades-INITIAL_FORMS": "0",
        "grades-MIN_NUM_FORMS": "0",
        "grades-MAX_NUM_FORMS": "1000",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for index, (value, label, definition) in enumerate(rows):
        data[f"grades-{index}-value"] = str(value)
        data[f"grades-{index}-label"] = label
        data[f"grades-{index}-definition"] = definition
    data.update(extra)
    return data


@pytest.fixture
def admin_client_(db: None, client: Client) -> Client:
    client.force_login(UserFactory(username="boss", is_staff=True, is_superuser=True))
    return client


def test_the_admin_add_form_starts_from_the_default_scale(admin_client_: Client) -> None:
    html = admin_client_.get(reverse("admin:annotations_collection_add")).content.decode()
    for _, label, _ in DEFAULT_GRADES:
        assert f'value="{label}"' in html


def test_the_admin_saves_the_default_rows_it_showed(admin_client_: Client) -> None:
    response = admin_client_.post(
        reverse("admin:annotations_collection_add"), _admin_post(list(DEFAULT_GRADES), "adm")
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert [v for v, _ in _scale("adm")] == DEFAULT_VALUES


def test_the_admin_saves_a_custom_scale(admin_client_: Client) -> None:
    rows = [(0, "Off", ""), (1, "On", ""), (4, "Key", "The one document to read.")]
    response = admin_client_.post(
        reverse("admin:annotations_collection_add"), _admin_post(rows, "custom")
    )
    assert response.status_code == 302
    assert _scale("custom") == [(0, "Off"), (1, "On"), (4, "Key")]


def test_the_admin_refuses_a_collection_without_a_scale(admin_client_: Client) -> None:
    response = admin_client_.post(
        reverse("admin:annotations_collection_add"), _admin_post([], "empty")
    )
    assert response.status_code == 200
    assert "A collection needs at least one grade level." in response.content.decode()
    assert not Collection.objects.filter(slug="empty").exists()


def test_the_admin_keeps_a_grade_that_judgements_hold(admin_client_: Client) -> None:
    collection = CollectionFactory(slug="held")
    services.judgements_import(
        collection=collection, source=io.BytesIO(b"q1 0 d1 3\n"), assessor=UserFactory()
    )
    levels = list(collection.grades.all())
    data = _admin_post([], "held")
    data.update({"grades-TOTAL_FORMS": "4", "grades-INITIAL_FORMS": "4"})
    for index, level in enumerate(levels):
        data[f"grades-{index}-id"] = str(level.id)
        data[f"grades-{index}-collection"] = str(collection.id)
        data[f"grades-{index}-value"] = str(level.value)
        data[f"grades-{index}-label"] = level.label
        data[f"grades-{index}-definition"] = level.definition
    data["grades-3-DELETE"] = "on"  # grade 3
    url = reverse("admin:annotations_collection_change", args=[collection.id])
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert "Grade 3 is held by 1 judgement" in response.content.decode()
    assert [v for v, _ in _scale("held")] == DEFAULT_VALUES


def test_the_migration_gives_scale_less_collections_the_default(db: None) -> None:
    kept = services.collection_create(slug="kept", grades=[(0, "No", ""), (1, "Yes", "")])
    bare = services.collection_create(slug="bare")
    GradeLevel.objects.filter(collection=bare).delete()  # as the admin once left them
    migration = importlib.import_module(
        "annotations.migrations.0007_collection_grade_scale_and_blinding"
    )
    migration.give_default_scales(apps, None)
    assert [v for v, _ in _scale("bare")] == DEFAULT_VALUES
    assert _scale(kept.slug) == [(0, "No"), (1, "Yes")]


def test_replacing_a_scale_keeps_grades_that_judgements_hold(db: None) -> None:
    collection = CollectionFactory(slug="edit")
    services.judgements_import(
        collection=collection, source=io.BytesIO(b"q1 0 d1 2\n"), assessor=UserFactory()
    )
    before = Collection.objects.get(id=collection.id).updated
    services.collection_grades_set(
        collection=collection, grades=[(0, "No", ""), (2, "Yes", "Defined")]
    )
    assert _scale("edit") == [(0, "No"), (2, "Yes")]
    assert Collection.objects.get(id=collection.id).updated > before  # leaderboards recompute
    with pytest.raises(ValidationError) as raised:
        services.collection_grades_set(collection=collection, grades=[(0, "No", "")])
    assert "Grade 2 is held by 1 judgement" in " ".join(raised.value.messages)
    assert _scale("edit") == [(0, "No"), (2, "Yes")]


def test_a_scale_no_assessor_could_use_is_refused_and_the_editor_says_how_grades_are_keyed(
    trial: Any,
) -> None:
    many = [(value, f"level {value}", "") for value in range(21)]
    with pytest.raises(ValidationError, match="A scale of 21 levels is more than assessors"):
        services.collection_grades_set(collection=trial, grades=many)
    assert services.collection_grades_set(collection=trial, grades=many[:20])
    client = Client()
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="olga"))
    page = client.get("/collections/trial/settings/").content.decode()
    assert "saved on Enter or after a short pause" in page and "At most 20 levels" in page
