#!/usr/bin/env python3
"""Machine judges beside people (issue 26): the people-judgements each strategy needs.

A simulation, not a test, framework-free (no Django, no database). Method:

- **Simulated**: the world (``hybrid_world.py``): per seed a hidden truth (queries x
  candidate documents graded 0-3, 4-30% relevant per query), runs of varied quality (a
  quality per run, varied per query) ranking ``depth`` documents each; the pool is every
  document some run ranks within ``depth``, and the truth is that whole pool judged by
  people. A machine judge per target kappa (0.3, 0.5, 0.6 by default): grades drawn around
  the truth (a rounded normal error scaled per pair by its difficulty, slightly lenient),
  its noise scale found by bisection so that its quadratic weighted kappa against the
  truth over the pool is the target, and a reported grade distribution whose entropy is
  its uncertainty (larger where its errors are, known to the judge only roughly).
- **Real**: the engine's pure modules: nDCG@k as trec_eval computes it
  (``annotations.metrics.ndcg`` and ``ndcg_arrays``: the leaderboards are computed by a
  numpy twin checked against them to 1e-12 on several states per simulation), Kendall's
  tau-b and tau_ap (``annotations.metrics.rank_correlation``), the achieved kappa
  (``annotations.metrics.agreement``) and the impact model (``annotations.metrics.impact``).

The leaderboard is the mean nDCG@k (k = 10) of every run. Each strategy adds people's
judgements (true grades) in batches of ``max(--batch, --growth x people-judged so far)``,
recomputes the leaderboard under what is judged so far and compares it with the truth's:

  depth    people only, depth pooling: rank 1 of every run for every query, then rank 2, ...
           (unjudged = non-relevant)
  impact   people only, highest ``impact_compute`` first (the engine's model, recomputed
           after every batch), then the rest in depth order once no pair has impact left
  hybrid   the machine's grade on every pool pair, a person's where one judged; people
           judge the highest priority first: the engine's impact model (its pair weights,
           ``pair_weights``, and rank weights, ``QueryTop``) with the judge's reported
           distribution as each pair's prior, and a pair's move measured from its machine
           grade: ``E|gain(person) - gain(machine)|`` under that distribution (so impact
           and uncertainty together); then the rest in depth order
  hybrid-depth  the machine everywhere, people in depth order: the priority's ablation

A strategy's need is the people-judgements from which Kendall's tau (and, separately,
tau_ap) against the truth's ranking stays >= 0.9 to the end of the curve (every pool pair
judged), at the batches' resolution. The target (issue 26): at kappa 0.5 the hybrid needs
at most 1/4 of depth pooling's people-judgements (means over seeds).

Not simulated: real LLM judges' errors are correlated (by query, by document style, by
the systems that retrieved a document). By default they are independent per pair given
its difficulty, which favours machine grades, since independent errors average out over
a run's pairs; ``--style-bias B`` adds one correlated error: the judge over-grades by B
the "styled" documents (30% of them) that 30% of the runs prefer, so the machine-only
leaderboard overrates those runs (the kappa search includes that error). People's grades
are the truth itself: no disagreement between people is simulated.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hybrid_strategies import LEVEL, simulate
from hybrid_world import (
    Sizes,
    engine_means,
    generate,
    judge_for,
    judge_noise,
    uncertainty_informative,
)

from annotations.metrics import rank_correlation

TARGET_KAPPA = 0.5
TARGET_SHARE = 0.25


def run_seed(args: argparse.Namespace, sizes: Sizes, seed: int) -> dict[str, object]:
    """Every strategy on one seed's collection; depth and impact need no judge."""
    collection = generate(sizes, seed)
    truth_means = engine_means(collection, collection.truth)
    valid = collection.valid()
    relevant = float((collection.truth[valid] > 0).mean())
    top_pool = sum(top.weights.shape[1] for top in collection.tops)
    print(f"seed {seed}: {collection.runs} runs x {len(collection.sizes)} queries x depth "
          f"{sizes.depth}: pool {collection.pairs} pairs ({relevant:.0%} relevant), "
          f"top-{sizes.k} pool {top_pool}", flush=True)  # fmt: skip
    options = {"batch": args.batch, "growth": args.growth}
    result: dict[str, object] = {"seed": seed, "pool": collection.pairs, "top_pool": top_pool}
    result["relevant_share"] = relevant
    needs: dict[str, dict[str, int | None]] = {}
    for strategy in ("depth", "impact"):
        started = time.perf_counter()
        curve = simulate(collection, truth_means, strategy, None, **options)
        needs[strategy] = {m: curve.needed(m) for m in ("tau", "tau_ap")}
        seconds = time.perf_counter() - started
        print(f"  {strategy:<6} tau>=0.9 at {needs[strategy]['tau']}, tau_ap>=0.9 at "
              f"{needs[strategy]['tau_ap']} ({seconds:.1f} s)", flush=True)  # fmt: skip
        result[f"curve_{strategy}"] = asdict(curve)
    noise = judge_noise(collection, seed)
    judges = []
    for target in args.kappas:
        judge = judge_for(
            collection,
            noise,
            target,
            leniency=args.leniency,
            overconfidence=args.overconfidence,
            style_bias=args.style_bias,
        )
        if abs(judge.kappa - target) > 0.01:  # e.g. a style bias alone below the target
            print(f"  warning: the judge reaches kappa {judge.kappa:.3f}, not {target}")
        machine = engine_means(collection, judge.grades)
        tau = rank_correlation.kendall_tau_b(machine.tolist(), truth_means.tolist())
        names = [f"run{r:03d}" for r in range(collection.runs)]
        tau_ap = rank_correlation.tau_ap(
            rank_correlation.ranking(dict(zip(names, truth_means.tolist(), strict=True))),
            rank_correlation.ranking(dict(zip(names, machine.tolist(), strict=True))),
        )
        wrong_low, wrong_high = uncertainty_informative(collection, judge)
        started = time.perf_counter()
        curve = simulate(collection, truth_means, "hybrid", judge, **options)
        need = {m: curve.needed(m) for m in ("tau", "tau_ap")}
        ablation = simulate(collection, truth_means, "hybrid-depth", judge, **options)
        need_depth = {m: ablation.needed(m) for m in ("tau", "tau_ap")}
        print(f"  hybrid kappa {target} (achieved {judge.kappa:.3f}, sigma {judge.sigma:.3f}): "
              f"machine only tau {tau:.3f} tau_ap {tau_ap:.3f}; wrong grades {wrong_low:.0%} "
              f"of the least, {wrong_high:.0%} of the most uncertain quarter; tau>=0.9 at "
              f"{need['tau']}, tau_ap>=0.9 at {need['tau_ap']} (people in depth order: "
              f"{need_depth['tau']}, {need_depth['tau_ap']}; "
              f"{time.perf_counter() - started:.1f} s)", flush=True)  # fmt: skip
        judges.append({
            "target": target, "kappa": judge.kappa, "sigma": judge.sigma,
            "machine_tau": tau, "machine_tau_ap": tau_ap, "wrong_least_uncertain": wrong_low,
            "wrong_most_uncertain": wrong_high, "needed": need, "curve": asdict(curve),
            "needed_depth_order": need_depth, "curve_depth_order": asdict(ablation),
        })  # fmt: skip
    result["needed"] = needs
    result["judges"] = judges
    return result


