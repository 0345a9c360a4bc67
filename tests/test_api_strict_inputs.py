"""The API refuses what its schema forbids, with a 400 naming the field or parameter, instead
of coercing or ignoring it; and its schema states what the server refuses."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from annotations import services
from annotations.formats import trec
from annotations.models import Collection, Judgement, Membership, Run
from annotations.serializers import fields
from tests.factories import UserFactory

API = "/api/v1/collections/strict"


@pytest.fixture(autouse=True)
def _fresh_throttles() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def collection(db: None) -> Collection:
    collection = services.collection_create(slug="strict", name="Strict", cutoffs=[5, 10])
    services.queries_store(collection=collection, queries=[services.QueryFields("q1", "one")])
    services.documents_store(
        collection=collection, documents=[services.DocumentFields("d1", "doc one")]
    )
    services.run_store(collection=collection, run_name="r1", results={"q1": [("d1", None, 1)]})
    return collection


@pytest.fixture
def organiser(collection: Collection) -> APIClient:
    user = UserFactory(username="olga")
    Membership.objects.create(collection=collection, user=user, role="organiser")
    client = APIClient()
    client.force_authenticate(user)
    return client


def _refused(response: Any, name: str) -> str:
    """The message a 400 gives for `name`, asserting it is one."""
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert name in error["fields"], error
    return str(error["fields"][name][0])


# --- a read-only field written --------------------------------------------------------------


def test_a_patch_writing_the_read_only_grades_is_a_400_naming_them_and_changes_nothing(
    organiser: APIClient, collection: Collection
) -> None:
    grades = [{"value": 0, "label": "no"}, {"value": 1, "label": "yes"}]
    response = organiser.patch(f"{API}/", {"name": "Renamed", "grades": grades}, format="json")
    assert "read-only" in _refused(response, "grades")
    collection.refresh_from_db()
    assert collection.name == "Strict"
    assert [g.value for g in collection.grades.order_by("value")] == [0, 1, 2, 3]


@pytest.mark.parametrize("name", ["slug", "roles", "created", "updated"])
def test_a_patch_writing_any_field_the_collection_only_reports_is_a_400(
    organiser: APIClient, name: str
) -> None:
    body = organiser.get(f"{API}/").json()  # what a client read, sent back
    response = organiser.patch(f"{API}/", {name: body[name]}, format="json")
    assert "read-only" in _refused(response, name)


def test_a_patch_of_writable_settings_still_applies_them(
    organiser: APIClient, collection: Collection
) -> None:
    response = organiser.patch(f"{API}/", {"name": "Renamed", "cutoffs": [3]}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["name"], response.json()["cutoffs"]) == ("Renamed", [3])


def test_a_put_of_json_results_writing_the_run_owner_is_a_400_and_stores_nothing(
    organiser: APIClient,
) -> None:
    body = {"owner": "someone", "results": [{"qid": "q1", "docno": "d1"}]}
    response = organiser.put(f"{API}/runs/new/results/", body, format="json")
    assert "read-only" in _refused(response, "owner")
    assert not Run.objects.filter(name="new").exists()


# --- limit and offset -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("offset=null", "offset"),
        ("offset=-1", "offset"),
        ("offset=", "offset"),
        ("offset=1.5", "offset"),
        ("offset=%C2%B2", "offset"),  # a superscript 2: a digit to str.isdigit, no number
        ("limit=0", "limit"),
        ("limit=true", "limit"),
        ("limit=null&offset=0", "limit"),
        ("limit=10001", "limit"),  # over the schema's maximum
        (f"limit={'9' * 40}", "limit"),
    ],
)
def test_limit_and_offset_other_than_whole_numbers_are_a_400_naming_them(
    organiser: APIClient, query: str, name: str
) -> None:
    _refused(organiser.get(f"{API}/queries/?{query}"), name)


def test_limit_and_offset_in_range_page_as_before(organiser: APIClient) -> None:
    page = organiser.get(f"{API}/queries/?limit=1&offset=0")
    assert page.status_code == 200 and [q["qid"] for q in page.json()["results"]] == ["q1"]
    beyond = organiser.get(f"{API}/queries/?limit=10000&offset={'9' * 40}")
    assert beyond.status_code == 200 and beyond.json()["results"] == []


def test_the_schema_bounds_limit_and_offset(organiser: APIClient) -> None:
    schema = organiser.get("/api/schema/?format=json").json()
    parameters = schema["paths"]["/api/v1/collections/{slug}/queries/"]["get"]["parameters"]
    bounds = {p["name"]: p["schema"].get("minimum") for p in parameters}
    assert (bounds["limit"], bounds["offset"]) == (1, 0)


# --- filters --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("updated_after=", "updated_after"),
        ("stale=", "stale"),
        ("stale=maybe", "stale"),
        ("stale=1", "stale"),
        ("grade=", "grade"),
        ("grade_max=0.5", "grade_max"),
    ],
)
def test_a_blank_or_mistyped_filter_is_a_400_naming_it(
    organiser: APIClient, query: str, name: str
) -> None:
    _refused(organiser.get(f"{API}/judgements/?{query}"), name)


@pytest.mark.parametrize(
    ("path", "query", "name"),
    [("queries/", "judged=yes", "judged"), ("runs/", "pending=", "pending")],
)
def test_boolean_filters_take_true_or_false_only(
    organiser: APIClient, path: str, query: str, name: str
) -> None:
    _refused(organiser.get(f"{API}/{path}?{query}"), name)
    assert organiser.get(f"{API}/{path}?{name}=false").status_code == 200


def test_a_blank_text_filter_filters_nothing_as_its_schema_allows(
    organiser: APIClient, collection: Collection
) -> None:
    response = organiser.get(f"{API}/queries/?qid=&title=")
    assert response.status_code == 200 and response.json()["count"] == 1


@pytest.mark.parametrize(
    ("moment", "count"),
    [("0001-01-01T00:00:00%2B18:00", 1), ("9999-12-31T23:59:59-23:59", 0)],
)
def test_updated_after_beyond_the_years_utc_holds_is_every_judgement_or_none(
    organiser: APIClient, collection: Collection, moment: str, count: int
) -> None:
    services.judgement_upsert(
        query=collection.queries.get(qid="q1"),
        document=collection.documents.get(docno="d1"),
        assessor=UserFactory(),
        grade=1,
        source="api",
    )
    response = organiser.get(f"{API}/judgements/?updated_after={moment}")
    assert response.status_code == 200, response.content
    assert response.json()["count"] == count


# --- JSON types -----------------------------------------------------------------------------


def test_a_number_for_a_name_is_a_400_not_the_string_of_it(organiser: APIClient) -> None:
    response = organiser.post("/api/v1/collections/", {"slug": "zero", "name": 0}, format="json")
    _refused(response, "name")
    assert not Collection.objects.filter(slug="zero").exists()
    _refused(organiser.patch(f"{API}/", {"name": 0}, format="json"), "name")


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ({"qid": "q1", "docno": "d1", "grade": "2"}, "grade"),
        ({"qid": "q1", "docno": "d1", "grade": True}, "grade"),
        ({"qid": "q1", "docno": "d1", "grade": 1.5}, "grade"),
        ({"qid": "q1", "docno": "d1", "grade": 2, "note": 7}, "note"),
        ({"qid": 1, "docno": "d1", "grade": 2}, "qid"),
    ],
)
def test_a_judgement_value_of_another_json_type_is_a_400_and_records_nothing(
    organiser: APIClient, body: dict[str, Any], name: str
) -> None:
    _refused(organiser.post(f"{API}/judgements/", body, format="json"), name)
    assert not Judgement.objects.exists()


def test_an_integral_number_is_an_integer_as_json_schema_has_it(organiser: APIClient) -> None:
    body = {"qid": "q1", "docno": "d1", "grade": 2.0}
    response = organiser.post(f"{API}/judgements/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["grade"] == 2


@pytest.mark.parametrize(
    ("change", "name"),
    [({"public_leaderboard": "true"}, "public_leaderboard"), ({"cutoffs": ["5"]}, "cutoffs")],
)
def test_a_patch_with_a_string_for_a_boolean_or_integer_is_a_400(
    organiser: APIClient, change: dict[str, Any], name: str
) -> None:
    _refused(organiser.patch(f"{API}/", change, format="json"), name)


def test_a_boolean_score_is_a_400_naming_the_result(organiser: APIClient) -> None:
    body = {"results": [{"qid": "q1", "docno": "d1", "score": False}]}
    response = organiser.put(f"{API}/runs/new/results/", body, format="json")
    _refused(response, "results[0].score")


def test_an_id_with_surrounding_whitespace_is_refused_not_trimmed(organiser: APIClient) -> None:
    body = {"qid": " q1", "docno": "d1", "grade": 2}
    assert "whitespace" in _refused(
        organiser.post(f"{API}/judgements/", body, format="json"), "qid"
    )


def test_a_title_holding_a_control_character_is_a_400_naming_the_field(
    organiser: APIClient,
) -> None:
    response = organiser.post(f"{API}/queries/", [{"qid": "q9", "title": "a\x01b"}], format="json")
    assert "U+0001" in _refused(response, "[0].title")


# --- k and the request target ---------------------------------------------------------------


@pytest.mark.parametrize("k", ["%C2%B2", "9" * 3000, "", "10.0"])
def test_a_k_that_is_no_whole_number_is_a_400_naming_it(organiser: APIClient, k: str) -> None:
    _refused(organiser.get(f"{API}/leaderboard/?k={k}"), "k")


def test_a_request_target_over_the_limit_is_a_documented_414_in_the_error_shape(
    organiser: APIClient,
) -> None:
    response = organiser.get(f"{API}/queries/?title={'x' * 4000}")
    assert response.status_code == 414
    assert response.json()["error"]["code"] == "request_target_too_long"
    assert organiser.get(f"{API}/queries/?title={'x' * 3900}").status_code == 200
    schema = organiser.get("/api/schema/?format=json").json()
    documented = schema["paths"]["/api/v1/collections/{slug}/queries/"]["get"]["responses"]
    assert set(documented["414"]["content"]) == {"application/json"}  # gunicorn's too


# --- the schema says what the fields refuse --------------------------------------------------


def test_the_text_pattern_accepts_exactly_what_text_fields_accept() -> None:
    pattern = re.compile(f"^[^{fields.TEXT_FORBIDDEN}]*$")
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        value = f"a{chr(code)}b"
        assert (pattern.fullmatch(value) is not None) == (trec.text_problem(value) is None), hex(
            code
        )


def test_the_pattern_of_a_trimmed_field_that_may_not_be_blank_refuses_only_whitespace() -> None:
    from rest_framework import serializers

    field = serializers.CharField()
    pattern = re.compile(fields.string_pattern(field))
    for code in range(0x3100):  # NUL and every character str.strip() removes are below U+3100
        value = chr(code) * 2
        try:
            field.run_validation(value)
            accepted = True
        except serializers.ValidationError:
            accepted = False
        assert (pattern.fullmatch(value) is not None) == accepted, hex(code)


def test_request_bodies_state_what_their_fields_refuse(organiser: APIClient) -> None:
    components = organiser.get("/api/schema/?format=json").json()["components"]["schemas"]
    patch = components["PatchedCollectionUpdate"]["properties"]
    # A body only ever sent lists no read-only field (a generated client would offer it as
    # settable); naming one is still a 400 (the tests above).
    assert not {"slug", "grades", "roles", "created"} & set(patch)
    assert not {"owner", "created", "pending"} & set(components["RunUpload"]["properties"])
    assert patch["name"]["minLength"] == 1
    assert components["GradeLevel"]["properties"]["label"]["minLength"] == 1
    assert components["CollectionCreate"]["properties"]["grades"]["minItems"] == 1
    assert components["RunJson"]["properties"]["results"]["minItems"] == 1
    assert "owner" not in components["RunJson"].get("required", [])
    title = components["QueryInput"]["properties"]["title"]["pattern"]
    assert re.fullmatch(title, "tab\tok") and not re.fullmatch(title, "a\x01b")
    note = components["JudgementInput"]["properties"]["note"]["pattern"]
    assert re.fullmatch(note, "") and not re.fullmatch(note, "a\x00b")
    token = components["TokenRequest"]["properties"]
    assert token["username"]["minLength"] == token["password"]["minLength"] == 1
