"""Packed rankings: ids, scores and ranks survive a round trip bit for bit; so do the ranks of
their qrels documents."""

import math

import numpy as np
import pytest

from annotations.formats import ranking_bytes
from annotations.metrics.qrels_ranks import QrelsRanks, qrels_ranks


def test_ids_round_trip_and_top_k_read() -> None:
    ids = [1, 2**40, 7, 0, 2**63 - 1]
    data = ranking_bytes.pack_ids(ids)
    assert len(data) == 8 * len(ids)
    assert ranking_bytes.unpack_ids(data) == ids
    assert ranking_bytes.unpack_ids(data, 2) == [1, 2**40]
    assert ranking_bytes.unpack_ids(memoryview(data), 10) == ids


def test_scores_keep_every_bit() -> None:
    scores = [0.1 + 0.2, 1e-300, -0.0, 123456789.123456789, 5e-324]
    back = ranking_bytes.unpack_scores(ranking_bytes.pack_scores(scores))
    assert [s.hex() for s in back] == [s.hex() for s in scores]
    assert math.copysign(1.0, back[2]) == -1.0


def test_ranks_round_trip() -> None:
    assert ranking_bytes.unpack_ranks(ranking_bytes.pack_ranks([1, 2, 1000, -3])) == [
        1,
        2,
        1000,
        -3,
    ]


def test_truncated_bytes_are_refused() -> None:
    with pytest.raises(ValueError, match="whole number"):
        ranking_bytes.unpack_scores(b"\x00" * 9)


def _reduced(rankings: list[list[int]], documents: list[int]) -> QrelsRanks:
    return qrels_ranks(rankings, np.array(documents, dtype=np.int64))


def _same(a: QrelsRanks, b: QrelsRanks) -> None:
    for name in ("documents", "lengths", "rows", "positions", "indices"):
        assert getattr(a, name).tolist() == getattr(b, name).tolist(), name


def test_qrels_ranks_round_trip_a_bit_per_result_and_two_bytes_per_document() -> None:
    reduced = _reduced([[5, 9, 1, 3, 8, 2, 4, 6, 7], [], [3], [11, 12]], [3, 7, 9])
    packed = ranking_bytes.pack_qrels_ranks(reduced)
    # 9 results: 2 bytes of bits (9th bit in the second), then 3 documents of 2 bytes.
    assert packed[0] == bytes([0b01010000, 0b10000000]) + bytes([2, 0, 0, 0, 1, 0])
    assert packed[1] == b""
    assert packed[2] == bytes([0b10000000, 0, 0])
    assert packed[3] == bytes([0])
    back = ranking_bytes.unpack_qrels_ranks(reduced.documents, reduced.lengths, packed)
    _same(back, reduced)


def test_qrels_ranks_of_a_query_with_many_documents_have_four_byte_indices() -> None:
    documents = list(range(0, 2 * 70_000, 2))  # more than 65,536
    reduced = _reduced([[documents[-1], 1, documents[3]]], documents)
    (packed,) = ranking_bytes.pack_qrels_ranks(reduced)
    assert len(packed) == 1 + 2 * 4
    _same(ranking_bytes.unpack_qrels_ranks(reduced.documents, reduced.lengths, [packed]), reduced)


def test_qrels_ranks_that_do_not_fit_their_ranking_are_refused() -> None:
    reduced = _reduced([[1, 2, 3]], [1, 3])
    (packed,) = ranking_bytes.pack_qrels_ranks(reduced)
    with pytest.raises(ValueError, match="do not fit"):  # a bit beyond the 2 results
        ranking_bytes.unpack_qrels_ranks(reduced.documents, np.array([2]), [packed])
    with pytest.raises(ValueError, match="do not fit"):  # an index missing
        ranking_bytes.unpack_qrels_ranks(reduced.documents, reduced.lengths, [packed[:-2]])
    with pytest.raises(ValueError, match="beyond the qrels"):
        ranking_bytes.unpack_qrels_ranks(reduced.documents[:1], reduced.lengths, [packed])
    # Two runs whose bits and indices disagree, though their totals agree.
    two = _reduced([[1, 3], [1, 3]], [1, 3])
    first, second = ranking_bytes.pack_qrels_ranks(two)
    with pytest.raises(ValueError, match="do not fit"):
        ranking_bytes.unpack_qrels_ranks(
            two.documents, two.lengths, [first[:-2], second + first[-2:]]
        )


def test_the_digest_names_the_set_of_documents() -> None:
    digest = ranking_bytes.qrels_digest(np.array([1, 5, 9], dtype=np.int64))
    assert len(digest) == 16
    assert digest == ranking_bytes.qrels_digest(np.array([1, 5, 9], dtype=np.int64))
    assert digest != ranking_bytes.qrels_digest(np.array([1, 5], dtype=np.int64))
    assert digest != ranking_bytes.qrels_digest(np.array([1, 5, 10], dtype=np.int64))