def _mean(values: list[int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known and len(known) == len(values) else None


def _cells(values: list[int | None], reference: float | None) -> list[str]:
    mean = _mean(values)
    share = f"{mean / reference:.0%}" if mean is not None and reference else "-"
    shown = " / ".join("never" if v is None else str(v) for v in values)
    return [shown, "-" if mean is None else f"{mean:.0f}", share]


def report(results: list[dict[str, object]], kappas: list[float]) -> tuple[list[str], bool | None]:
    """The table as Markdown lines, and whether the target is met (None: not measured)."""

    def needs(strategy: str, measure: str) -> list[int | None]:
        return [r["needed"][strategy][measure] for r in results]  # type: ignore[index]

    def judged(i: int, key: str) -> list:  # type: ignore[type-arg]
        return [r["judges"][i][key] for r in results]  # type: ignore[index]

    seeds = " / ".join(str(r["seed"]) for r in results)
    lines = [
        f"people-judgements to reach and keep tau >= {LEVEL} (seeds {seeds}):",
        "",
        "| strategy | judge kappa: target (achieved) | tau >= 0.9 | mean | of depth's "
        "| tau_ap >= 0.9 | mean | of depth's |",
        "|---|---|---|---:|---:|---|---:|---:|",
    ]
    reference = {m: _mean(needs("depth", m)) for m in ("tau", "tau_ap")}
    labels = {"depth": "people only, depth pooling", "impact": "people only, by impact"}
    for strategy, label in labels.items():
        cells = _cells(needs(strategy, "tau"), reference["tau"])
        cells += _cells(needs(strategy, "tau_ap"), reference["tau_ap"])
        lines.append(f"| {label} | - | " + " | ".join(cells) + " |")
    met: bool | None = None
    rows = (
        ("needed", "machine everywhere + people by impact x uncertainty"),
        ("needed_depth_order", "machine everywhere + people in depth order (ablation)"),
    )
    for key, label in rows:
        for i, target in enumerate(kappas):
            achieved = " / ".join(f"{k:.3f}" for k in judged(i, "kappa"))
            per_measure = {m: [n[m] for n in judged(i, key)] for m in ("tau", "tau_ap")}
            cells = _cells(per_measure["tau"], reference["tau"])
            cells += _cells(per_measure["tau_ap"], reference["tau_ap"])
            lines.append(f"| {label} | {target} ({achieved}) | " + " | ".join(cells) + " |")
            if key == "needed" and abs(target - TARGET_KAPPA) < 1e-9:
                mean, depth = _mean(per_measure["tau"]), reference["tau"]
                met = mean is not None and depth is not None and mean <= TARGET_SHARE * depth
    lines += [
        "",
        "the risk an organiser sees: the machine-only leaderboard against the truth",
        "",
        "| judge kappa: target | achieved | tau | mean | tau_ap | mean "
        "| wrong grades: least / most uncertain quarter |",
        "|---|---|---|---:|---|---:|---|",
    ]
    for i, target in enumerate(kappas):
        taus, taps = judged(i, "machine_tau"), judged(i, "machine_tau_ap")
        wrong = " ; ".join(
            f"{a:.0%} / {b:.0%}"
            for a, b in zip(
                judged(i, "wrong_least_uncertain"), judged(i, "wrong_most_uncertain"), strict=True
            )
        )
        lines.append(
            f"| {target} | " + " / ".join(f"{k:.3f}" for k in judged(i, "kappa"))
            + " | " + " / ".join(f"{t:.3f}" for t in taus) + f" | {np.mean(taus):.3f} | "
            + " / ".join(f"{t:.3f}" for t in taps) + f" | {np.mean(taps):.3f} | {wrong} |"
        )  # fmt: skip
    verdict = {None: "not measured", True: "**met**", False: "**not met**"}[met]
    lines += [
        "",
        f"target (issue 26): the hybrid at kappa {TARGET_KAPPA} needs at most "
        f"{TARGET_SHARE:.2f}x the people-judgements of depth pooling to tau >= {LEVEL} "
        f"(means over seeds): {verdict}",
    ]
    return lines, met


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", help="collection and judge seeds (default 1,2,3; quick 1)")
    parser.add_argument("--runs", type=int, help="default 35 (quick 20)")
    parser.add_argument("--queries", type=int, help="default 50 (quick 30)")
    parser.add_argument("--depth", type=int, help="default 100 (quick 50)")
    parser.add_argument("--candidates", type=int, help="graded documents per query (4 x depth)")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--kappas", default="0.3,0.5,0.6", help="the judges' target kappas")
    parser.add_argument("--leniency", type=float, default=0.25, help="the judge's over-grading")
    parser.add_argument(
        "--overconfidence", type=float, default=1.5, help="true spread / the judge's belief"
    )
    parser.add_argument(
        "--style-bias", type=float, default=0.0, help="the judge's over-grading of styled documents"
    )
    parser.add_argument("--batch", type=int, default=10, help="smallest batch of judgements")
    parser.add_argument("--growth", type=float, default=0.03, help="batch as a share of judged")
    parser.add_argument("--quick", action="store_true", help="a small run: under a minute")
    parser.add_argument("--json", help="write every figure and curve to this file")
    args = parser.parse_args(argv)
    defaults = ("1", 20, 30, 50) if args.quick else ("1,2,3", 35, 50, 100)
    for name, value in zip(("seeds", "runs", "queries", "depth"), defaults, strict=True):
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.kappas = [float(k) for k in args.kappas.split(",")]
    sizes = Sizes(args.runs, args.queries, args.depth, args.candidates or 4 * args.depth, args.k)
    started = time.perf_counter()
    results = [run_seed(args, sizes, int(seed)) for seed in args.seeds.split(",")]
    lines, met = report(results, args.kappas)
    print("\n" + "\n".join(lines))
    elapsed = time.perf_counter() - started
    print(f"\ntotal {elapsed:.0f} s (CPU {time.process_time():.0f} s), numpy {np.__version__}, "
          f"{os.cpu_count()} cpus")  # fmt: skip
    if args.json:
        options = {k: v for k, v in vars(args).items() if k != "json"}
        payload: dict[str, object] = {"options": options, "sizes": asdict(sizes)}
        payload.update({"seeds": results, "met": met})
        payload["table"] = lines
        Path(args.json).write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
