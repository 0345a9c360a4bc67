#!/usr/bin/env python3
"""Judging-order benchmark: judgements each order needs before the leaderboard is right.

A script, not a test. For each seed it generates, with gen_trec.py ``--unjudged 0``, a
collection whose retrieved documents all carry a hidden grade, starts with nothing judged
and reveals grades one at a time in four orders:

  depth   incremental depth pooling: every query's rank-1 documents of every run, then
          rank 2, ..., rank k (pairs already judged skipped)
  query   query by query: a query's whole depth-k pool (rank 1 of every run, then 2, ...),
          then the next query
  random  the depth-k pool in a random order (seeded)
  impact  highest ``annotations.metrics.impact`` first (over the whole collection; ties by query,
          then first retrieval), recomputed from the judgements so far, the grade prior
          included, after every batch: batch = max(--batch, --growth x judged so far),
          10 then 5% by default, about 90 recomputations for a 5,600-pair pool; a batch
          takes at most twice its even share of one query (``per_query_cap``, as a pool
          by impact does; ``--cap none``: no cap)

``--preset dl19`` takes gen_trec's TREC 2019 Deep Learning shape (37 runs, 43 queries, about
215 judged documents per query, two of them with nothing relevant); ``--start-runs N`` judges
the top k of the first N runs of every query before any order starts (qrels from an earlier,
shallower pooling), so the queries with nothing relevant begin with many judged documents
and none relevant; the counts are the judgements after that start.

After every single judgement it computes Kendall's tau-b between the current leaderboard
(mean nDCG@k over all queries, unjudged documents non-relevant, IDCG from the judged
documents) and the leaderboard under all hidden grades, and prints how many judgements each
order needs to reach tau >= 0.9 and >= 0.95 (and stay there), then tau at fixed counts.

Every order judges the same universe, the depth-k pool (every document some run ranks in
its top k); the truth is the leaderboard with that whole pool judged. Documents below rank
k in every run change only IDCGs and are not revealed (the per-seed line prints tau between
this truth and the one with IDCGs from the whole qrels file); a retrieved document gen_trec
drew from outside its qrels (its unjudged share is clipped noise around 0) has hidden grade
0. nDCG is kept incrementally in numpy (a judgement adds its gain to the DCG of the runs
that rank it, then the query's IDCG is redone); after each order a sample of queries is
checked against ``annotations.metrics.ndcg.query_scores`` to 1e-12 (the incremental sums add in
judging order, not rank order), and the tau-b used here against ``scipy.stats.kendalltau``.
"""

from __future__ import annotations

import argparse
import bisect
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotations.metrics import ndcg  # noqa: E402
from annotations.metrics.impact import (  # noqa: E402
    UNJUDGED,
    QueryTop,
    budget_pick,
    impact_compute,
    per_query_cap,
)

ORDERS = ("depth", "query", "random", "impact")
PRESETS = {  # the shapes gen_trec.py is asked for: runs, queries, depth, mean judged per query
    "small": dict(runs=60, queries=50, depth=100, judged=300),
    "dl19": dict(runs=37, queries=43, depth=100, judged=215),
}
SCALE = (0, 1, 2, 3)
SCHEME = "linear"


def generator() -> Path:
    """The collection generator kept beside the benchmarks."""
    return Path(__file__).resolve().parent / "gen_trec.py"


@dataclass
class Collection:
    qids: list[str]
    runs: list[str]
    tops: list[QueryTop]  # per query: (runs, k) pool indices
    hidden: list[np.ndarray]  # per query: hidden grade of each pool document
    docnos: list[list[str]]  # per query: pool index -> docno
    rankings: list[dict[str, list[str]]]  # per query: run -> top k docnos (for the check)
    qrels_idcgs: list[float]  # per query: IDCG@k of the whole qrels file, retrieved or not


