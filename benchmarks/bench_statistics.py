"""Peak memory and time of a leaderboard snapshot's statistics at scale.

A snapshot's statistics are the bootstrap CI of every run (``bootstrap_cis``, 10,000
resamples) and the randomised Tukey HSD over the runs x queries matrix (``significance_compute``'s
``randomised_tukey_hsd``, its permutations as the budget allows). Their memory grows with the
random draws, queries x resamples, not with the collection's documents, so this measures them
alone on a seeded per-query matrix of each shape, each shape in a fresh process: peak RSS
(``ru_maxrss``) beside the same process's RSS before it computed (the interpreter, numpy and
the engine imported: the reference), and wall time of each part.

    .venv/bin/python benchmarks/bench_statistics.py            # 110x249, 110x2500, 1000x249
    .venv/bin/python benchmarks/bench_statistics.py --shape 110x2500

Target (issue: production mode): one snapshot computation at 2,500 queries under 300 MB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("110x249", "110x2500", "1000x249")
TARGET_MB = 300.0


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def measure(shape: str) -> dict[str, float | int | str]:
    """Compute one shape's statistics in this process; the figures as a dict."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from annotations.metrics import significance_arrays
    from annotations.metrics.hsd import randomised_tukey_hsd

    runs, queries = (int(part) for part in shape.split("x"))
    budget = 500_000_000  # scores.significance.HSD_BUDGET
    cells = runs * queries
    permutations = (
        10_000 if cells * 10_000 <= budget else max(1_000, budget // cells // 1000 * 1000)
    )
    rng = np.random.default_rng(7)
    quality = np.linspace(0.2, 0.7, runs)[:, None]
    matrix = np.clip(quality + rng.normal(0.0, 0.25, size=(runs, queries)), 0.0, 1.0)
    matrix[:, rng.random(queries) < 0.05] = 0.0  # unanswered queries: zeros
    rows = [list(map(float, row)) for row in matrix]
    before = _rss_mb()
    started = time.perf_counter()
    intervals = significance_arrays.bootstrap_cis(rows, resamples=10_000, confidence=0.95, seed=0)
    bootstrap_seconds = time.perf_counter() - started
    after_bootstrap = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    started = time.perf_counter()
    result = randomised_tukey_hsd(matrix, permutations=permutations, seed=0, alpha=0.05)
    hsd_seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {
        "shape": shape,
        "rss_before_mb": round(before, 1),
        "peak_after_bootstrap_mb": round(after_bootstrap, 1),
        "peak_mb": round(peak, 1),
        "bootstrap_s": round(bootstrap_seconds, 3),
        "hsd_s": round(hsd_seconds, 3),
        "hsd_permutations": permutations,
        "groups": len(set(result.letters())),
        "first_ci": f"{intervals[0][0]!r}..{intervals[0][1]!r}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", action="append", help="RUNSxQUERIES (repeatable)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return 0
    print(
        f"{'shape':>10} {'RSS before':>11} {'peak':>8} {'grown':>8} {'bootstrap':>10} "
        f"{'HSD':>8} {'perms':>6}  target peak < {TARGET_MB:.0f} MB"
    )
    for shape in args.shape or SHAPES:
        out = subprocess.run(
            [sys.executable, __file__, "--child", shape],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        grown = float(r["peak_mb"]) - float(r["rss_before_mb"])
        verdict = "met" if float(r["peak_mb"]) < TARGET_MB else "NOT MET"
        print(
            f"{r['shape']:>10} {r['rss_before_mb']:>8.1f} MB {r['peak_mb']:>5.1f} MB "
            f"{grown:>5.1f} MB {r['bootstrap_s']:>8.3f} s {r['hsd_s']:>6.3f} s "
            f"{r['hsd_permutations']:>6}  {verdict}  (first CI {r['first_ci']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
