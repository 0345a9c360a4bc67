"""The impact inputs kept between refreshes: only the queries that moved are read again, and
what is kept always equals a from-scratch read (the stored impacts too, bit for bit)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from annotations import services
from annotations.models import (
    Collection,
    Document,
    DocumentImpact,
    ImpactSnapshot,
    JudgeAnswer,
    Judgement,
    MachineJudge,
    PoolEntry,
    Query,
)
from annotations.selectors import impact_held
from annotations.selectors.impact import ImpactInputs, impact_inputs
from annotations.selectors.impact_held import (
    impact_inputs_forget,
    impact_inputs_held,
    impact_inputs_held_keys,
)
from annotations.services.impact import impacts_refresh_task
from annotations.services.marks import judgements_mark_stale
from tests.factories import (
    CollectionFactory,
    MembershipFactory,
    UserFactory,
    machine_judge,
    record_grades,
)

QIDS = [f"q{i}" for i in range(1, 6)]
DOCNOS = [f"d{i}" for i in range(1, 11)]
K = 3


def _bits(value: Any) -> bytes:
    array = np.asarray(value)
    return array.dtype.str.encode() + repr(array.shape).encode() + array.tobytes()


def assert_same_inputs(kept: ImpactInputs, fresh: ImpactInputs) -> None:
    """Equal field by field, arrays to the bit (dtype and shape included)."""
    assert (kept.k, kept.run_ids, kept.query_ids) == (fresh.k, fresh.run_ids, fresh.query_ids)
    assert (kept.pools, kept.outside) == (fresh.pools, fresh.outside)
    assert (kept.scale, kept.scheme) == (fresh.scale, fresh.scheme)
    for a, b in zip(kept.tops, fresh.tops, strict=True):
        for field in ("top", "weights", "best_rank", "runs"):
            assert _bits(getattr(a, field)) == _bits(getattr(b, field))
    assert [_bits(g) for g in kept.grades] == [_bits(g) for g in fresh.grades]
    if fresh.document_priors is None:
        assert kept.document_priors is None
        return
    assert kept.document_priors is not None
    for own, expected in zip(kept.document_priors, fresh.document_priors, strict=True):
        assert sorted(own) == sorted(expected)
        for d, prior in expected.items():
            assert _bits(own[d].counts) == _bits(prior.counts)
            assert own[d].counted == prior.counted
            assert (own[d].said is None) == (prior.said is None)
            if prior.said is not None:
                assert _bits(own[d].said) == _bits(prior.said)


@pytest.fixture
def campaign(transactional_db: None) -> Collection:
    """Four runs over five queries (ten documents each, seeded orders), an impact-ordered
    pool at k = 3, people's and a machine judge's grades; machine grades fill in, stale
    judgements are left out."""
    collection = CollectionFactory(slug="held", cutoffs=[K])
    services.collection_update(
        collection=collection, machine_grades="fill", stale_judgements="exclude"
    )
    for qid in QIDS:
        Query.objects.create(collection=collection, qid=qid)
    for docno in DOCNOS:
        Document.objects.create(collection=collection, docno=docno)
    rng = random.Random(22)
    for name in "ABCD":
        services.run_store(
            collection=collection,
            run_name=name,
            results={
                qid: [(d, 10.0 - i, i + 1) for i, d in enumerate(rng.sample(DOCNOS, 6))]
                for qid in QIDS
            },
        )
    alice = UserFactory(username="alice")
    record_grades(collection, alice, {(q, d): rng.randint(0, 3) for q in QIDS for d in DOCNOS[:2]})
    machine = machine_judge(collection).account
    record_grades(
        collection, machine, {(q, d): rng.randint(0, 3) for q in QIDS for d in DOCNOS[:5]}
    )
    services.pool_build(collection=collection, name="hot", depth=K, order="impact", budget=30)
    collection.refresh_from_db()
    return collection


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[set[int] | str]:
    """What `impact_inputs_held` reads: "all" for a full read, else the queries whose grades
    it reads again."""
    seen: list[set[int] | str] = []
    rankings_read = impact_held.query_rankings_read
    grades_read = impact_held.query_grades_read

    def rankings(**kwargs: Any) -> Any:
        seen.append("all")
        return rankings_read(**kwargs)

    def grades(**kwargs: Any) -> Any:
        if not seen or seen[-1] != "all":
            seen.append(set(kwargs["query_ids"]))
        return grades_read(**kwargs)

    monkeypatch.setattr(impact_held, "query_rankings_read", rankings)
    monkeypatch.setattr(impact_held, "query_grades_read", grades)
    return seen


def _change(collection: Collection, rng: random.Random, step: int) -> set[str]:
    """One random change of the collection's judgements; returns the qids it touched."""
    qid, docno = rng.choice(QIDS), rng.choice(DOCNOS)
    query = Query.objects.get(collection=collection, qid=qid)
    document = Document.objects.get(collection=collection, docno=docno)
    alice = get_user_model().objects.get(username="alice")
    judge = MachineJudge.objects.get(collection=collection)
    action = rng.choice(["person", "person", "machine", "answer", "delete", "adjudicate", "stale"])
    judged = Judgement.objects.filter(query=query, document=document)
    if action == "delete" and judged.exists():
        services.judgement_delete(judgement=judged.first(), source="api")  # type: ignore[arg-type]
    elif action == "adjudicate" and judged.exists():
        organiser = MembershipFactory(collection=collection, role="organiser").user
        services.adjudication_record(
            query=query, document=document, organiser=organiser, grade=rng.randint(0, 3)
        )
    elif action == "stale":  # of every query with judgements of the document
        touched = Judgement.objects.filter(document=document).values_list("query__qid", flat=True)
        with transaction.atomic():
            judgements_mark_stale(collection=collection, document_ids=[document.id])
        return set(touched) | {qid}
    elif action == "answer":  # an answer's spread, without a judgement changing
        JudgeAnswer.objects.create(
            judge=judge, query=query, document=document, cache_key=f"k{step}", model="m",
            prompt_version=1, grade=rng.randint(0, 3),
            grade_probabilities={"2": 0.25, "3": 0.75},
        )  # fmt: skip
    elif action == "machine":
        record_grades(collection, judge.account, {(qid, docno): rng.randint(0, 3)})
    else:
        record_grades(collection, alice, {(qid, docno): rng.randint(0, 3)})
    return {qid}


