"""Impact on the platform: the model's inputs from the database, impact-ordered pools and
assignments, re-prioritisation after judgements, and the leaderboard's flip marks."""

from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotations import services
from annotations.metrics.impact import UNJUDGED, impact_scores
from annotations.models import (
    AssignmentItem,
    Collection,
    Document,
    DocumentImpact,
    ImpactSnapshot,
    Pool,
    PoolEntry,
    Query,
    Run,
)
from annotations.scores import refresh_queue
from annotations.scores.snapshots import leaderboard_read
from annotations.selectors.impact import flip_state_stored, impact_inputs
from annotations.selectors.scores_state import scores_state
from annotations.services.impact import (
    assignment_items_reprioritise,
    flips_refresh,
    pool_entries_impact_set,
)
from tests.factories import CollectionFactory, MembershipFactory, UserFactory


def _store(collection: Collection, runs: dict[str, dict[str, list[str]]]) -> None:
    for name, by_query in runs.items():
        services.run_store(
            collection=collection,
            run_name=name,
            results={
                qid: [(docno, float(len(docs) - i), i + 1) for i, docno in enumerate(docs)]
                for qid, docs in by_query.items()
            },
        )


def _judge(collection: Collection, user: Any, qid: str, docno: str, grade: int) -> None:
    services.judgement_record(
        query=Query.objects.get(collection=collection, qid=qid),
        document=Document.objects.get(collection=collection, docno=docno),
        assessor=user,
        grade=grade,
        source="api",
    )


@pytest.fixture
def small(transactional_db: None, settings: Any) -> Collection:
    """Runs A and B over q1, q2 at k = 2; q1/d2 judged 2, q1/d3 (outside every top 2) 1."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    collection = CollectionFactory(slug="small", cutoffs=[2])
    for qid in ("q1", "q2"):
        Query.objects.create(collection=collection, qid=qid)
    for docno in ("d1", "d2", "d3", "d4", "d5"):
        Document.objects.create(collection=collection, docno=docno)
    _store(
        collection,
        {
            "A": {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5"]},
            "B": {"q1": ["d2", "d4"], "q2": ["d5", "d4"]},
        },
    )
    alice = UserFactory(username="alice")
    _judge(collection, alice, "q1", "d2", 2)
    _judge(collection, alice, "q1", "d3", 1)
    return collection


def test_the_selector_reads_the_model_inputs_of_a_hand_built_case(small: Collection) -> None:
    inputs = impact_inputs(collection=small, k=2)
    run = {r.name: r.id for r in Run.objects.filter(collection=small)}
    query = {q.qid: q.id for q in Query.objects.filter(collection=small)}
    doc = {d.docno: d.id for d in Document.objects.filter(collection=small)}
    assert inputs.run_ids == sorted([run["A"], run["B"]])
    assert inputs.query_ids == [query["q1"], query["q2"]]
    assert run["A"] < run["B"]  # created first
    assert inputs.pools == [[doc["d1"], doc["d2"], doc["d4"]], [doc["d4"], doc["d5"]]]
    assert inputs.tops[0].top.tolist() == [[0, 1], [1, 2]]
    assert inputs.tops[1].top.tolist() == [[0, 1], [1, 0]]
    assert [g.tolist() for g in inputs.grades] == [[UNJUDGED, 2, UNJUDGED], [UNJUDGED, UNJUDGED]]
    assert inputs.outside == [[1], []]
    assert inputs.scale == (0, 1, 2, 3)
    assert inputs.scheme == small.gain


def test_stored_impact_equals_the_pure_model_and_carries_the_stamp(small: Collection) -> None:
    snapshot = services.impact_refresh(collection=small, k=2)
    assert snapshot.stamp == scores_state(collection=small).stamp
    stored = {
        (q, d): value
        for q, d, value in DocumentImpact.objects.filter(snapshot=snapshot).values_list(
            "query__qid", "document__docno", "impact"
        )
    }
    expected = impact_scores(
        {
            "q1": {"A": ["d1", "d2"], "B": ["d2", "d4"]},
            "q2": {"A": ["d4", "d5"], "B": ["d5", "d4"]},
        },
        {"q1": {"d2": 2, "d3": 1}},
        k=2,
        scale=[0, 1, 2, 3],
        scheme=small.gain,
    )
    assert (
        stored.keys() == expected.keys() == {("q1", "d1"), ("q1", "d4"), ("q2", "d4"), ("q2", "d5")}
    )
    for key, value in expected.items():
        assert stored[key] == pytest.approx(value, rel=1e-12, abs=1e-15)
    [(a, b, lower, upper, weight)] = snapshot.pairs
    assert a < b and lower <= upper and 0.0 <= weight <= 1.0


def test_an_impact_ordered_pool_keeps_the_budget_of_highest_impact(small: Collection) -> None:
    pool, added = services.pool_build(
        collection=small, name="hot", depth=2, order="impact", budget=3
    )
    impacts = dict(
        DocumentImpact.objects.filter(snapshot__collection=small, snapshot__k=2).values_list(
            "id", "impact"
        )
    )
    best = sorted(impacts.values(), reverse=True)[:3]
    assert added == 3 and pool.order == Pool.IMPACT and pool.budget == 3
    assert sorted(pool.entries.values_list("impact", flat=True), reverse=True) == best


def test_assignments_hand_out_the_highest_impact_first(small: Collection) -> None:
    pool, _ = services.pool_build(collection=small, name="hot", depth=2, order="impact", budget=10)
    bob = MembershipFactory(collection=small, user=UserFactory(username="bob")).user
    [(assignment, count)] = services.assignment_create(pool=pool, assessors=[bob])
    impacts = list(
        AssignmentItem.objects.filter(assignment=assignment)
        .order_by("position")
        .values_list("entry__impact", flat=True)
    )
    assert count == pool.entries.count() == len(impacts) > 1
    assert impacts == sorted(impacts, reverse=True)


def test_a_budget_goes_with_the_impact_order(small: Collection) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="budget"):
        services.pool_build(collection=small, name="x", depth=2, order="impact")
    with pytest.raises(ValidationError, match="budget"):
        services.pool_build(collection=small, name="x", depth=2, budget=3)
    with pytest.raises(CommandError, match="--budget"):
        call_command("build_pool", "small", "--by-impact")


def test_the_command_builds_a_pool_by_impact(small: Collection, capsys: Any) -> None:
    call_command(
        "build_pool", "small", "--name", "hot", "--depth", "2", "--by-impact", "--budget", "2"
    )
    assert "pool hot: built by impact at k=2, 2 pairs" in capsys.readouterr().out
    assert Pool.objects.get(collection=small, name="hot").entries.count() == 2


@pytest.fixture
def wide(transactional_db: None, settings: Any) -> Collection:
    """Three runs over three queries at k = 3, nothing judged."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    collection = CollectionFactory(slug="wide", cutoffs=[3])
    docs = [f"d{i}" for i in range(1, 9)]
    for qid in ("q1", "q2", "q3"):
        Query.objects.create(collection=collection, qid=qid)
    for docno in docs:
        Document.objects.create(collection=collection, docno=docno)
    rng = np.random.default_rng(3)
    _store(
        collection,
        {
            name: {q: [docs[i] for i in rng.permutation(8)[:4]] for q in ("q1", "q2", "q3")}
            for name in ("r1", "r2", "r3")
        },
    )
    return collection


