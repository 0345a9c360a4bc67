"""The served schema states what the server enforces, in forms client generators read."""

import re
import sys
from typing import Any

import pytest
from rest_framework.test import APIClient

from annotations.formats import trec
from annotations.serializers import ID_PATTERN, QID_PATTERN

ERROR_REF = "#/components/schemas/Error"


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return APIClient().get("/api/schema/?format=json").json()  # type: ignore[no-any-return]


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_the_id_pattern_accepts_exactly_what_the_server_accepts() -> None:
    pattern = re.compile(ID_PATTERN)
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # not text: no request body or file can carry one
        value = f"a{chr(code)}b"
        assert (pattern.fullmatch(value) is not None) == (trec.id_problem(value) is None), hex(code)
    assert pattern.fullmatch("") is None and trec.id_problem("") is not None


def test_the_qid_pattern_accepts_exactly_what_the_server_accepts_as_a_qid() -> None:
    pattern = re.compile(QID_PATTERN)
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        for value in (f"{chr(code)}b", f"a{chr(code)}", chr(code)):
            assert (pattern.fullmatch(value) is not None) == (trec.qid_problem(value) is None), hex(
                code
            )
    assert pattern.fullmatch("#q1") is None and trec.qid_problem("#q1") is not None
    assert pattern.fullmatch("q#1") is not None and trec.qid_problem("q#1") is None


def test_every_body_has_one_content_type_multipart_only_for_files(schema: dict[str, Any]) -> None:
    for path, method, operation in _operations(schema):
        body = operation.get("requestBody")
        if body is None:
            continue
        (content_type, media), *others = body["content"].items()
        assert not others, (path, method, list(body["content"]))
        properties = _resolve(schema, media["schema"]).get("properties", {})
        files = [name for name, field in properties.items() if field.get("format") == "binary"]
        if content_type == "multipart/form-data":
            assert files == ["file"], (path, method)
        else:
            assert content_type == "application/json" and not files, (path, method)
        assert all(field.get("format") != "uri" for field in properties.values()), (path, method)


def test_every_operation_documents_its_errors_in_the_error_shape(schema: dict[str, Any]) -> None:
    for path, method, operation in _operations(schema):
        responses = operation["responses"]
        expected = {"400", "401", "406", "429", "500"}
        if "{slug}" in path:
            expected |= {"403", "404"}
        if "requestBody" in operation:
            expected |= {"413", "415"}
        assert expected <= set(responses), (path, method, sorted(responses))
        for status, response in responses.items():
            if status.startswith(("4", "5")):
                media = response["content"]["application/json"]["schema"]
                assert media == {"$ref": ERROR_REF}, (path, method, status)


def test_fields_carry_the_constraints_the_server_checks(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    for component, field, pattern in (
        ("JudgementInput", "qid", QID_PATTERN),
        ("JudgementInput", "docno", ID_PATTERN),
        ("QueryInput", "qid", QID_PATTERN),
        ("DocumentInput", "docno", ID_PATTERN),
        ("RunResult", "qid", QID_PATTERN),
        ("RunUpload", "name", ID_PATTERN),
    ):
        node = components[component]["properties"][field]
        assert (node["minLength"], node["maxLength"], node["pattern"]) == (1, 200, pattern)
    for component in ("CollectionCreate", "PatchedCollectionUpdate"):
        cutoffs = components[component]["properties"]["cutoffs"]
        assert cutoffs["uniqueItems"] is True and cutoffs["minItems"] == 1
        assert cutoffs["items"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    grade = components["JudgementInput"]["properties"]["grade"]
    assert (grade["minimum"], grade["maximum"]) == (-9, 99)
    assert "grade scale" in grade["description"]


def test_query_parameters_state_their_rules(schema: dict[str, Any]) -> None:
    paths = schema["paths"]
    compare = {
        p["name"]: p for p in paths["/api/v1/collections/{slug}/compare/"]["get"]["parameters"]
    }
    for name in ("a", "b"):
        assert compare[name]["required"] is True
        assert compare[name]["schema"]["minLength"] == 1
    for path in ("compare/", "leaderboard/", "runs/{name}/scores/"):
        parameters = paths[f"/api/v1/collections/{{slug}}/{path}"]["get"]["parameters"]
        (k,) = [p for p in parameters if p["name"] == "k"]
        assert "cutoffs" in k["description"] and k["schema"]["type"] == "integer"