def test_after_random_changes_the_kept_inputs_equal_a_fresh_read(
    campaign: Collection, reads: list[set[int] | str]
) -> None:
    assert_same_inputs(
        impact_inputs_held(collection=campaign, k=K), impact_inputs(collection=campaign, k=K)
    )
    rng = random.Random(7)
    ids = dict(Query.objects.filter(collection=campaign).values_list("qid", "id"))
    for step in range(30):
        reads.clear()
        touched = {ids[qid] for qid in _change(campaign, rng, step)}
        kept = impact_inputs_held(collection=campaign, k=K)
        assert_same_inputs(kept, impact_inputs(collection=campaign, k=K))
        # Only the queries the change touched are read again (none when nothing moved).
        assert all(read != "all" and read <= touched for read in reads), (step, reads)
        # Of some queries only (the flip marks' read), as `impact_inputs` of those.
        assert_same_inputs(
            impact_inputs_held(collection=campaign, k=K, query_ids=touched),
            impact_inputs(collection=campaign, k=K, query_ids=touched),
        )


def test_a_query_whose_judgements_did_not_move_is_not_read_again(
    campaign: Collection, reads: list[set[int] | str]
) -> None:
    impact_inputs_forget()  # building the pool read them
    impact_inputs_held(collection=campaign, k=K)
    assert reads == ["all"]
    reads.clear()
    impact_inputs_held(collection=campaign, k=K)
    assert reads == []
    record_grades(campaign, UserFactory(username="bob"), {("q2", "d7"): 3})
    impact_inputs_held(collection=campaign, k=K)
    assert reads == [{Query.objects.get(collection=campaign, qid="q2").id}]


