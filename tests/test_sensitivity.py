"""Assessor sensitivity: the leaderboard with each assessor's own grades (Voorhees 2000)."""

from collections.abc import Callable
from typing import Any

import pytest
from scipy.stats import kendalltau

from annotations import services
from annotations.models import Collection
from annotations.selectors.sensitivity import assessor_sensitivity
from tests.factories import UserFactory
from tests.stored import run_rows

# Two queries, three runs. alice judged everything; bob re-judged three pairs of q1.
ALICE = """\
q1 0 d1 3
q1 0 d2 0
q1 0 d3 1
q1 0 d4 0
q2 0 e1 2
q2 0 e2 0
q2 0 e3 1
"""
BOB = {("q1", "d1"): 0, ("q1", "d2"): 3, ("q1", "d4"): 0}  # d4 agrees with alice
RUNS = {
    "top": "q1 Q0 d1 1 3 top\nq1 Q0 d2 2 2 top\nq2 Q0 e1 1 2 top\nq2 Q0 e3 2 1 top\n",
    "mid": "q1 Q0 d3 1 3 mid\nq1 Q0 d1 2 2 mid\nq2 Q0 e3 1 2 mid\nq2 Q0 e1 2 1 mid\n",
    "low": "q1 Q0 d2 1 3 low\nq1 Q0 d4 2 2 low\nq2 Q0 e2 1 2 low\n",
}


def _with_bob(campaign: Collection) -> Any:
    """Bob re-judges three pairs of q1 (the rule is the median: ties go to the lower grade)."""
    bob = UserFactory(username="bob")
    for (qid, docno), grade in BOB.items():
        services.judgement_record(
            query=campaign.queries.get(qid=qid),
            document=campaign.documents.get(docno=docno),
            assessor=bob,
            grade=grade,
            source="api",
        )
    return bob


def _means(collection: Collection) -> dict[str, float]:
    return {name: m.ndcg for name, m in run_rows(run__collection=collection) if m.k == 2}


def test_each_assessors_ranking_equals_a_collection_judged_with_their_grades(
    load_trec: Callable[..., Collection],
) -> None:
    campaign = load_trec("campaign", ALICE, RUNS)
    _with_bob(campaign)
    # Rule "median": the effective grade of a pair judged twice is the lower one.
    effective_qrels = ALICE.replace("q1 0 d1 3", "q1 0 d1 0")
    bobs_qrels = ALICE.replace("q1 0 d1 3", "q1 0 d1 0").replace("q1 0 d2 0", "q1 0 d2 3")
    alice_name = "campaign-import"
    result = assessor_sensitivity(collection=campaign, k=2)

    assert result.shared_pairs == 3
    assert result.effective_means == _means(campaign)  # the leaderboard's own means, bit for bit
    assert result.effective_means == _means(load_trec("eff", effective_qrels, RUNS))
    by_name = {row.assessor: row for row in result.assessors}
    assert set(by_name) == {alice_name, "bob"}
    assert by_name["bob"].means == _means(load_trec("bobs", bobs_qrels, RUNS))
    assert by_name[alice_name].means == _means(load_trec("alices", ALICE, RUNS))
    assert (by_name["bob"].judged, by_name["bob"].differing, by_name["bob"].queries) == (3, 1, 1)
    assert (by_name[alice_name].differing, by_name[alice_name].queries) == (1, 1)


