"""People where it matters: a pair only a machine judge graded stays the people's to judge,
and its impact weighs how uncertain the machine's grade is (calibrated against people)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from annotations import services
from annotations.metrics.impact import UNJUDGED, DocumentPrior, QueryTop, impact_compute
from annotations.models import (
    Collection,
    Document,
    DocumentImpact,
    JudgeAnswer,
    MachineJudge,
    Query,
)
from annotations.selectors.impact import impact_inputs
from annotations.selectors.judging import pool_candidates
from tests.factories import CollectionFactory, UserFactory, machine_judge, record_grades

C2 = 1 / math.log2(3)

# --- the model -----------------------------------------------------------------------------


def _swap(document_priors: list[dict[int, DocumentPrior]] | None = None) -> np.ndarray:
    """A = [d1, d2], B = [d2, d1] at k = 2 on the scale 0-1, nothing judged by people."""
    top = QueryTop.of([[0, 1], [1, 0]], 2)
    unjudged = np.array([UNJUDGED, UNJUDGED])
    result = impact_compute(
        [top], [unjudged], scale=[0, 1], scheme="linear", document_priors=document_priors
    )
    return result.impacts[0]


def test_an_own_prior_with_no_calibration_is_the_bucketed_prior() -> None:
    plain = _swap()
    # The swap of test_impact: E = 1/2, I = max((1 + c2) / 2, 1) = 1 (the floor).
    assert plain.tolist() == pytest.approx([(1 - C2) / 2] * 2, rel=1e-12)
    unknown = DocumentPrior(counts=[0, 0])
    assert _swap([{0: unknown, 1: unknown}]).tolist() == plain.tolist()  # every bit


def test_a_reliable_machine_grade_leaves_little_to_move_and_an_uncertain_one_much() -> None:
    # Both documents counted 1 (the machine said 1). Where it said 1, people said 1 a
    # hundred times out of a hundred for d1's grade, half the time for d2's. With the
    # uniform bucketed prior and 4 pseudo-judgements: P(0) = 2/104 and 52/104, so the
    # expected moves |gain(x) - 1| are 2/104 and 52/104; the documents sit symmetrically in
    # the one pair, so their impacts are in that ratio.
    impacts = _swap(
        [{0: DocumentPrior(counts=[0, 100], counted=1), 1: DocumentPrior([50, 50], counted=1)}]
    )
    assert impacts[0] > 0 and impacts[0] / impacts[1] == pytest.approx(2 / 52, rel=1e-12)


def test_a_machine_unsure_of_its_grade_mixes_the_calibration_of_each_grade_it_might_give() -> None:
    # d1: the machine said 1 but gave 0 and 1 half each. Calibration: where it said 0,
    # nothing yet (row: the uniform prior [1/2, 1/2]); where it said 1, people said 1 a
    # hundred times ([2/104, 102/104]). The mixture's P(0) = 1/4 + 1/104, the expected move
    # from the counted 1; d2 as before, 52/104.
    sure = DocumentPrior(counts=[[0, 0], [0, 100]], counted=1, said=[0.5, 0.5])
    impacts = _swap([{0: sure, 1: DocumentPrior([50, 50], counted=1)}])
    assert impacts[0] / impacts[1] == pytest.approx((1 / 4 + 1 / 104) / (52 / 104), rel=1e-12)


def test_an_own_prior_is_refused_for_a_judged_document_or_the_wrong_scale() -> None:
    top = QueryTop.of([[0, 1], [1, 0]], 2)
    grades = [np.array([1, UNJUDGED])]
    with pytest.raises(ValueError, match="document 0: an own prior is for an unjudged"):
        impact_compute(
            [top], grades, scale=[0, 1], scheme="linear",
            document_priors=[{0: DocumentPrior([1, 1])}],
        )  # fmt: skip
    with pytest.raises(ValueError, match="one count >= 0 per grade of the scale"):
        impact_compute(
            [top], grades, scale=[0, 1], scheme="linear",
            document_priors=[{1: DocumentPrior([1, 1, 1])}],
        )  # fmt: skip
    with pytest.raises(ValueError, match="one mapping of document priors per query"):
        impact_compute([top], grades, scale=[0, 1], scheme="linear", document_priors=[])


# --- the platform ---------------------------------------------------------------------------


@pytest.fixture
def hybrid(transactional_db: None) -> Collection:
    """Runs A = [d1, d2] and B = [d2, d1] on q1 and q2 at k = 2. alice judged q1/d2 2; the
    machine judge graded q1/d2 3 (so where it says 3, a person said 2 once), q1/d1 3 and
    q2/d1 0 (no person judged those)."""
    collection = CollectionFactory(slug="hybrid", cutoffs=[2])
    for qid in ("q1", "q2"):
        Query.objects.create(collection=collection, qid=qid)
    for docno in ("d1", "d2"):
        Document.objects.create(collection=collection, docno=docno)
    for name, docs in {"A": ["d1", "d2"], "B": ["d2", "d1"]}.items():
        services.run_store(
            collection=collection,
            run_name=name,
            results={q: [(d, 2.0 - i, i + 1) for i, d in enumerate(docs)] for q in ("q1", "q2")},
        )
    record_grades(collection, UserFactory(username="alice"), {("q1", "d2"): 2})
    machine = machine_judge(collection).account
    record_grades(collection, machine, {("q1", "d2"): 3, ("q1", "d1"): 3, ("q2", "d1"): 0})
    return collection


@pytest.mark.parametrize(
    ("rule", "counted"), [("assessor", True), ("fill", True), ("people", False)]
)
def test_the_model_sees_people_grades_and_the_machine_calibrated(
    hybrid: Collection, rule: str, counted: bool
) -> None:
    services.collection_update(collection=hybrid, machine_grades=rule)
    hybrid.refresh_from_db()
    inputs = impact_inputs(collection=hybrid, k=2)
    assert [g.tolist() for g in inputs.grades] == [[UNJUDGED, 2], [UNJUDGED, UNJUDGED]]
    assert inputs.document_priors is not None
    (q1_d1,), (q2_d1,) = (priors.values() for priors in inputs.document_priors)
    assert q1_d1.counts.tolist() == [0, 0, 1, 0]  # where the machine said 3, a person said 2
    assert q2_d1.counts.tolist() == [0, 0, 0, 0]  # no calibration for its 0 yet
    assert (q1_d1.counted, q2_d1.counted) == ((3, 0) if counted else (None, None))


def test_the_answers_spread_goes_with_a_machine_grade_that_has_one(hybrid: Collection) -> None:
    judge = MachineJudge.objects.get(collection=hybrid)
    q1, d1 = Query.objects.get(collection=hybrid, qid="q1"), hybrid.documents.get(docno="d1")
    JudgeAnswer.objects.create(
        judge=judge, query=q1, document=d1, cache_key="k", model="m", prompt_version=1,
        grade=3, grade_probabilities={"2": 0.25, "3": 0.75},
    )  # fmt: skip
    inputs = impact_inputs(collection=hybrid, k=2)
    assert inputs.document_priors is not None
    (q1_d1,), (q2_d1,) = (priors.values() for priors in inputs.document_priors)
    assert q1_d1.said is not None and list(q1_d1.said) == [0.0, 0.0, 0.25, 0.75]
    assert np.asarray(q1_d1.counts).tolist()[3] == [0, 0, 1, 0]  # the whole matrix
    assert q2_d1.said is None  # its answer gave no spread


def test_two_wordings_that_disagree_split_the_grade_and_two_that_agree_are_sure(
    hybrid: Collection,
) -> None:
    judge = MachineJudge.objects.get(collection=hybrid)
    for qid, variant in (("q1", 2), ("q2", 0)):
        JudgeAnswer.objects.create(
            judge=judge, query=Query.objects.get(collection=hybrid, qid=qid),
            document=hybrid.documents.get(docno="d1"), cache_key=qid, model="m",
            prompt_version=1, grade=3 if qid == "q1" else 0, variant_grade=variant,
        )  # fmt: skip
    inputs = impact_inputs(collection=hybrid, k=2)
    assert inputs.document_priors is not None
    (q1_d1,), (q2_d1,) = (priors.values() for priors in inputs.document_priors)
    assert q1_d1.said is not None and list(q1_d1.said) == [0.0, 0.0, 0.5, 0.5]
    assert q2_d1.said is not None and list(q2_d1.said) == [1.0, 0.0, 0.0, 0.0]


def test_pools_for_people_keep_pairs_only_a_machine_graded(hybrid: Collection) -> None:
    runs = list(hybrid.runs.all())
    candidates = pool_candidates(runs=runs, queries=[], depth=2)
    pairs = {(Query.objects.get(id=q).qid, Document.objects.get(id=d).docno) for q, d in candidates}
    assert pairs == {("q1", "d1"), ("q2", "d1"), ("q2", "d2")}  # q1/d2: alice judged it
    services.collection_update(collection=hybrid, machine_grades="fill")
    pool, added = services.pool_build(
        collection=hybrid, name="hot", depth=2, order="impact", budget=10
    )
    impacts = {
        (q, d): value
        for q, d, value in DocumentImpact.objects.filter(
            snapshot__collection=hybrid, snapshot__k=2
        ).values_list("query__qid", "document__docno", "impact")
    }
    assert impacts[("q1", "d1")] > 0 and impacts[("q2", "d1")] > 0
    entries = set(pool.entries.values_list("query__qid", "document__docno"))
    assert added == len(entries) and ("q1", "d1") in entries