def generate(args: argparse.Namespace, seed: int) -> Path:
    name = f"impact-{args.preset}-seed{seed}" + (f"-grades{args.grades}" if args.grades else "")
    name += f"-norel{args.no_rel_queries}" if args.no_rel_queries is not None else ""
    out = Path(args.workdir) / name
    manifest = out / "manifest.json"
    if not manifest.exists():
        command = [
            sys.executable, str(generator()), str(out), "--preset", args.preset, "--seed",
            str(seed), "--unjudged", "0", "--runs", str(args.runs), "--queries",
            str(args.queries), "--depth", str(args.depth), "--judged", str(args.judged),
        ] + (["--grades", args.grades] if args.grades else []) + (
            ["--no-rel-queries", str(args.no_rel_queries)]
            if args.no_rel_queries is not None else []
        )  # fmt: skip
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return out


def load(folder: Path, k: int) -> Collection:
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels.txt") as handle:
        for line in handle:
            qid, _, docno, grade = line.split()
            qrels.setdefault(qid, {})[docno] = int(grade)
    by_run: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for path in sorted((folder / "runs").glob("*.txt")):
        results: dict[str, list[tuple[str, float]]] = {}
        with open(path) as handle:
            for line in handle:
                qid, _, docno, _, score, _ = line.split()
                results.setdefault(qid, []).append((docno, float(score)))
        by_run[path.stem] = results
    runs = sorted(by_run)
    qids = sorted(qrels, key=lambda q: (len(q), q))
    tops, hidden, docnos, rankings, qrels_idcgs = [], [], [], [], []
    for qid in qids:
        pool: dict[str, int] = {}
        matrix = np.full((len(runs), k), -1, dtype=np.int64)
        ranked: dict[str, list[str]] = {}
        for a, run in enumerate(runs):
            order = ndcg.order_ranking(by_run[run].get(qid, []))[:k]
            ranked[run] = order
            for i, docno in enumerate(order):
                matrix[a, i] = pool.setdefault(docno, len(pool))
        tops.append(QueryTop.of(matrix, len(pool)))
        hidden.append(np.array([qrels[qid].get(d, 0) for d in pool], dtype=np.int64))
        docnos.append(list(pool))
        rankings.append(ranked)
        qrels_idcgs.append(ndcg.idcg(qrels[qid].values(), k, SCHEME))
    return Collection(qids, runs, tops, hidden, docnos, rankings, qrels_idcgs)


class Leaderboard:
    """Mean nDCG@k of every run, kept incrementally as grades are revealed."""

    def __init__(self, collection: Collection, k: int) -> None:
        self.c = collection
        self.k = k
        self.discount = np.array([1.0 / math.log2(i + 2) for i in range(k)])
        n_q, n_r = len(collection.qids), len(collection.runs)
        self.dcg = np.zeros((n_q, n_r))
        self.ndcg = np.zeros((n_q, n_r))
        self.total = np.zeros(n_r)
        self.ideal: list[list[float]] = [[] for _ in range(n_q)]  # judged gains, ascending
        self.grades = [np.full(len(h), UNJUDGED, dtype=np.int64) for h in collection.hidden]
        self.count = 0

    def judge(self, q: int, d: int) -> None:
        grade = int(self.c.hidden[q][d])
        self.grades[q][d] = grade
        self.count += 1
        gain = ndcg.gain(grade, SCHEME)
        if gain <= 0:
            return  # neither a DCG nor the IDCG moves
        self.dcg[q] += gain * self.c.tops[q].weights[:, d]
        bisect.insort(self.ideal[q], gain)
        best = self.ideal[q][::-1][: self.k]
        idcg = float(np.dot(best, self.discount[: len(best)]))
        row = self.dcg[q] / idcg
        self.total += row - self.ndcg[q]
        self.ndcg[q] = row

    @property
    def means(self) -> np.ndarray:
        return self.total / len(self.c.qids)