def _order(assignment_id: int) -> list[int]:
    return list(
        AssignmentItem.objects.filter(assignment_id=assignment_id)
        .order_by("position")
        .values_list("entry_id", flat=True)
    )


def test_reprioritising_moves_only_items_not_yet_reached(wide: Collection) -> None:
    pool, _ = services.pool_build(collection=wide, name="hot", depth=3, order="impact", budget=50)
    alice = MembershipFactory(collection=wide, user=UserFactory(username="alice")).user
    [(assignment, count)] = services.assignment_create(pool=pool, assessors=[alice])
    assert count >= 6
    before = _order(assignment.id)
    item = AssignmentItem.objects.get(assignment=assignment, position=2)
    services.assignment_item_grade(item=item, assessor=alice, grade=1)
    # Reverse the impacts: the tail after the judged item and the next one must turn round.
    reversed_impacts = {
        (e.query_id, e.document_id): float(rank)
        for rank, e in enumerate(PoolEntry.objects.filter(id__in=before).order_by("id"))
    }
    by_entry = {e.id: reversed_impacts[(e.query_id, e.document_id)] for e in pool.entries.all()}
    pool_entries_impact_set(pool=pool, impacts=reversed_impacts)
    moved = assignment_items_reprioritise(pool=pool)
    after = _order(assignment.id)
    assert after[:3] == before[:3]  # judged at 2, and 1 before it, 3 the next one kept
    assert set(after[3:]) == set(before[3:])
    assert [by_entry[e] for e in after[3:]] == sorted(
        (by_entry[e] for e in after[3:]), reverse=True
    )
    assert moved > 0
    positions = list(
        AssignmentItem.objects.filter(assignment=assignment).values_list("position", flat=True)
    )
    assert sorted(positions) == list(range(1, count + 1))


