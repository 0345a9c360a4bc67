"""Stale judgements: a document whose text changes under its judgements."""

import json
from collections.abc import Callable
from pathlib import Path

from django.core.management import call_command
from django.test import Client

from annotations import scores, selectors, services
from annotations.models import Collection, Judgement, JudgementHistory, Membership
from annotations.services.stale import pool_of_stale_build
from tests.factories import CollectionFactory, UserFactory
from tests.stored import run_score

DOCS = {"d1": "solar cells", "d2": "wind farms", "d3": "tidal power"}
RUN = "q1 Q0 d1 1 3 sys\nq1 Q0 d2 2 2 sys\nq1 Q0 d3 3 1 sys\n"


def _documents(texts: dict[str, str]) -> str:
    return "".join(json.dumps({"docno": d, "title": d, "text": t}) + "\n" for d, t in texts.items())


def _campaign(write_file: Callable[..., Path], slug: str = "campaign") -> Collection:
    collection = CollectionFactory(slug=slug, cutoffs=[3])
    services.documents_import(
        collection=collection, source=write_file(f"{slug}.jsonl", _documents(DOCS))
    )
    services.judgements_import(
        collection=collection,
        source=write_file(f"{slug}.qrels", "q1 0 d1 3\nq1 0 d2 1\nq1 0 d3 0\n"),
        assessor=UserFactory(username=f"{slug}-import"),
    )
    services.run_import(collection=collection, source=write_file(f"{slug}.run", RUN))
    return collection


def _change_d1(collection: Collection, write_file: Callable[..., Path]) -> None:
    changed = {**DOCS, "d1": "solar cells, now about something else entirely"}
    services.documents_import(
        collection=collection, source=write_file("changed.jsonl", _documents(changed))
    )


def _ndcg(collection: Collection) -> float:
    return run_score(run__collection=collection, k=3).ndcg


def test_a_changed_document_marks_its_judgements_stale_with_history(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    campaign = _campaign(write_file)
    before = _ndcg(campaign)
    services.documents_import(  # the same text again: nothing is stale
        collection=campaign, source=write_file("same.jsonl", _documents(DOCS))
    )
    assert not Judgement.objects.filter(stale=True).exists()
    _change_d1(campaign, write_file)
    stale = Judgement.objects.filter(stale=True)
    assert list(stale.values_list("document__docno", flat=True)) == ["d1"]
    history = JudgementHistory.objects.get(source="stale")
    assert (history.document.docno, history.old_grade, history.new_grade) == ("d1", 3, 3)
    # counted by default: the scores stay what they were
    assert _ndcg(campaign) == before and scores.scores_verify(collection=campaign) == []


def test_text_first_given_after_the_judgement_is_not_a_change(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    collection = CollectionFactory(slug="late", cutoffs=[3])
    services.judgements_import(  # documents created on the fly, with no text yet
        collection=collection,
        source=write_file("late.qrels", "q1 0 d1 3\n"),
        assessor=UserFactory(username="late-import"),
    )
    services.documents_import(
        collection=collection, source=write_file("late.jsonl", _documents(DOCS))
    )
    assert not Judgement.objects.filter(stale=True).exists()


def test_excluded_stale_judgements_leave_scoring_until_judged_again(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    campaign = _campaign(write_file)
    _change_d1(campaign, write_file)
    services.collection_update(collection=campaign, stale_judgements="exclude")
    # as a collection whose qrels lack d1
    without = _campaign(write_file, slug="without")
    services.judgement_delete(
        judgement=Judgement.objects.get(query__collection=without, document__docno="d1"),
        source="api",
    )
    assert _ndcg(campaign) == _ndcg(without)
    export = b"".join(selectors.qrels_lines(collection=campaign)).decode()
    assert "d1" not in export and "q1 0 d2 1" in export
    assert scores.scores_verify(collection=campaign) == []
    # the same grade given again clears the mark: d1 counts again
    judgement = Judgement.objects.get(query__collection=campaign, document__docno="d1")
    services.judgement_record(
        query=judgement.query,
        document=judgement.document,
        assessor=judgement.assessor,
        grade=3,
        source="form",
    )
    judgement.refresh_from_db()
    assert not judgement.stale
    full = _campaign(write_file, slug="full")
    assert _ndcg(campaign) == _ndcg(full)


def test_stale_pairs_go_to_a_pool_from_the_page_and_the_command(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    campaign = _campaign(write_file)
    olga = UserFactory(username="olga-stale")
    Membership.objects.create(collection=campaign, user=olga, role=Membership.ORGANISER)
    client = Client()
    client.force_login(olga)
    pools = f"/collections/{campaign.slug}/pools/"
    assert 'id="stale-judgements"' not in client.get(pools).content.decode()
    _change_d1(campaign, write_file)
    page = client.get(pools).content.decode()
    assert 'id="stale-judgements"' in page and "1 judged pair has" in page
    response = client.post(f"{pools}stale/", {"name": "rejudge"})
    assert response.status_code == 302
    pool = campaign.pools.get(name="rejudge")
    entry = pool.entries.get()
    assert (entry.query.qid, entry.document.docno, entry.best_position) == ("q1", "d1", 1)
    _, added = pool_of_stale_build(collection=campaign, name="rejudge")
    assert added == 0  # already there
    refused = client.post(f"{pools}stale/", {"name": "re judge\x00"}, follow=True)
    assert "A pool name is letters" in refused.content.decode()
    assert not campaign.pools.filter(name__startswith="re ").exists()
    from io import StringIO

    out = StringIO()
    call_command("build_pool", campaign.slug, "--name", "second", "--stale", stdout=out)
    assert "1 stale pairs added" in out.getvalue()
    query_page = client.get(f"/collections/{campaign.slug}/queries/q1/").content.decode()
    assert 'class="badge stale"' in query_page


def test_the_api_shows_and_filters_stale_judgements(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    from rest_framework.test import APIClient

    campaign = _campaign(write_file)
    _change_d1(campaign, write_file)
    olga = UserFactory(username="olga-api-stale")
    Membership.objects.create(collection=campaign, user=olga, role=Membership.ORGANISER)
    client = APIClient()
    client.force_authenticate(olga)
    base = f"/api/v1/collections/{campaign.slug}"
    stale = client.get(f"{base}/judgements/?stale=true").json()["results"]
    assert [(row["docno"], row["stale"]) for row in stale] == [("d1", True)]
    fresh = client.get(f"{base}/judgements/?stale=false").json()["results"]
    assert sorted(row["docno"] for row in fresh) == ["d2", "d3"]
    changed = client.patch(f"{base}/", {"stale_judgements": "exclude"}, format="json")
    assert changed.status_code == 200 and changed.json()["stale_judgements"] == "exclude"
    export = b"".join(client.get(f"{base}/qrels/").streaming_content).decode()
    assert "d1" not in export
