"""A judgement reads and folds only the run means it moves, and they stay exact."""

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotations import scores, services
from annotations.formats import score_bytes
from annotations.metrics import exact_arrays
from annotations.models import Collection, Document, Judgement, Query, RunScore
from annotations.scores import folding
from tests.factories import CollectionFactory, UserFactory
from tests.stored import judge_at_random, packed_run_rows

WRITE = Callable[..., Path]
KS = list(range(1, 13))


def _runs(*rows: tuple[int, int]) -> list[folding.RunRow]:
    return [folding.RunRow(run_id, "1,2,3,4", queries, {}) for run_id, queries in rows]


def test_the_plan_keeps_the_moved_runs_measures_and_first_moved_cutoff() -> None:
    old = np.zeros((3, 3, 4))
    old[:, 0] = [0.1, 0.2, 0.3, 0.4]
    new = old.copy()
    new[1, 0, 2:] = 0.9  # run 11's nDCG from the third cutoff on
    new[2, 1, 3] = 0.5  # run 12's nDCG' at the last cutoff
    fold = folding.plan(
        _runs((10, 4), (11, 4), (12, 4)),
        "1,2,3,4",
        ([10, 11, 12], old),
        ([10, 11, 12], new),
        zero_missing=False,
        count_delta=0,
    )
    assert fold.summed.tolist() == [1, 2]
    assert fold.measures == (0, 1)
    assert fold.start == 2
    assert fold.count_only().tolist() == []


def test_the_plan_tells_a_count_that_moves_alone() -> None:
    values = np.full((2, 3, 4), 0.25)
    # A run gaining the query with values of 0.0 moves its count, not its sums.
    fold = folding.plan(
        _runs((10, 4), (11, 4)),
        "1,2,3,4",
        ([10], values[:1]),
        ([10, 11], np.concatenate([values[:1], np.zeros((1, 3, 4))])),
        zero_missing=False,
        count_delta=0,
    )
    assert fold.summed.tolist() == []
    assert fold.count_only().tolist() == [1]
    assert fold.counts.tolist() == [4, 5]
    # -0.0 and 0.0 are equal numbers, but not equal bits: a sum that may move is read.
    negative = folding.plan(
        _runs((10, 4)), "1,2,3,4", ([10], np.zeros((1, 3, 4))), ([10], np.full((1, 3, 4), -0.0)),
        zero_missing=True, count_delta=0,
    )  # fmt: skip
    assert negative.summed.tolist() == [0]


def _collection(write_file: WRITE, rng: random.Random) -> Collection:
    collection = CollectionFactory(slug=f"fold-{rng.randrange(10**6)}", cutoffs=KS)
    docs = [f"d{i}" for i in range(30)]
    for tag in ("alpha", "beta", "gamma", "delta"):
        lines = [
            f"q{q} Q0 {docno} {rank} {20 - rank} {tag}"
            for q in range(3)
            for rank, docno in enumerate(rng.sample(docs, rng.randint(3, 16)), start=1)
        ]
        services.run_import(
            collection=collection, source=write_file(f"{tag}.txt", "\n".join(lines))
        )
    return collection


def test_folded_means_equal_a_rescore_bit_for_bit_and_read_only_what_moved(
    transactional_db: None, write_file: WRITE, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    collection = _collection(write_file, rng)
    assessor = UserFactory(username="folder")
    queries = list(Query.objects.filter(collection=collection))
    documents = list(Document.objects.filter(collection=collection))
    reads: list[tuple[int, int]] = []  # (runs read, first cutoff position read)
    statement = folding.sums_statement

    def recorded(fold: folding.FoldPlan) -> tuple[str, list[Any]]:
        reads.append((len(fold.summed), fold.start))
        return statement(fold)

    monkeypatch.setattr(folding, "sums_statement", recorded)
    for step in range(60):
        judge_at_random(rng, queries, documents, [assessor], delete_share=0.2)
        folded = packed_run_rows(run__collection=collection)
        assert scores.scores_verify(collection=collection) == [], f"step {step}"
        if step % 10 == 9:
            scores.scores_rescore_collection(collection_id=collection.id)
            assert packed_run_rows(run__collection=collection) == folded, f"step {step}"
    # The partial reads happened: some changes read fewer runs than the collection has,
    # some started past the first cutoff.
    assert any(runs < 4 for runs, _ in reads)
    assert any(start > 0 for _, start in reads)


def test_sums_kept_as_text_in_and_out_of_the_read_tail_stay_exact(
    worked_example: Collection, assessor: Any
) -> None:
    worked_example.cutoffs = KS
    worked_example.save()
    scores.scores_rescore_collection(collection_id=worked_example.id)
    row = RunScore.objects.get()
    before = row.per_cutoff()
    # The nDCG sum at the last cutoff (inside any tail a change reads) and the judged@k sum
    # at the first (a measure a grade change does not move) are kept as text.
    ndcg = score_bytes.unpack_sums(row.ndcg_sums, len(KS))
    judged = score_bytes.unpack_sums(row.judged_sums, len(KS))
    last = len(KS) - 1
    row.overflow = {
        f"0:{last}": exact_arrays.to_text(ndcg[last]),
        "2:0": exact_arrays.to_text(judged[0]),
    }
    ndcg[last] = 0
    judged[0] = 0
    row.ndcg_sums, row.judged_sums = score_bytes.pack_sums(ndcg), score_bytes.pack_sums(judged)
    row.save()
    assert RunScore.objects.get().per_cutoff() == before
    query = Query.objects.get()
    judgement = Judgement.objects.filter(query=query, grade__gt=0).select_related("document")[0]
    services.judgement_record(
        query=query, document=judgement.document, assessor=assessor, grade=0, source="api"
    )
    stored = RunScore.objects.get()
    assert sorted(stored.overflow) == sorted([f"0:{last}", "2:0"])
    assert scores.scores_verify(collection=worked_example) == []
    assert stored.per_cutoff() != before