def test_a_refresh_after_judgements_reorders_the_unjudged_items_only(
    wide: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool, _ = services.pool_build(collection=wide, name="hot", depth=3, order="impact", budget=50)
    # the worker refreshes once, after both judgements
    monkeypatch.setattr(refresh_queue, "_publish", lambda *args, **options: None)
    alice = MembershipFactory(collection=wide, user=UserFactory(username="alice")).user
    [(assignment, _count)] = services.assignment_create(pool=pool, assessors=[alice])
    before = _order(assignment.id)
    for position, grade in ((1, 3), (2, 0)):
        item = AssignmentItem.objects.get(assignment=assignment, position=position)
        services.assignment_item_grade(item=item, assessor=alice, grade=grade)
    snapshot = services.impact_fresh(collection=wide, k=3)
    assert snapshot.stamp == scores_state(collection=wide).stamp
    after = _order(assignment.id)
    assert after[:3] == before[:3]
    assert set(after) == set(before)
    impacts = dict(PoolEntry.objects.filter(pool=pool).values_list("id", "impact"))
    assert impacts[before[0]] == impacts[before[1]] == 0.0  # judged: nothing left to learn
    tail = [impacts[e] for e in after[3:]]
    assert tail == sorted(tail, reverse=True)


# --- flip marks ---------------------------------------------------------------------------


@pytest.fixture
def flips(transactional_db: None, settings: Any) -> Collection:
    """q1 at k = 2: A = [d1, d2], B = [d3, d4], C = [d5, d2]; d1 = 3, d2 = d3 = 0, d4 and d5
    unjudged.

    nDCG@2: A = 1 (IDCG 3); B = C = 0. Bounds with d4 at grade 3 (IDCG 3 + 3/log2 3):
    B = (3/log2 3) / (3 + 3/log2 3) = 0.387 (d4), C = 3 / (3 + 3/log2 3) = 0.613 (d5). Order
    A, B, C (ties by name): A-B decided (0.387 < 1), B-C can flip (0.613 > 0). Judging d4
    moves A-B and B-C, d5 moves B-C (and A-C, not adjacent).
    """
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    collection = CollectionFactory(slug="flips", cutoffs=[2])
    Query.objects.create(collection=collection, qid="q1")
    for docno in ("d1", "d2", "d3", "d4", "d5"):
        Document.objects.create(collection=collection, docno=docno)
    _store(
        collection,
        {"A": {"q1": ["d1", "d2"]}, "B": {"q1": ["d3", "d4"]}, "C": {"q1": ["d5", "d2"]}},
    )
    olga = UserFactory(username="olga")
    MembershipFactory(collection=collection, user=olga, role="organiser")
    for docno, grade in (("d1", 3), ("d2", 0), ("d3", 0)):
        _judge(collection, olga, "q1", docno, grade)
    return collection


def test_flip_marks_and_queued_pairs_by_hand(flips: Collection) -> None:
    services.pool_build(collection=flips, name="hot", depth=2, order="impact", budget=5)
    board = leaderboard_read(collection=flips, k=2)
    assert [row.run.name for row in board.rows] == ["A", "B", "C"]
    assert board.rows[1].ndcg_top_grade == pytest.approx(0.3868528, abs=1e-6)
    assert board.rows[2].ndcg_top_grade == pytest.approx(0.6131472, abs=1e-6)
    flips_refresh(collection=flips, board=board)
    state = flip_state_stored(collection=flips, k=2)
    assert state is not None and state.stamp == board.computed_stamp
    assert [(p.upper, p.lower, p.can_flip, p.queued) for p in state.pairs] == [
        ("A", "B", False, 1),
        ("B", "C", True, 2),
    ]
    assert not state.decided


def test_the_ranking_is_decided_once_no_neighbours_can_flip(flips: Collection) -> None:
    olga = UserFactory._meta.model.objects.get(username="olga")
    _judge(flips, olga, "q1", "d4", 0)
    _judge(flips, olga, "q1", "d5", 0)
    board = leaderboard_read(collection=flips, k=2)
    flips_refresh(collection=flips, board=board)
    state = flip_state_stored(collection=flips, k=2)
    assert state is not None and state.decided
    assert [p.can_flip for p in state.pairs] == [False, False]


def test_the_leaderboard_page_and_api_show_the_flip_marks(flips: Collection) -> None:
    client = Client()
    client.force_login(UserFactory._meta.model.objects.get(username="olga"))
    services.pool_build(collection=flips, name="hot", depth=2, order="impact", budget=5)
    body = client.get("/api/v1/collections/flips/leaderboard/?k=2").json()
    assert body["adjacent"] == [
        {"upper": "A", "lower": "B", "can_flip": False, "queued": 1},
        {"upper": "B", "lower": "C", "can_flip": True, "queued": 2},
    ]
    assert body["ranking_decided"] is False and body["flips_stamp"] == body["statistics_stamp"]
    page = client.get("/collections/flips/leaderboard/?k=2").content.decode()
    assert 'id="leaderboard-flip-pairs"' in page and "can flip" in page
    assert 'id="ranking-decided"' not in page
    _judge(flips, UserFactory._meta.model.objects.get(username="olga"), "q1", "d4", 0)
    _judge(flips, UserFactory._meta.model.objects.get(username="olga"), "q1", "d5", 0)
    body = client.get("/api/v1/collections/flips/leaderboard/?k=2").json()
    assert body["ranking_decided"] is True
    assert (
        'id="ranking-decided"' in client.get("/collections/flips/leaderboard/?k=2").content.decode()
    )


def test_the_pages_cached_flip_table_follows_the_stored_marks(flips: Collection) -> None:
    # The page keeps the rendered marks under their digest: any change of the stored marks
    # (here a queued count alone, the board unchanged) shows on the next read.
    client = Client()
    client.force_login(UserFactory._meta.model.objects.get(username="olga"))
    services.pool_build(collection=flips, name="hot", depth=2, order="impact", budget=5)
    page = client.get("/collections/flips/leaderboard/?k=2").content.decode()
    assert '<td class="num queued">2</td>' in page
    snapshot = ImpactSnapshot.objects.get(collection=flips, k=2)
    snapshot.adjacent = [dict(pair, queued=7) for pair in snapshot.adjacent]
    snapshot.save(update_fields=["adjacent"])
    page = client.get("/collections/flips/leaderboard/?k=2").content.decode()
    assert page.count('<td class="num queued">7</td>') == 2


def test_the_impact_pool_page_lists_its_highest_impact_pairs(flips: Collection) -> None:
    pool, _ = services.pool_build(collection=flips, name="hot", depth=2, order="impact", budget=5)
    client = Client()
    client.force_login(UserFactory._meta.model.objects.get(username="olga"))
    page = client.get(f"/collections/flips/pools/{pool.id}/").content.decode()
    assert "by impact at k=2, budget 5" in page and 'id="pool-impact"' in page and "d4" in page
    assert ImpactSnapshot.objects.filter(collection=flips, k=2).exists()


def test_the_pools_page_builds_a_pool_by_impact(flips: Collection) -> None:
    client = Client()
    client.force_login(UserFactory._meta.model.objects.get(username="olga"))
    form = {"name": "hot", "depth": "2", "order": "impact"}
    page = client.post("/collections/flips/pools/", form).content.decode()
    assert "Give a budget of pairs for a pool by impact." in page
    response = client.post("/collections/flips/pools/", {**form, "budget": "1"})
    pool = Pool.objects.get(collection=flips, name="hot")
    assert response.status_code == 302 and pool.order == Pool.IMPACT and pool.budget == 1
    assert pool.entries.count() == 1


def test_a_grade_lands_on_the_pair_shown_even_if_it_moved_meanwhile(wide: Collection) -> None:
    pool, _ = services.pool_build(collection=wide, name="hot", depth=3, order="impact", budget=50)
    alice = MembershipFactory(collection=wide, user=UserFactory(username="alice")).user
    [(assignment, _count)] = services.assignment_create(pool=pool, assessors=[alice])
    client = Client()
    client.force_login(alice)
    shown = AssignmentItem.objects.select_related("entry").get(assignment=assignment, position=4)
    page = client.get(f"/judging/assignments/{assignment.id}/pairs/4/").content.decode()
    assert f'name="item" value="{shown.id}"' in page
    # Meanwhile the tail is re-sorted: the shown pair leaves position 4.
    entries = list(pool.entries.all())
    impacts = {(e.query_id, e.document_id): 1.0 for e in entries}
    impacts[(shown.entry.query_id, shown.entry.document_id)] = 0.0
    pool_entries_impact_set(pool=pool, impacts=impacts)
    assignment_items_reprioritise(pool=pool)
    assert AssignmentItem.objects.get(id=shown.id).position != 4
    client.post(f"/judging/assignments/{assignment.id}/pairs/4/", {"grade": "2", "item": shown.id})
    judgement = alice.judgements.get()
    assert (judgement.query_id, judgement.document_id, judgement.grade) == (
        shown.entry.query_id,
        shown.entry.document_id,
        2,
    )
