"""A TREC-sized campaign for page and significance tests: 34 runs with 150-character names."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from annotations import services
from annotations.models import Collection, Query
from tests.factories import CollectionFactory, UserFactory

RUNS = 34
QUERIES = 50
NAME_LENGTH = 150


def run_name(index: int) -> str:
    """Run ``index`` (0 best) named as long as a TREC participant's descriptive tags get."""
    stem = f"team{index:02d}-bm25-rm3-monoT5-rerank-"
    return (stem + "long-descriptive-run-tag-" * 10)[: NAME_LENGTH - 3] + f"{index:03d}"


def quality(index: int, runs: int = RUNS) -> float:
    """The share of relevant documents in run ``index``'s top 10: 0.9 down to 0.0, so the
    leaderboard spans about 0.82 to 0.01 as a real campaign's does."""
    return 0.9 * (1 - index / (runs - 1))


def campaign(
    write_file: Callable[..., Path], *, slug: str = "trec34", seed: int = 34, runs: int = RUNS
) -> Collection:
    """50 queries (titled) with 10 relevant documents each (grades 1-3) and 30 judged
    non-relevant, and ``runs`` (34) runs whose top 10 holds ``quality(i)`` relevant documents on
    average, best run first in name order."""
    rng = random.Random(seed)
    collection = CollectionFactory(slug=slug, cutoffs=[5, 10])
    for q in range(QUERIES):
        Query.objects.create(collection=collection, qid=f"q{q:03d}", title=f"topic {q} title")
    qrels = []
    for q in range(QUERIES):
        qrels += [f"q{q:03d} 0 r{q}-{d} {rng.randint(1, 3)}" for d in range(10)]
        qrels += [f"q{q:03d} 0 n{q}-{d} 0" for d in range(30)]
    services.judgements_import(
        collection=collection,
        source=write_file(f"{slug}.qrels", "\n".join(qrels) + "\n"),
        assessor=UserFactory(username=f"{slug}-import"),
    )
    for index in range(runs):
        results = {}
        for q in range(QUERIES):
            relevant = [f"r{q}-{d}" for d in rng.sample(range(10), 10)]
            junk = [f"n{q}-{d}" for d in rng.sample(range(30), 20)]
            ranking = [
                relevant.pop() if relevant and rng.random() < quality(index, runs) else junk.pop()
                for _ in range(10)
            ]
            results[f"q{q:03d}"] = [(doc, float(10 - r), r + 1) for r, doc in enumerate(ranking)]
        services.run_store(collection=collection, run_name=run_name(index), results=results)
    return collection
