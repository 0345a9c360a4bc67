"""Kept qrels ranks: a grade change reads no whole ranking, and whatever moves a ranking or the
qrels' documents (a new document judged, a judgement deleted, a run imported again, a qrels
import) leaves every kept measure equal to trec_eval's (pytrec_eval's) bit for bit."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotations import scores, selectors, services
from annotations.models import HEAD_IDS, Collection, Document, Judgement, Query, RankingQrels
from tests.factories import CollectionFactory, UserFactory
from tests.stored import kept_values, trec_eval_values

WRITE = Callable[..., Path]

# Measures that read whole rankings (so scoring reads the kept ranks), and one with a cutoff.
TREC = {
    "AP": ("map", "map", 1),
    "RR": ("recip_rank", "recip_rank", 1),
    "Rprec": ("Rprec", "Rprec", 1),
    "Bpref": ("bpref", "bpref", 1),
    "infAP": ("infAP", "infAP", 1),
    "nDCG": ("ndcg", "ndcg", 1),
    "P@5": ("P.5", "P_5", 1),
}
DEPTH = HEAD_IDS + 72  # rankings longer than their in-row heads
RUNS = ("alpha", "beta", "gamma")


def _run_lines(tag: str, rng: random.Random) -> str:
    lines = []
    for q in range(3):
        picked = rng.sample(range(DEPTH + 100), DEPTH)
        lines += [f"q{q} Q0 d{d} {rank} {DEPTH - rank} {tag}" for rank, d in enumerate(picked)]
    return "\n".join(lines)


@pytest.fixture
def collection(transactional_db: None, write_file: WRITE) -> Collection:
    """Three runs over three queries, half of the documents judged, the measures kept."""
    rng = random.Random(41)
    collection = CollectionFactory(slug="kept-ranks", cutoffs=[5, 10])
    for tag in RUNS:
        services.run_import(
            collection=collection, source=write_file(f"{tag}.txt", _run_lines(tag, rng))
        )
    qrels = [
        f"q{q} 0 d{d} {rng.choice([0, 0, 1, 2, 3])}" for q in range(3) for d in range(0, 300, 2)
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(qrels)),
        assessor=UserFactory(username="nist"),
    )
    services.collection_update(collection=collection, measures=list(TREC))
    collection.refresh_from_db()
    _assert_equal_to_trec_eval(collection)
    return collection


def _assert_equal_to_trec_eval(collection: Collection) -> None:
    assert kept_values(collection) == trec_eval_values(collection, TREC)  # every bit
    assert scores.scores_verify(collection=collection) == []


def _kept_rows(collection: Collection) -> dict[tuple[str, str], tuple[int, bytes, bytes]]:
    return {
        (run, qid): (ranking, bytes(digest), bytes(ranks))
        for run, qid, ranking, digest, ranks in RankingQrels.objects.filter(
            query__collection=collection
        ).values_list("run__name", "query__qid", "ranking_id", "digest", "ranks")
    }


def _record(collection: Collection, qid: str, docno: str, grade: int, who: str = "nist") -> None:
    services.judgement_record(
        query=Query.objects.get(collection=collection, qid=qid),
        document=Document.objects.get(collection=collection, docno=docno),
        assessor=UserFactory._meta.model.objects.get(username=who),
        grade=grade,
        source="api",
    )


@pytest.fixture
def whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The rankings a judgement's recomputation reads whole (ranking ids, per read)."""
    reads: list[list[int]] = []
    read = selectors.rankings_by_id

    def recorded(ranking_ids: list[int]) -> Any:
        if ranking_ids:
            reads.append(list(ranking_ids))
        return read(ranking_ids)

    monkeypatch.setattr(selectors, "rankings_by_id", recorded)
    return reads


def test_every_ranking_keeps_its_ranks_after_the_rescore(collection: Collection) -> None:
    assert set(_kept_rows(collection)) == {(run, f"q{q}") for run in RUNS for q in range(3)}


def test_a_grade_change_reads_no_whole_ranking(
    collection: Collection, whole_reads: list[list[int]]
) -> None:
    kept = _kept_rows(collection)
    judged = Judgement.objects.filter(query__collection=collection, query__qid="q1")
    for judgement in judged.select_related("document")[:5]:
        _record(collection, "q1", judgement.document.docno, (judgement.grade + 1) % 4)
    assert whole_reads == []
    assert _kept_rows(collection) == kept  # a grade change moves no document in or out
    _assert_equal_to_trec_eval(collection)


