"""Pools by impact spread over the queries: the model reads each query's own judgements, a
budget takes at most a cap of one query, and overlapping pairs reach their assessors early
and in the same order."""

from typing import Any

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from annotations import services
from annotations.metrics.impact import (
    UNJUDGED,
    QueryTop,
    budget_pick,
    impact_compute,
    per_query_cap,
    query_calibrated,
)
from annotations.models import AssignmentItem, Collection, Document, Query
from tests.factories import CollectionFactory, MembershipFactory, UserFactory

SCALE = (0, 1, 2, 3)


def _shaped(seed: int, *, queries: int = 12, no_rel: int = 2, runs: int = 8, k: int = 10):
    """Runs' top k over ``queries`` queries (each from 40 candidates, better runs put more
    relevant documents first); the last ``no_rel`` queries have nothing relevant. The top k
    of the first half of the runs is judged (true grades); returns the tops, the grades so
    far and the no-relevant query indices."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.5, 1.0, runs)
    tops, grades = [], []
    for q in range(queries):
        hidden = rng.choice(4, size=40, p=[0.5, 0.2, 0.2, 0.1])
        if q >= queries - no_rel:
            hidden[:] = 0
        pool: dict[int, int] = {}
        matrix = np.full((runs, k), -1, dtype=np.int64)
        for a in range(runs):
            keys = quality[a] * hidden + rng.gumbel(size=40)
            for i, doc in enumerate(np.argsort(-keys)[:k].tolist()):
                matrix[a, i] = pool.setdefault(doc, len(pool))
        top = QueryTop.of(matrix, len(pool))
        truth = np.array([hidden[doc] for doc in pool], dtype=np.int64)
        row = np.full(len(pool), UNJUDGED, dtype=np.int64)
        first = matrix[: runs // 2].reshape(-1)
        row[first] = truth[first]
        tops.append(top)
        grades.append(row)
    return tops, grades, set(range(queries - no_rel, queries))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_queries_whose_judged_documents_are_all_non_relevant_do_not_soak_up_impact(
    seed: int,
) -> None:
    tops, grades, no_rel = _shaped(seed)
    assert all((grades[q] == 0).sum() >= 15 for q in no_rel)  # much judged, nothing relevant
    result = impact_compute(tops, grades, scale=SCALE, scheme="linear")

    def mean_impact(queries: list[int]) -> float:
        return float(np.concatenate([result.impacts[q][grades[q] < 0] for q in queries]).mean())

    others = [q for q in range(len(tops)) if q not in no_rel]
    # An unjudged pair of such a query used to weigh 3.5-4.5 times one of the others.
    assert mean_impact(sorted(no_rel)) <= 1.5 * mean_impact(others)


def test_the_query_calibration_follows_the_judgements_and_is_neutral_without_any() -> None:
    rows = np.full((4, 4), 0.25)
    assert np.array_equal(query_calibrated(rows, np.full(4, -1)), rows)
    calibrated = query_calibrated(rows, np.array([0, 0, 0, -1]))
    assert calibrated[3, 0] > 0.5 and calibrated[3, 1:].sum() < 0.5
    assert np.allclose(calibrated.sum(axis=1), 1.0)


def test_the_idcg_scale_is_at_least_the_least_relevant_gain_at_rank_one() -> None:
    tops, grades, no_rel = _shaped(4)
    result = impact_compute(tops, grades, scale=SCALE, scheme="linear")
    assert all(result.idcgs[q] >= 1.0 for q in no_rel)


def test_a_budget_takes_at_most_its_cap_of_one_query() -> None:
    ranked = [("a", i) for i in range(10)] + [("b", i) for i in range(10)]
    query_of = {key: key[0] for key in ranked}
    assert per_query_cap(6, 3) == 4 and per_query_cap(1, 50) == 1
    assert budget_pick(ranked, query_of, budget=6, cap=4) == ranked[:4] + ranked[10:12]
    assert budget_pick(ranked, query_of, budget=6, cap=None) == ranked[:6]
    with pytest.raises(ValueError):
        budget_pick(ranked, query_of, budget=6, cap=0)


# --- on the platform ---------------------------------------------------------------------


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


@pytest.fixture
def wide(transactional_db: None, settings: Any) -> Collection:
    """Four runs over four queries at k = 4, nothing judged; olga organises."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    collection = CollectionFactory(slug="wide", cutoffs=[4])
    docs = [f"d{i}" for i in range(1, 11)]
    qids = ("q1", "q2", "q3", "q4")
    for qid in qids:
        Query.objects.create(collection=collection, qid=qid)
    for docno in docs:
        Document.objects.create(collection=collection, docno=docno)
    rng = np.random.default_rng(5)
    _store(
        collection,
        {
            name: {q: [docs[i] for i in rng.permutation(10)[:5]] for q in qids}
            for name in ("r1", "r2", "r3", "r4")
        },
    )
    MembershipFactory(collection=collection, user=UserFactory(username="olga"), role="organiser")
    return collection


def _per_query(pool: Any) -> dict[int, int]:
    counts: dict[int, int] = {}
    for query_id in pool.entries.values_list("query_id", flat=True):
        counts[query_id] = counts.get(query_id, 0) + 1
    return counts


def test_a_pool_by_impact_takes_at_most_its_cap_of_one_query(wide: Collection) -> None:
    pool, added = services.pool_build(
        collection=wide, name="hot", depth=4, order="impact", budget=6
    )
    assert pool.per_query == per_query_cap(6, 4) == 3
    assert added == 6 and max(_per_query(pool).values()) <= 3
    tight, added = services.pool_build(
        collection=wide, name="tight", depth=4, order="impact", budget=6, per_query=1
    )
    assert tight.per_query == 1 and added == 4 and set(_per_query(tight).values()) == {1}
    with pytest.raises(ValidationError, match="per-query"):
        services.pool_build(collection=wide, name="x", depth=4, per_query=2)
    client = Client()
    client.force_login(UserFactory._meta.model.objects.get(username="olga"))
    page = client.get(
        reverse("judging-pool", kwargs={"slug": "wide", "pool_id": tight.id})
    ).content.decode()
    assert "at most 1 pair of any one query" in page


def test_overlapping_pairs_reach_both_assessors_early_and_in_the_same_order(
    wide: Collection,
) -> None:
    pool, _ = services.pool_build(collection=wide, name="hot", depth=4, order="impact", budget=20)
    alice = MembershipFactory(collection=wide, user=UserFactory(username="alice")).user
    bob = MembershipFactory(collection=wide, user=UserFactory(username="bob")).user
    made = services.assignment_create(pool=pool, assessors=[alice, bob], overlap=2)
    (first, _), (second, _) = made

    def order(assignment: Any) -> list[int]:
        return list(
            AssignmentItem.objects.filter(assignment=assignment)
            .order_by("position")
            .values_list("entry_id", flat=True)
        )

    assert order(first) == order(second)
    graded = []
    for _ in range(5):  # alice grades her next pair, the impact is refreshed each time
        item = (
            AssignmentItem.objects.filter(assignment=first)
            .exclude(entry_id__in=graded)
            .order_by("position")
            .select_related("entry__query", "entry__document")
            .first()
        )
        services.assignment_item_grade(item=item, assessor=alice, grade=graded.__len__() % 4)
        graded.append(item.entry_id)
        services.impact_fresh(collection=wide, k=4)
    # bob has graded nothing: alice's pairs come first in his list, in her order.
    assert order(second)[:5] == graded