@pytest.mark.parametrize(
    "change",
    [
        "aggregation",
        "machine rule",
        "stale rule",
        "gain",
        "scale",
        "new run",
        "run replaced",
        "judge",
    ],
)
def test_what_is_not_a_query_s_judgements_reads_everything_again(
    campaign: Collection, reads: list[set[int] | str], change: str
) -> None:
    impact_inputs_held(collection=campaign, k=K)
    reads.clear()
    results = {qid: [(d, 3.0 - i, i + 1) for i, d in enumerate(DOCNOS[-3:])] for qid in QIDS}
    if change == "aggregation":
        services.collection_update(collection=campaign, aggregation="mean")
    elif change == "machine rule":
        services.collection_update(collection=campaign, machine_grades="people")
    elif change == "stale rule":
        services.collection_update(collection=campaign, stale_judgements="count")
    elif change == "gain":
        services.collection_update(collection=campaign, gain="exponential")
    elif change == "scale":
        levels = [(value, str(value), "") for value in range(5)]
        services.collection_grades_set(collection=campaign, grades=levels)
    elif change == "new run":
        services.run_store(collection=campaign, run_name="E", results=results)
    elif change == "run replaced":
        services.run_store(collection=campaign, run_name="A", results=results, replace=True)
    else:
        machine_judge(campaign, name="second")
    campaign.refresh_from_db()
    assert_same_inputs(
        impact_inputs_held(collection=campaign, k=K), impact_inputs(collection=campaign, k=K)
    )
    assert reads[0] == "all"


def _stored(collection: Collection) -> dict[str, Any]:
    """Every stored impact figure of the collection, as bits."""
    snapshots = ImpactSnapshot.objects.filter(collection=collection).order_by("k")
    return {
        "pairs": [
            (s.k, s.stamp, [[float(x).hex() for x in p] for p in s.pairs]) for s in snapshots
        ],
        "adjacent": [(s.k, s.adjacent, s.leaderboard_stamp) for s in snapshots],
        "impacts": sorted(
            (k, q, d, float(v).hex())
            for k, q, d, v in DocumentImpact.objects.filter(
                snapshot__collection=collection
            ).values_list("snapshot__k", "query_id", "document_id", "impact")
        ),
        "entries": sorted(
            (e, float(v or 0.0).hex())
            for e, v in PoolEntry.objects.filter(pool__collection=collection).values_list(
                "id", "impact"
            )
        ),
    }


def test_stored_impacts_after_kept_refreshes_equal_a_from_scratch_refresh_bit_for_bit(
    campaign: Collection,
) -> None:
    rng = random.Random(11)
    for step in range(12):
        _change(campaign, rng, step)
        impacts_refresh_task(collection_id=campaign.id)
        kept = _stored(campaign)
        impact_inputs_forget()
        ImpactSnapshot.objects.filter(collection=campaign).update(stamp="")
        impacts_refresh_task(collection_id=campaign.id)
        assert _stored(campaign) == kept, step


def test_the_inputs_kept_are_bounded(campaign: Collection, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact_held, "HELD_ENTRIES", 2)
    for k in (1, 2, 3):
        impact_inputs_held(collection=campaign, k=k)
    assert impact_inputs_held_keys() == [(campaign.id, 2), (campaign.id, 3)]
    monkeypatch.setattr(impact_held, "HELD_BYTES", 1)
    impact_inputs_held(collection=campaign, k=1)
    assert (campaign.id, 1) not in impact_inputs_held_keys()
    impact_inputs_forget(collection_id=campaign.id)
    assert impact_inputs_held_keys() == []
