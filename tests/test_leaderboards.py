"""Leaderboard selectors on a tiny collection: vectors, CI, letters, bounds, comparison by hand."""

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from annotations import services
from annotations.metrics import significance
from annotations.models import Collection, Run
from annotations.scores import snapshots
from annotations.selectors import (
    comparisons,
    query_scores,
    scores_state,
    stored_scores,
    top_grade_bounds,
)
from tests.factories import CollectionFactory, UserFactory
from tests.stored import rewrite_query_scores

L3 = math.log2(3)  # the discount at rank 2
# q1: d1=3, d2=1; q2: d3=2 (d4 unjudged); q3: d5=0 (evaluated, nothing relevant known)
TINY_QRELS = "q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\nq3 0 d5 0\n"
# A: q1 ideal, q2 an unjudged document above the relevant one, q3 not answered
RUN_A = "q1 Q0 d1 1 9 A\nq1 Q0 d2 2 8 A\nq2 Q0 d4 1 9 A\nq2 Q0 d3 2 8 A\n"
# B: q1 swapped, q2 relevant first, q3 a non-relevant then an unjudged document
RUN_B = (
    "q1 Q0 d2 1 9 B\nq1 Q0 d1 2 8 B\nq2 Q0 d3 1 9 B\nq2 Q0 d4 2 8 B\n"
    "q3 Q0 d5 1 9 B\nq3 Q0 d6 2 8 B\n"
)
A_Q1, A_Q2 = 1.0, (2 / L3) / 2
B_Q1, B_Q2 = (1 + 3 / L3) / (3 + 1 / L3), 1.0


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _tiny(write_file: Callable[..., Path], missing: str = "zero") -> Collection:
    collection = CollectionFactory(slug=f"tiny-{missing}", cutoffs=[2], missing_queries=missing)
    services.judgements_import(
        collection=collection,
        source=write_file("tiny.qrels", TINY_QRELS),
        assessor=UserFactory(username="judge"),
    )
    services.run_import(collection=collection, source=write_file("a.run", RUN_A))
    services.run_import(collection=collection, source=write_file("b.run", RUN_B))
    return collection


