"""The bootstrap CIs of a kept measure's leaderboard, computed when read: 110 runs x 249
queries (Robust04's shape), in a fresh process, again, and with 5 runs' values moved."""

from __future__ import annotations

import time

import numpy as np

from annotations.selectors import leaderboards

RUNS, QUERIES, MOVED = 110, 249, 5


def main() -> None:
    rng = np.random.default_rng(1)
    query_ids = list(range(QUERIES))
    vectors = {run: (query_ids, np.round(rng.random(QUERIES), 1)) for run in range(RUNS)}
    with_values = list(vectors)

    def timed(
        known: leaderboards.KnownIntervals | None,
    ) -> tuple[float, dict[int, tuple[float, float]]]:
        start = time.perf_counter()
        intervals = leaderboards.intervals_kept(with_values, vectors, known)
        return time.perf_counter() - start, intervals

    cold, intervals = timed(None)
    warm, _ = timed(None)
    known = leaderboards.KnownIntervals(
        tuple(query_ids),
        {run: np.ascontiguousarray(v, dtype="<f8").tobytes() for run, (_, v) in vectors.items()},
        intervals,
    )
    for run in range(MOVED):
        vectors[run] = (query_ids, np.round(rng.random(QUERIES), 1))
    moved, _ = timed(known)
    print(f"| first in a process | {cold:.2f} s |")
    print(f"| again (draws held) | {warm:.2f} s |")
    print(f"| {MOVED} runs' values moved | {moved:.3f} s |")


if __name__ == "__main__":
    main()