def kendall_tau(x: np.ndarray, y_signs: np.ndarray, upper: tuple[np.ndarray, np.ndarray]) -> float:
    """Kendall's tau-b of x against the precomputed pair signs of y (0 if x is constant)."""
    x_signs = np.sign(x[upper[0]] - x[upper[1]])
    denominator = math.sqrt(float(np.abs(x_signs).sum()) * float(np.abs(y_signs).sum()))
    return float(np.dot(x_signs, y_signs)) / denominator if denominator else 0.0


def truth(collection: Collection, k: int) -> Leaderboard:
    board = Leaderboard(collection, k)
    for q, hidden in enumerate(collection.hidden):
        for d in range(len(hidden)):
            board.judge(q, d)
    return board


def qrels_truth_tau(collection: Collection, k: int) -> float:
    """tau between the truth (the depth-k pool judged) and the leaderboard whose IDCGs come
    from the whole qrels file (documents no run ranks in its top k included)."""
    board = truth(collection, k)
    idcgs = np.array(collection.qrels_idcgs)[:, None]
    full = np.where(idcgs > 0, board.dcg / np.where(idcgs > 0, idcgs, 1.0), 0.0).mean(axis=0)
    upper = np.triu_indices(len(collection.runs), 1)
    return kendall_tau(full, np.sign(board.means[upper[0]] - board.means[upper[1]]), upper)


def start_pairs(collection: Collection, runs: int) -> list[tuple[int, int]]:
    """The pairs judged before any order starts: the top k of the first ``runs`` runs (by
    name) of every query, as qrels from an earlier, shallower pooling would hold."""
    pairs: dict[tuple[int, int], None] = {}
    for q, top in enumerate(collection.tops):
        for d in top.top[:runs].reshape(-1).tolist():
            if d >= 0:
                pairs.setdefault((q, d), None)
    return list(pairs)


def static_order(
    collection: Collection,
    order: str,
    k: int,
    rng: np.random.Generator,
    judged: set[tuple[int, int]] = frozenset(),  # type: ignore[assignment]
) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set(judged)

    def visit(q: int, rank: int) -> None:
        for d in collection.tops[q].top[:, rank].tolist():
            if d >= 0 and (q, d) not in seen:
                seen.add((q, d))
                pairs.append((q, d))

    n_q = len(collection.qids)
    if order == "depth":
        for rank in range(k):
            for q in range(n_q):
                visit(q, rank)
    elif order == "query":
        for q in range(n_q):
            for rank in range(k):
                visit(q, rank)
    else:
        everything = [(q, d) for q in range(n_q) for d in range(len(collection.hidden[q]))]
        pairs = [everything[i] for i in rng.permutation(len(everything))]
        pairs = [pair for pair in pairs if pair not in seen]
    return pairs


def simulate(
    collection: Collection, order: str, args: argparse.Namespace, seed: int
) -> tuple[np.ndarray, dict[str, float]]:
    k = args.k
    board = Leaderboard(collection, k)
    truth_means = truth(collection, k).means
    upper = np.triu_indices(len(collection.runs), 1)
    truth_signs = np.sign(truth_means[upper[0]] - truth_means[upper[1]])
    start = start_pairs(collection, args.start_runs)
    for q, d in start:
        board.judge(q, d)
    offset = board.count
    total = sum(len(h) for h in collection.hidden)
    taus = np.zeros(total - offset + 1)
    taus[0] = kendall_tau(board.means, truth_signs, upper)
    no_rel = {q for q, hidden in enumerate(collection.hidden) if hidden.max() <= 0}
    first: list[int] = []  # the queries of the first 100 judgements after the start
    info = {"recomputations": 0.0, "model_seconds": 0.0, "no_rel_first_100": 0.0}
    if order != "impact":
        rng = np.random.default_rng(seed)
        for step, (q, d) in enumerate(static_order(collection, order, k, rng, set(start))):
            board.judge(q, d)
            first.append(q)
            taus[step + 1] = kendall_tau(board.means, truth_signs, upper)
    else:
        offsets = np.cumsum([0] + [len(h) for h in collection.hidden])
        query_of = np.repeat(np.arange(len(collection.hidden)), np.diff(offsets))
        while board.count < total:
            started = time.perf_counter()
            result = impact_compute(collection.tops, board.grades, scale=SCALE, scheme=SCHEME)
            info["model_seconds"] += time.perf_counter() - started
            info["recomputations"] += 1
            flat = np.concatenate(result.impacts)
            unjudged = np.concatenate(board.grades) < 0
            flat[~unjudged] = -1.0
            batch = max(args.batch, int(args.growth * (board.count - offset)))
            batch = min(batch, int(unjudged.sum()))
            ranked = np.argsort(-flat, kind="stable")[: int(unjudged.sum())].tolist()
            cap = None
            if args.cap == "spread":
                cap = per_query_cap(batch, len(set(query_of[ranked].tolist())))
            chosen = budget_pick(ranked, dict(enumerate(query_of.tolist())), budget=batch, cap=cap)
            for index in chosen:
                q = int(query_of[index])
                board.judge(q, index - int(offsets[q]))
                first.append(q)
                taus[board.count - offset] = kendall_tau(board.means, truth_signs, upper)
    info["no_rel_first_100"] = float(sum(q in no_rel for q in first[:100]))
    check(collection, board, k)
    return taus, info


