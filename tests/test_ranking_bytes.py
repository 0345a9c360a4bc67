"""Packed rankings: ids, scores and ranks survive a round trip bit for bit."""

import math

import pytest

from annotations.formats import ranking_bytes


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
