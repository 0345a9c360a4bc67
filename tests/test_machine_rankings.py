"""The leaderboard under each rule for machine grades, side by side: each column is the
leaderboard that rule gives (bit for bit), with tau and tau_ap against people only."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from annotations import services
from annotations.metrics.machine_grades import MACHINE_RULES
from annotations.metrics.rank_correlation import kendall_tau_b, tau_ap
from annotations.models import Collection, Document, Query
from annotations.selectors.machine_rankings import machine_rules_comparison
from annotations.selectors.stored_scores import run_means_at
from tests.factories import CollectionFactory, UserFactory, machine_judge, record_grades


def _random_collection(seed: int, missing: str) -> Collection:
    """Eight runs over nine queries (some skipped), judged by two people and a machine: some
    pairs by both, some only by the machine, one query only by the machine."""
    rng = random.Random(seed)
    collection = CollectionFactory(slug=f"mixed-{seed}-{missing}", cutoffs=[3, 10])
    services.collection_update(collection=collection, missing_queries=missing)
    qids = [f"q{i}" for i in range(1, 10)]
    docnos = [f"d{i:02d}" for i in range(12)]
    Query.objects.bulk_create(Query(collection=collection, qid=qid) for qid in qids)
    Document.objects.bulk_create(Document(collection=collection, docno=d) for d in docnos)
    for run in range(8):
        services.run_store(
            collection=collection,
            run_name=f"run-{run}",
            results={
                qid: [(d, float(10 - i), i + 1) for i, d in enumerate(rng.sample(docnos, 6))]
                for qid in qids
                if rng.random() > 0.15
            },
        )
    people = [UserFactory(username=f"person-{seed}-{i}") for i in range(2)]
    for who in people:
        record_grades(collection, who, {
            (qid, d): rng.randint(0, 3)
            for qid in qids[:-1] for d in docnos if rng.random() < 0.3
        })  # fmt: skip
    machine = machine_judge(collection)
    record_grades(collection, machine.account, {
        (qid, d): rng.randint(0, 3) for qid in qids for d in docnos if rng.random() < 0.5
    })  # fmt: skip
    return collection


@pytest.mark.parametrize(("seed", "missing"), [(1, "zero"), (2, "skip"), (3, "zero")])
def test_each_column_is_the_leaderboard_its_rule_gives_bit_for_bit(
    transactional_db: None, seed: int, missing: str
) -> None:
    collection = _random_collection(seed, missing)
    for k in (3, 10):
        comparisons = {}
        for rule in MACHINE_RULES:
            services.collection_update(collection=collection, machine_grades=rule)
            collection.refresh_from_db()
            comparison = machine_rules_comparison(collection=collection, k=k)
            assert comparison is not None
            leaderboard = {mean.run.name: mean.ndcg for mean in run_means_at(collection, k)}
            assert comparison.rule(rule).means == leaderboard  # every bit
            comparisons[rule] = comparison
        # The same comparison whatever the collection's own rule.
        first = comparisons["people"]
        assert all(c.rules == first.rules for c in comparisons.values())
        people = first.rule("people")
        for ranking in first.rules:
            names = sorted(people.means)
            assert ranking.tau == kendall_tau_b(
                [people.means[n] for n in names], [ranking.means[n] for n in names]
            )
            assert ranking.tau_ap == tau_ap(people.ranking, ranking.ranking)
        assert people.queries == 8 and first.rule("fill").queries == 9  # q9: machine only
        for move in first.moves:
            assert move.spread > 0
            assert move.ranks == {r.rule: r.ranking.index(move.run) + 1 for r in first.rules}


def test_runs_that_move_when_the_machine_fills_are_listed(moving: Collection) -> None:
    collection = moving
    comparison = machine_rules_comparison(collection=collection, k=2)
    assert comparison is not None
    assert (comparison.machine_pairs, comparison.filled_pairs, comparison.queries) == (2, 1, 1)
    assert comparison.rule("people").ranking == ["first", "second"]
    assert comparison.rule("fill").ranking == ["second", "first"]  # d filled with 3
    assert comparison.rule("fill").tau == -1.0
    assert [m.means for m in comparison.moves] == [
        {rule: comparison.rule(rule).means[m.run] for rule in ("people", "fill", "assessor")}
        for m in comparison.moves
    ]
    assert [(m.run, m.ranks) for m in comparison.moves] == [
        ("first", {"people": 1, "fill": 2, "assessor": 2}),
        ("second", {"people": 2, "fill": 1, "assessor": 1}),
    ]


def test_no_comparison_without_machine_grades(trial: Collection) -> None:
    assert machine_rules_comparison(collection=trial, k=5) is None
    machine_judge(trial)  # a judge that has graded nothing yet
    assert machine_rules_comparison(collection=trial, k=5) is None


# --- the agreement page, the leaderboard and the API ---------------------------------------


@pytest.fixture
def moving(transactional_db: None) -> Collection:
    """One query, two runs that swap places when the machine fills an unjudged pair; organiser
    olga, assessor alice; machine grades count as one assessor."""
    from tests.factories import MembershipFactory

    collection = CollectionFactory(slug="moves", cutoffs=[2], machine_grades="assessor")
    Query.objects.create(collection=collection, qid="q1")
    Document.objects.bulk_create(Document(collection=collection, docno=d) for d in "abcd")
    for name, docs in {"first": "ab", "second": "cd"}.items():
        services.run_store(
            collection=collection,
            run_name=name,
            results={"q1": [(d, 2.0 - i, i + 1) for i, d in enumerate(docs)]},
        )
    for username, role in (("olga", "organiser"), ("alice", "assessor")):
        MembershipFactory(collection=collection, user=UserFactory(username=username), role=role)
    alice = get_user_model().objects.get(username="alice")
    record_grades(collection, alice, {("q1", "a"): 1, ("q1", "c"): 0})
    record_grades(collection, machine_judge(collection).account, {("q1", "c"): 3, ("q1", "d"): 3})
    return collection


def _client(username: str) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def test_the_agreement_page_shows_each_rule_and_the_runs_that_move(moving: Collection) -> None:
    page = _client("olga").get("/collections/moves/agreement/?k=2").content.decode()
    assert "One assessor among the people" in page  # the collection's rule, by name
    assert 'id="machine-rules-tau">-1.000<' in page
    assert "2 pairs graded by a machine, 1 of them judged by no person, over 1 query" in page
    moves = page[page.index('id="machine-rules-moves"') :]
    assert moves.index('data-run="first"') < moves.index('data-run="second"')
    assert '<td class="num" data-rule="fill">2 <small>' in moves


def test_the_leaderboard_says_how_machine_grades_count_and_links_organisers(
    moving: Collection,
) -> None:
    services.collection_update(collection=moving, machine_grades="people")
    olga = _client("olga").get("/collections/moves/leaderboard/?k=2").content.decode()
    assert "Only people's grades are scored here." in olga
    assert 'id="machine-rules-link"' in olga
    services.collection_publish(collection=moving, public=True)
    from django.test import Client

    anonymous = Client().get("/collections/moves/leaderboard/?k=2").content.decode()
    assert "Only people's grades are scored here." in anonymous
    assert 'id="machine-rules-link"' not in anonymous


def test_the_api_gives_the_comparison_to_organisers_only(moving: Collection) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username="olga"))
    body = client.get("/api/v1/collections/moves/machine-grades/?k=2").json()
    assert (body["rule"], body["machine_pairs"], body["filled_pairs"]) == ("assessor", 2, 1)
    assert [row["rule"] for row in body["rules"]] == ["people", "fill", "assessor"]
    assert body["rules"][1]["ranking"] == ["second", "first"] and body["rules"][1]["tau"] == -1
    assert body["moves"][0]["ranks"] == {"people": 1, "fill": 2, "assessor": 2}
    client.force_authenticate(get_user_model().objects.get(username="alice"))
    assert client.get("/api/v1/collections/moves/machine-grades/").status_code == 403


def test_the_rule_is_set_on_the_settings_page_and_through_the_api(moving: Collection) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username="olga"))
    url = "/api/v1/collections/moves/"
    assert client.patch(url, {"machine_grades": "fill"}, format="json").status_code == 200
    assert client.get(url).json()["machine_grades"] == "fill"
    refused = client.patch(url, {"machine_grades": "both"}, format="json")
    assert refused.status_code == 400
    assert "machine_grades" in refused.json()["error"]["fields"]
    page = _client("olga").get("/collections/moves/settings/").content.decode()
    radio = r'<input type="radio" name="machine_grades" value="(\w+)"([^>]*)>'
    radios = dict(re.findall(radio, page))
    assert sorted(radios) == ["assessor", "fill", "people"]
    assert [rule for rule, attrs in radios.items() if " checked" in attrs] == ["fill"]
    assert 'aria-describedby="id_machine_grades_1_description"' in radios["fill"]


@pytest.mark.browser
def test_the_section_at_tens_of_runs_with_long_names_passes_axe_and_fits_390_px(  # type: ignore[no-untyped-def]
    transactional_db: None, browser, live_server
) -> None:
    from tests.conftest import browser_page, log_in
    from tests.factories import MembershipFactory
    from tests.test_browser_accessibility import PHONE, page_problems

    rng = random.Random(7)
    collection = CollectionFactory(slug="many", cutoffs=[5])
    qids = [f"q{i}" for i in range(12)]
    docnos = [f"d{i}" for i in range(20)]
    Query.objects.bulk_create(Query(collection=collection, qid=qid) for qid in qids)
    Document.objects.bulk_create(Document(collection=collection, docno=d) for d in docnos)
    for run in range(30):
        services.run_store(
            collection=collection,
            run_name=f"run-{run:02d}-" + "n" * 143,  # 150 characters
            results={
                qid: [(d, float(10 - i), i + 1) for i, d in enumerate(rng.sample(docnos, 8))]
                for qid in qids
            },
        )
    MembershipFactory(collection=collection, user=UserFactory(username="olga"), role="organiser")
    person = UserFactory(username="alice")
    record_grades(collection, person, {(q, d): rng.randint(0, 3) for q in qids for d in docnos[:6]})
    machine = machine_judge(collection, "judge-" + "y" * 54)
    record_grades(
        collection, machine.account, {(q, d): rng.randint(0, 3) for q in qids for d in docnos}
    )
    comparison = machine_rules_comparison(collection=collection, k=5)
    assert comparison is not None and len(comparison.moves) >= 10
    with browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")
        problems = page_problems(page, "/collections/many/agreement/?k=5")
        assert page.locator("#machine-rules-moves tbody tr").count() == len(comparison.moves)
        regions = page.evaluate(
            """[...document.querySelectorAll('#machine-rules table')].map(t =>
                 t.closest('.scroll[tabindex="0"]') !== null)"""
        )
    assert regions == [True, True]
    assert not problems, problems


def test_the_judges_page_says_the_rule_and_the_risk(moving: Collection) -> None:
    page = _client("olga").get("/collections/moves/judges/").content.decode()
    assert "One assessor among the people" in page
    assert 'id="judges-tau">-1.000<' in page and "2 runs change rank" in page