@pytest.fixture
def tiny(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    return _tiny(write_file)


def test_leaderboard_orders_runs_and_reports_stored_means(tiny: Collection) -> None:
    board = snapshots.leaderboard_current(collection=tiny, k=2)
    assert [row.run.name for row in board.rows] == ["B", "A"]
    best, second = board.rows
    assert best.ndcg == pytest.approx((B_Q1 + B_Q2 + 0.0) / 3, abs=1e-15)
    assert second.ndcg == pytest.approx((A_Q1 + A_Q2 + 0.0) / 3, abs=1e-15)
    assert best.queries == second.queries == 3
    assert second.judged == pytest.approx((1.0 + 0.5 + 0.0) / 3)  # q3 unanswered: judged 0
    assert not board.state.pending
    assert board.state.last_recomputed is not None
    assert board.resamples == 10_000 and board.unscored == []


def test_confidence_interval_is_the_bootstrap_of_the_zero_filled_vector(tiny: Collection) -> None:
    board = snapshots.leaderboard_current(collection=tiny, k=2)
    run_a = next(row for row in board.rows if row.run.name == "A")
    expected = significance.bootstrap_ci([A_Q1, A_Q2, 0.0], resamples=10_000, seed=0)
    assert (run_a.ci_low, run_a.ci_high) == pytest.approx(expected, abs=1e-15)
    assert run_a.ci_low <= run_a.ndcg <= run_a.ci_high
    # fixed seed: the same data always gives the same interval
    again = snapshots.leaderboard_current(collection=tiny, k=2)
    assert again.rows[1].ci_low == run_a.ci_low


def test_skip_mode_averages_only_the_answered_queries(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    collection = _tiny(write_file, missing="skip")
    board = snapshots.leaderboard_current(collection=collection, k=2)
    run_a = next(row for row in board.rows if row.run.name == "A")
    assert run_a.queries == 2
    assert run_a.ndcg == pytest.approx((A_Q1 + A_Q2) / 2)
    expected = significance.bootstrap_ci([A_Q1, A_Q2], resamples=10_000, seed=0)
    assert (run_a.ci_low, run_a.ci_high) == pytest.approx(expected)
    scores = stored_scores.run_scores(run=Run.objects.get(name="A"), k=2)
    assert [row.qid for row in scores.per_query] == ["q1", "q2"]


def test_bounds_promote_unjudged_top_k_documents_to_the_highest_grade(tiny: Collection) -> None:
    board = snapshots.leaderboard_current(collection=tiny, k=2)
    rows = {row.run.name: row for row in board.rows}
    # A, q2: d4 -> 3 at rank 1 makes the ranking ideal (3, 2); q1 has nothing unjudged; q3 is
    # unanswered and stays 0.
    assert rows["A"].ndcg_top_grade == pytest.approx((1.0 + 1.0 + 0.0) / 3)
    # B, q2: (2, 3) against the new ideal (3, 2): below the reported 1.0, because d4 joins
    # the ideal list; q3: (0, 3) against (3) -> 3/log2(3) / 3.
    b_q2 = (2 + 3 / L3) / (3 + 2 / L3)
    b_q3 = (3 / L3) / 3
    assert rows["B"].ndcg_top_grade == pytest.approx((B_Q1 + b_q2 + b_q3) / 3)


def test_bounds_read_the_top_k_of_all_runs_in_one_query(
    tiny: Collection, django_assert_max_num_queries: Callable[..., object]
) -> None:
    run_ids = list(Run.objects.filter(collection=tiny).values_list("id", flat=True))
    evaluated = set(tiny.queries.values_list("id", flat=True))
    with django_assert_max_num_queries(4):  # grade scale, results, adjudications, judgements
        bounds = top_grade_bounds.top_grade_bounds_by_query(
            collection=tiny, k=2, run_ids=run_ids, query_ids=evaluated
        )
    assert sum(len(per_query) for per_query in bounds.values()) == 3  # A q2, B q2, B q3


def test_bounds_a_batch_of_queries_at_a_time_are_the_same_bounds(
    tiny: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queries are taken a batch at a time (memory bounded by a batch's rankings); batches of
    one query give what one batch of every query gives, for every query asked or all."""
    run_ids = list(Run.objects.filter(collection=tiny).values_list("id", flat=True))
    whole = top_grade_bounds.top_grade_bounds_by_query(collection=tiny, k=2, run_ids=run_ids)
    monkeypatch.setattr(top_grade_bounds, "QUERY_BATCH", 1)
    assert (
        top_grade_bounds.top_grade_bounds_by_query(collection=tiny, k=2, run_ids=run_ids) == whole
    )
    some = set(tiny.queries.filter(qid__in=["q2", "q3"]).values_list("id", flat=True))
    assert top_grade_bounds.top_grade_bounds_by_query(
        collection=tiny, k=2, run_ids=run_ids, query_ids=some
    ) == {query_id: whole[query_id] for query_id in some if query_id in whole}
    assert len(whole) == 2  # q2 (A and B) and q3 (B)


def test_run_scores_zero_fill_unanswered_queries_from_stored_values(tiny: Collection) -> None:
    run_a = Run.objects.get(collection=tiny, name="A")
    scores = stored_scores.run_scores(run=run_a, k=2)
    assert [(row.qid, row.answered) for row in scores.per_query] == [
        ("q1", True),
        ("q2", True),
        ("q3", False),
    ]
    assert scores.per_query[1].ndcg == A_Q2 and scores.per_query[1].judged == 0.5
    assert rewrite_query_scores(k=2, values={"ndcg": 0.25}, run=run_a, query__qid="q1") == 1
    assert (
        stored_scores.run_scores(run=run_a, k=2).per_query[0].ndcg == 0.25
    )  # stored, not recomputed


def test_compare_counts_wins_ties_losses_with_a_paired_p_value(tiny: Collection) -> None:
    a, b = Run.objects.get(name="A"), Run.objects.get(name="B")
    comparison = comparisons.runs_compare(a=a, b=b, k=2)
    assert [row.qid for row in comparison.rows] == ["q1", "q2", "q3"]
    assert [row.difference for row in comparison.rows] == pytest.approx(
        [A_Q1 - B_Q1, A_Q2 - B_Q2, 0.0]
    )
    assert (comparison.wins, comparison.ties, comparison.losses) == (1, 1, 1)
    # every sign flip of (+0.20, -0.37) reaches |sum| = 0.17: p = 1 exactly
    assert comparison.p_value == 1.0
    assert comparison.mean_difference == pytest.approx(comparison.mean_a - comparison.mean_b)


def test_all_pairs_letters_separate_a_run_that_wins_every_query_from_two_that_never_do(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    collection = CollectionFactory(slug="groups", cutoffs=[1])
    qrels = "".join(f"q{i} 0 rel{i} 3\n" for i in range(8))
    services.judgements_import(
        collection=collection, source=write_file("t.qrels", qrels), assessor=UserFactory()
    )
    good = "".join(f"q{i} Q0 rel{i} 1 1 good\n" for i in range(8))
    bad = "".join(f"q{i} Q0 junk{i} 1 1 {{tag}}\n" for i in range(8))
    services.run_import(collection=collection, source=write_file("g.run", good))
    services.run_import(collection=collection, source=write_file("b1.run", bad.format(tag="bad1")))
    services.run_import(collection=collection, source=write_file("b2.run", bad.format(tag="bad2")))
    board = snapshots.leaderboard_complete(collection=collection, k=1)
    assert board.significance_current
    assert [row.run.name for row in board.rows] == ["good", "bad1", "bad2"]
    # The range of the shuffled means reaches 1 only when all eight 1.0s land on one run:
    # 3 (1/3)^8 of the shuffles, so p = (1 + hits) / 10001 is far below 0.05 for good vs
    # either bad run, and 1.0 between the two identical bad runs.
    assert [row.letters for row in board.rows] == ["a", "b", "b"]
    assert [row.below_best for row in board.rows] == [False, True, True]
    assert board.rows[0].p_best == 1.0
    assert board.rows[1].p_best is not None and board.rows[1].p_best < 0.01
    assert board.significance is not None and board.significance.permutations == 10_000
    # the upper bound: the unjudged junk at rank 1 with grade 3 would be ideal
    assert board.rows[1].ndcg_top_grade == 1.0


def test_state_stamp_moves_with_a_judgement_and_a_new_run_is_listed_unscored(
    tiny: Collection,
) -> None:
    before = scores_state.scores_state(collection=tiny)
    query = tiny.queries.get(qid="q2")
    document = tiny.documents.get(docno="d4")
    services.judgement_record(
        query=query,
        document=document,
        assessor=UserFactory(username="judge"),
        grade=3,
        source="api",
    )
    after = scores_state.scores_state(collection=tiny)
    assert after.stamp != before.stamp and not after.pending
    board = snapshots.leaderboard_current(collection=tiny, k=2)
    run_a = next(row for row in board.rows if row.run.name == "A")
    assert run_a.ndcg == pytest.approx((1.0 + 1.0 + 0.0) / 3)  # d4 now graded 3: q2 is ideal
    Run.objects.create(collection=tiny, name="fresh")
    board = snapshots.leaderboard_current(collection=tiny, k=2)
    assert [run.name for run in board.unscored] == ["fresh"]
    assert board.state.pending and board.state.pending_runs == 1


def test_query_overview_and_side_by_side_show_grades_and_unjudged(tiny: Collection) -> None:
    query = tiny.queries.get(qid="q2")
    overview = query_scores.query_overview(query=query, k=2)
    assert [(row.run.name, row.ndcg) for row in overview.runs] == [("B", 1.0), ("A", A_Q2)]
    judged = query_scores.query_judged(query=query)
    assert [(doc.docno, doc.grade) for doc in judged] == [("d3", 2)]
    runs = list(Run.objects.filter(collection=tiny).order_by("name"))
    sides = query_scores.query_rankings_side_by_side(query=query, runs=runs, k=2)
    assert [(d.docno, d.grade) for d in sides[runs[0].id]] == [("d4", None), ("d3", 2)]
    assert [d.docno for d in sides[runs[1].id]] == ["d3", "d4"]
    assert len(query_scores.query_unjudged_top(query=query, k=2)) == 1