def test_rankings_taus_and_swings_by_hand(load_trec: Callable[..., Collection]) -> None:
    campaign = load_trec("campaign", ALICE, RUNS)
    _with_bob(campaign)
    result = assessor_sensitivity(collection=campaign, k=2)
    # nDCG@2, linear gain; IDCG from the grades in use. Effective q1: d1 0, d2 0, d3 1, d4 0
    # (IDCG 1): top (d1, d2) 0, mid (d3, d1) 1, low (d2, d4) 0. q2 (alice alone): e1 2, e3 1,
    # IDCG 2 + 1/log2 3: top (e1, e3) 1, mid (e3, e1) 0.86, low (e2) 0.
    # Means: mid 0.93 > top 0.5 > low 0.
    assert result.effective == ["mid", "top", "low"]
    by_name = {row.assessor: row for row in result.assessors}
    # Bob's q1: d2 3, d3 1 (IDCG 3 + 1/log2 3 = 3.63): top 1.89/3.63 = 0.52, mid 0.28,
    # low 3/3.63 = 0.83 -> means top 0.76, mid 0.57, low 0.41.
    # Alice's q1: d1 3, d3 1: top 0.83, mid 0.80, low 0 -> top 0.91, mid 0.83, low 0.
    assert by_name["bob"].ranking == ["top", "mid", "low"]
    assert by_name["campaign-import"].ranking == ["top", "mid", "low"]
    # Against the effective scores (low, mid, top): (low, mid) and (low, top) concordant,
    # (mid, top) discordant: tau = (2 - 1) / 3. tau_ap, effective as truth: mid is placed
    # under top (0/1), low under both (2/2): 2/2 * 1 - 1 = 0.
    bob_row = by_name["bob"]
    assert bob_row.tau == pytest.approx(1 / 3) and bob_row.tau_ap == pytest.approx(0.0)
    names = sorted(result.effective_means)
    expected = kendalltau(
        [result.effective_means[n] for n in names], [bob_row.means[n] for n in names]
    ).statistic
    assert bob_row.tau == pytest.approx(expected)
    (pair,) = result.pairs
    assert {pair.first, pair.second} == {"campaign-import", "bob"}
    assert pair.tau == pytest.approx(1.0) and pair.tau_ap == pytest.approx(1.0)
    swings = {row.run: (row.best, row.worst, row.swing) for row in result.swings}
    assert swings == {"mid": (1, 2, 1), "top": (1, 2, 1), "low": (3, 3, 0)}
    assert [row.run for row in result.swings] == ["mid", "top", "low"]


def test_no_shared_pairs_means_no_assessor_rankings(load_trec: Callable[..., Collection]) -> None:
    campaign = load_trec("campaign", ALICE, RUNS)
    result = assessor_sensitivity(collection=campaign, k=2)
    assert result.shared_pairs == 0 and result.assessors == [] and result.pairs == []
    assert result.effective == ["top", "mid", "low"]  # alice alone: her grades
    assert all(row.swing == 0 for row in result.swings)


def test_the_api_gives_organisers_the_same_figures(load_trec: Callable[..., Collection]) -> None:
    from rest_framework.test import APIClient

    from annotations.models import Membership

    campaign = load_trec("campaign", ALICE, RUNS)
    bob = _with_bob(campaign)
    olga = UserFactory(username="olga")
    Membership.objects.create(collection=campaign, user=olga, role=Membership.ORGANISER)
    Membership.objects.create(collection=campaign, user=bob, role=Membership.ASSESSOR)
    client = APIClient()
    client.force_authenticate(olga)
    body = client.get("/api/v1/collections/campaign/sensitivity/?k=2").json()
    expected = assessor_sensitivity(collection=campaign, k=2)
    assert body["effective"] == expected.effective and body["shared_pairs"] == 3
    assert {row["assessor"]: row["means"] for row in body["assessors"]} == {
        row.assessor: row.means for row in expected.assessors
    }
    assert [(row["run"], row["swing"]) for row in body["swings"]] == [
        (row.run, row.swing) for row in expected.swings
    ]
    client.force_authenticate(bob)
    assert client.get("/api/v1/collections/campaign/sensitivity/").status_code == 403
    client.force_authenticate(olga)
    error = client.get("/api/v1/collections/campaign/sensitivity/?k=7").json()["error"]
    assert error["status"] == 400 and "k" in error["fields"]


def test_a_machine_judge_is_one_of_the_assessors_the_ranking_is_tested_against(
    load_trec: Callable[..., Collection],
) -> None:
    from annotations.services.judges import judge_create

    campaign = load_trec("machines", ALICE, RUNS)
    services.collection_update(collection=campaign, machine_grades="assessor")
    judge = judge_create(
        collection=campaign, name="umbrela", created_by=None, base_url="http://127.0.0.1:9/v1",
        model="m", api_key_env="NDCG_JUDGE_KEY_TEST",
    )  # fmt: skip
    for (qid, docno), grade in BOB.items():  # the grades a run of the judge records
        services.judgement_record(
            query=campaign.queries.get(qid=qid),
            document=campaign.documents.get(docno=docno),
            assessor=judge.account,
            grade=grade,
            source="machine",
        )
    bobs_qrels = ALICE.replace("q1 0 d1 3", "q1 0 d1 0").replace("q1 0 d2 0", "q1 0 d2 3")
    result = assessor_sensitivity(collection=campaign, k=2)
    machine = {row.assessor: row for row in result.assessors}[judge.account.username]
    assert (machine.judged, machine.differing, machine.queries) == (3, 1, 1)
    assert machine.means == _means(load_trec("as-judged", bobs_qrels, RUNS))