def check(collection: Collection, board: Leaderboard, k: int) -> None:
    """The incremental nDCG equals annotations.metrics.ndcg on a sample of queries, and the tau
    used here equals scipy's tau-b (on a state with ties: every query judged to half)."""
    for q in range(0, len(collection.qids), max(1, len(collection.qids) // 10)):
        grades = {collection.docnos[q][d]: int(g) for d, g in enumerate(board.grades[q]) if g >= 0}
        idcgs = ndcg.idcgs_for(grades.values(), [k], SCHEME)
        for a, run in enumerate(collection.runs):
            expected = ndcg.query_scores(collection.rankings[q][run], grades, [k], SCHEME, idcgs)[
                k
            ].ndcg
            if abs(expected - board.ndcg[q, a]) > 1e-12:
                raise SystemExit(f"incremental nDCG differs from scoring: query {q}, run {run}")
    half = Leaderboard(collection, k)
    for q, hidden in enumerate(collection.hidden):
        for d in range(0, len(hidden), 2):
            half.judge(q, d)
    reference = truth(collection, k).means
    upper = np.triu_indices(len(collection.runs), 1)
    ours = kendall_tau(half.means, np.sign(reference[upper[0]] - reference[upper[1]]), upper)
    theirs = float(scipy.stats.kendalltau(half.means, reference).statistic)
    if abs(ours - theirs) > 1e-12:
        raise SystemExit(f"Kendall's tau {ours} differs from scipy's {theirs}")


def first_reaching(taus: np.ndarray, level: float) -> int | None:
    """The first count from which tau stays >= level to the end."""
    below = np.flatnonzero(taus < level)
    if below.size == 0:
        return 0
    return int(below[-1]) + 1 if below[-1] + 1 < len(taus) else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="1,2,3", help="gen_trec seeds (also the random order's)")
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default="small", help="gen_trec's preset and shape"
    )
    parser.add_argument("--runs", type=int)
    parser.add_argument("--queries", type=int)
    parser.add_argument("--depth", type=int)
    parser.add_argument("--judged", type=int, help="gen_trec's mean judged pool per query")
    parser.add_argument(
        "--no-rel-queries", type=int, help="gen_trec's queries with no relevant document"
    )
    parser.add_argument(
        "--start-runs",
        type=int,
        default=0,
        help="judged before every order: the top k of this many runs (counts start after)",
    )
    parser.add_argument(
        "--cap",
        choices=("spread", "none"),
        default="spread",
        help="impact order: at most twice a batch's even share per query (spread) or no cap",
    )
    parser.add_argument("--grades", help="gen_trec's P(grade 0..3), e.g. 0.86,0.10,0.035,0.005")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--batch", type=int, default=10, help="impact order: smallest batch")
    parser.add_argument(
        "--growth", type=float, default=0.05, help="impact order: batch as a share of judged"
    )
    parser.add_argument("--workdir", default=str(ROOT / "benchmarks" / "data"))
    parser.add_argument("--counts", default="100,250,500,750,1000,1500,2000,3000,4000,5000")
    args = parser.parse_args()
    for name, value in PRESETS[args.preset].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    seeds = [int(s) for s in args.seeds.split(",")]
    counts = [int(c) for c in args.counts.split(",")]
    reach: dict[str, dict[float, list[int | None]]] = {o: {0.9: [], 0.95: []} for o in ORDERS}
    curves: dict[str, list[np.ndarray]] = {o: [] for o in ORDERS}
    started = time.perf_counter()
    for seed in seeds:
        collection = load(generate(args, seed), args.k)
        pool = sum(len(h) for h in collection.hidden)
        relevant = sum(int((h > 0).sum()) for h in collection.hidden)
        against_qrels = qrels_truth_tau(collection, args.k)
        no_rel = sum(int(h.max() <= 0) for h in collection.hidden)
        started_with = len(start_pairs(collection, args.start_runs))
        print(f"seed {seed}: {len(collection.runs)} runs x {len(collection.qids)} queries "
              f"({no_rel} with nothing relevant), depth-{args.k} pool {pool} pairs ({relevant} "
              f"relevant), {started_with} judged at the start; tau of the truth "
              f"against IDCGs from the whole qrels {against_qrels:.3f}")  # fmt: skip
        for order in ORDERS:
            taus, info = simulate(collection, order, args, seed)
            curves[order].append(taus)
            for level in (0.9, 0.95):
                reach[order][level].append(first_reaching(taus, level))
            extra = ""
            if order == "impact":
                extra = (f"  ({info['recomputations']:.0f} recomputations, "
                         f"{info['model_seconds']:.1f} s in the model; "
                         f"{info['no_rel_first_100']:.0f} of the first 100 on queries "
                         "with nothing relevant)")  # fmt: skip
            print(f"  {order:<7} tau>=0.9 at {reach[order][0.9][-1]}, "
                  f"tau>=0.95 at {reach[order][0.95][-1]}{extra}")  # fmt: skip

    def show(values: list[int | None]) -> str:
        return " / ".join("never" if v is None else str(v) for v in values)

    print(f"\njudgements to reach tau (and stay), per seed {args.seeds}:")
    print("| order | tau >= 0.9 | mean | tau >= 0.95 | mean |\n|---|---|---:|---|---:|")
    for order in ORDERS:
        cells = []
        for level in (0.9, 0.95):
            values = reach[order][level]
            known = [v for v in values if v is not None]
            mean = f"{np.mean(known):.0f}" if len(known) == len(values) else "-"
            cells += [show(values), mean]
        print(f"| {order} | " + " | ".join(cells) + " |")
    ratios = []
    for impact, depth, query in zip(
        *(reach[o][0.9] for o in ("impact", "depth", "query")), strict=True
    ):
        better = min(v for v in (depth, query, math.inf) if v is not None)
        ratios.append("never" if impact is None else f"{impact / better:.2f}")
    print("\nimpact / better of depth and query, judgements to tau >= 0.9, per seed: "
          + ", ".join(ratios) + " (target <= 0.50)")  # fmt: skip
    print("\nmean tau over seeds at judgement counts:")
    print("| order | " + " | ".join(str(c) for c in counts) + " |")
    print("|---|" + "---:|" * len(counts))
    for order in ORDERS:
        row = [np.mean([t[min(c, len(t) - 1)] for t in curves[order]]) for c in counts]
        print(f"| {order} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    elapsed = time.perf_counter() - started
    print(f"\ntotal {elapsed:.0f} s, numpy {np.__version__}, {os.cpu_count()} cpus")


if __name__ == "__main__":
    main()