def test_a_document_entering_the_qrels_deep_in_a_ranking_is_found(
    collection: Collection, whole_reads: list[list[int]]
) -> None:
    query = Query.objects.get(collection=collection, qid="q2")
    judged = set(Judgement.objects.filter(query=query).values_list("document_id", flat=True))
    # An unjudged document of alpha's ranking below its in-row head.
    ranking = selectors.query_rankings(query_id=query.id)[collection.runs.get(name="alpha").id]
    deep = next(doc for doc in ranking[HEAD_IDS:] if doc not in judged)
    kept = _kept_rows(collection)
    _record(collection, "q2", Document.objects.get(id=deep).docno, 3)
    assert len(whole_reads) == 1 and len(whole_reads[0]) == len(RUNS)  # q2's, read once
    now = _kept_rows(collection)
    assert {key for key in now if now[key][1] != kept[key][1]} == {(run, "q2") for run in RUNS}
    _assert_equal_to_trec_eval(collection)


def test_a_deleted_judgement_takes_its_document_out_of_the_ranks(collection: Collection) -> None:
    for judgement in Judgement.objects.filter(query__collection=collection, grade__gt=0)[:4]:
        services.judgement_delete(judgement=judgement, source="api")
    _assert_equal_to_trec_eval(collection)


def test_a_second_assessor_on_new_documents_and_a_qrels_import(
    collection: Collection, write_file: WRITE
) -> None:
    UserFactory(username="second")
    _record(collection, "q0", "d1", 2, who="second")  # unjudged so far: enters the qrels
    _assert_equal_to_trec_eval(collection)
    lines = [f"q{q} 0 d{d} {(d + q) % 4}" for q in range(3) for d in range(1, 300, 4)]
    services.judgements_import(
        collection=collection,
        source=write_file("more.txt", "\n".join(lines)),
        assessor=UserFactory(username="nist2"),
    )
    _assert_equal_to_trec_eval(collection)


def test_a_run_imported_again_is_ranked_afresh(collection: Collection, write_file: WRITE) -> None:
    before = _kept_rows(collection)
    services.run_import(
        collection=collection,
        source=write_file("beta2.txt", _run_lines("beta", random.Random(7))),
        replace=True,
    )
    after = _kept_rows(collection)
    assert all(after[("beta", q)][0] != before[("beta", q)][0] for q in ("q0", "q1", "q2"))
    _assert_equal_to_trec_eval(collection)
    # A grade change after it uses the new ranking's ranks.
    judgement = Judgement.objects.filter(query__collection=collection, query__qid="q0").first()
    assert judgement is not None
    _record(collection, "q0", judgement.document.docno, (judgement.grade + 2) % 4)
    _assert_equal_to_trec_eval(collection)


def test_ranks_kept_from_another_ranking_are_found_again(
    collection: Collection, whole_reads: list[list[int]]
) -> None:
    # gamma's row holds alpha's ranks (for the current documents): not its ranking's.
    row = RankingQrels.objects.get(run__name="gamma", query__qid="q1")
    other = RankingQrels.objects.get(run__name="alpha", query__qid="q1")
    RankingQrels.objects.filter(id=row.id).update(ranks=other.ranks, ranking_id=other.ranking_id)
    judgement = Judgement.objects.filter(query__collection=collection, query__qid="q1").first()
    assert judgement is not None
    _record(collection, "q1", judgement.document.docno, (judgement.grade + 1) % 4)
    assert whole_reads == [[row.ranking_id]]
    _assert_equal_to_trec_eval(collection)


def test_verify_reports_current_ranks_that_are_wrong_and_a_rescore_mends_them(
    collection: Collection,
) -> None:
    row = RankingQrels.objects.get(run__name="beta", query__qid="q0")
    bits = np.frombuffer(bytes(row.ranks), dtype=np.uint8).copy()
    bits[0] ^= 0b11000000  # two results swapped in and out of the qrels
    RankingQrels.objects.filter(id=row.id).update(ranks=bits.tobytes())
    assert scores.scores_verify(collection=collection) == [
        "run=beta query=q0: kept qrels ranks differ from those of its ranking"
    ]
    scores.scores_rescore_collection(collection_id=collection.id)
    _assert_equal_to_trec_eval(collection)


def test_a_measure_set_reading_no_whole_ranking_drops_the_kept_ranks(
    collection: Collection,
) -> None:
    gamma = RankingQrels.objects.get(run__name="gamma", query__qid="q2")
    services.collection_update(collection=collection, measures=["P@5"])
    collection.refresh_from_db()
    assert not RankingQrels.objects.filter(query__collection=collection).exists()
    _assert_equal_to_trec_eval(collection)
    # Ranks kept anyway (as before that rescore): the heads of their rankings are not read,
    # the rankings are read whole.
    gamma.save(force_insert=True)
    judgement = Judgement.objects.filter(query__collection=collection, query__qid="q2").first()
    assert judgement is not None
    _record(collection, "q2", judgement.document.docno, (judgement.grade + 1) % 4)
    _assert_equal_to_trec_eval(collection)
