"""Every id the platform accepts can be shown, linked and addressed on every page and
endpoint: ids with / % ? # + . .. \\ " ' ~ and non-ASCII letters, imported through the
command line and the API, then requested everywhere they appear. Never a 5xx; every one 200."""

import io
import itertools
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotations.converters import id_to_segment, segment_to_id
from annotations.formats import trec
from annotations.models import Membership, Run
from tests.factories import CollectionFactory, UserFactory

_SPECIAL = "/%?#+.\\\"'~é日ß"
_ids = st.one_of(
    st.sampled_from([".", "..", "a/b", "~2F", "%2F", "q?x=1#f", "\\\\", "'\"", "naïve"]),
    st.text(alphabet=_SPECIAL + "abc019-_", min_size=1, max_size=12),
).filter(lambda value: trec.qid_problem(value) is None)
_slugs = itertools.count()


@given(value=st.text(min_size=1, max_size=30).filter(lambda v: trec.id_problem(v) is None))
def test_a_segment_names_its_id_and_never_a_path_separator(value: str) -> None:
    segment = id_to_segment(value)
    assert "/" not in segment and segment not in {".", ".."}
    assert segment_to_id(segment) == value


@pytest.mark.django_db(transaction=True)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(qid=_ids, docno=_ids, run_name=_ids, api_run=_ids)
def test_ids_imported_by_command_and_api_are_reachable_everywhere(
    tmp_path: Path, qid: str, docno: str, run_name: str, api_run: str
) -> None:
    if run_name == api_run:
        api_run += "2"
    slug = f"ids-{next(_slugs)}"
    collection = CollectionFactory(slug=slug, cutoffs=[5])
    organiser = UserFactory()
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    qrels, run = tmp_path / f"{slug}.qrels", tmp_path / f"{slug}.run"
    qrels.write_text(f"{qid} 0 {docno} 2\n", encoding="utf-8")
    run.write_text(f"{qid} Q0 {docno} 1 1.0 {run_name}\n", encoding="utf-8")
    quiet = {"stdout": io.StringIO(), "stderr": io.StringIO()}
    call_command("import_qrels", slug, str(qrels), **quiet)
    call_command("import_run", slug, str(run), **quiet)

    api = APIClient()
    api.force_authenticate(organiser)
    base = f"/api/v1/collections/{slug}"
    body = {"results": [{"qid": qid, "docno": docno}]}
    results_url = reverse("api:run-results", args=[slug, api_run])
    assert api.put(results_url, body, format="json").status_code == 201
    judgement = {"qid": qid, "docno": docno, "grade": 1}
    assert api.post(f"{base}/judgements/", judgement, format="json").status_code == 201
    assert set(Run.objects.filter(collection=collection).values_list("name", flat=True)) == {
        run_name,
        api_run,
    }

    pages = Client()
    pages.force_login(organiser)
    for url in (
        reverse("leaderboard", args=[slug]),
        reverse("collection-detail", args=[slug]),
        reverse("run-detail", args=[slug, run_name]),
        reverse("run-detail", args=[slug, api_run]),
        reverse("query-detail", args=[slug, qid]) + "?" + _query(a=run_name, b=api_run),
    ):
        response = pages.get(url)
        assert response.status_code == 200, (url, response.status_code)
    for url in (
        reverse("api:run", args=[slug, run_name]),
        reverse("api:run-scores", args=[slug, api_run]),
        reverse("api:judgement", args=[slug, qid, docno]),
        f"{base}/leaderboard/",
        f"{base}/compare/?" + _query(a=run_name, b=api_run),
        f"{base}/judgements/?" + _query(qid=qid, docno=docno),
        f"{base}/qrels/",
    ):
        response = api.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:200])
    assert api.delete(reverse("api:run", args=[slug, api_run])).status_code == 204
    assert not Run.objects.filter(collection=collection, name=api_run).exists()


def _query(**params: Any) -> str:
    from urllib.parse import urlencode

    return urlencode(params)
