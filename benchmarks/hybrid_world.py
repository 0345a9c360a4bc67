"""The simulated world of bench_hybrid.py: a hidden truth, runs, a machine judge, leaderboards.

Framework-free (numpy, scipy's normal CDF and the engine's pure ``annotations.metrics``).
Every array is per query, padded to the largest pool: index ``d`` of query ``q`` is a pool
document (a document some run ranks within ``depth``), numbered in depth-pooling order, so
the top-k pool of a query is ``0 .. top_k_size - 1``; a padded cell has grade -1.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from annotations.metrics import ndcg, ndcg_arrays  # noqa: E402
from annotations.metrics.agreement import cohen_kappa_quadratic  # noqa: E402
from annotations.metrics.impact import QueryTop  # noqa: E402

SCALE = (0, 1, 2, 3)
SCHEME = "linear"
GAINS = np.array([ndcg.gain(g, SCHEME) for g in SCALE])
RELEVANT_GRADES = (0.55, 0.30, 0.15)  # P(grade 1, 2, 3) of a relevant document
STYLED = 0.3  # share of candidate documents with a "style" (independent of their grade)
FAVOURING = 0.3  # share of runs that favour styled documents

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class Sizes:
    """Shape of a simulated collection."""

    runs: int = 35
    queries: int = 50
    depth: int = 100
    candidates: int = 400  # documents per query that have a hidden grade (runs draw from them)
    k: int = 10


@dataclass(frozen=True)
class Collection:
    """A hidden truth and the runs' rankings over it."""

    rankings: IntArray  # (Q, R, depth): pool index of the document at each rank
    truth: IntArray  # (Q, P): hidden grade of each pool document, -1 past the pool
    sizes: IntArray  # (Q,): pool size
    tops: list[QueryTop]  # per query: the runs' top k over the top-k pool
    depth_order: IntArray  # (pairs, 2): every (q, d) of the pool, depth pooling's order
    k: int
    styled: BoolArray  # (Q, P): the pool document has the style some runs favour
    favouring: BoolArray  # (R,): the run favours styled documents

    @property
    def pairs(self) -> int:
        return int(self.sizes.sum())

    @property
    def runs(self) -> int:
        return int(self.rankings.shape[1])

    def valid(self) -> BoolArray:
        """(Q, P): True where a cell is a pool document."""
        mask: BoolArray = self.truth >= 0
        return mask


def gains_of(grades: IntArray) -> FloatArray:
    """Gain of each grade, 0 for an unjudged (negative) one."""
    gains: FloatArray = np.where(grades >= 0, GAINS[np.clip(grades, 0, len(SCALE) - 1)], 0.0)
    return gains


def generate(sizes: Sizes, seed: int) -> Collection:
    """A seeded collection. Per query, ``candidates`` documents with hidden grades (a share
    of relevant documents drawn from U(0.04, 0.30), their grades 1/2/3 by RELEVANT_GRADES).
    Each run has a quality drawn from U(0.3, 2.0), varied per query by a log-normal factor
    (sd 0.35), and ranks a Plackett-Luce sample (Gumbel top-``depth``) of the candidates
    with log-weight ``quality * grade - index / (1.5 depth)``: better runs put relevant
    documents higher, and every run prefers the same low-index candidates, so runs overlap.
    A share STYLED of the documents has a style (think: text written the way a language
    model writes) that a share FAVOURING of the runs prefers, log-weight + 1, whatever its
    grade: a judge that over-grades the style (``judge_for``'s ``style_bias``) then errs in
    favour of those runs, an error that does not average out over pairs.
    """
    if not 1 <= sizes.k <= sizes.depth <= sizes.candidates:
        raise ValueError("need 1 <= k <= depth <= candidates")
    if sizes.runs < 2 or sizes.queries < 1:
        raise ValueError("need at least 2 runs and 1 query")
    rng = np.random.default_rng(seed)
    n_q, n_r, depth, n_c = sizes.queries, sizes.runs, sizes.depth, sizes.candidates
    grades = np.zeros((n_q, n_c), dtype=np.int64)
    for q, share in enumerate(rng.uniform(0.04, 0.30, size=n_q)):
        relevant = rng.random(n_c) < share
        grades[q, relevant] = rng.choice([1, 2, 3], size=int(relevant.sum()), p=RELEVANT_GRADES)
    popularity = -np.arange(n_c) / (1.5 * depth)
    quality = rng.uniform(0.3, 2.0, size=n_r)[None, :] * np.exp(rng.normal(0, 0.35, (n_q, n_r)))
    styled = rng.random((n_q, n_c)) < STYLED
    favouring = np.zeros(n_r, dtype=bool)
    favouring[rng.permutation(n_r)[: round(FAVOURING * n_r)]] = True
    keys = quality[:, :, None] * grades[:, None, :] + popularity + rng.gumbel(size=(n_q, n_r, n_c))
    keys += styled[:, None, :] * favouring[None, :, None]
    chosen = np.argsort(-keys, axis=2)[:, :, :depth]  # candidate ids, rank order
    rankings = np.zeros((n_q, n_r, depth), dtype=np.int64)
    pools: list[IntArray] = []
    first_ranks: list[IntArray] = []
    for q in range(n_q):
        visits = chosen[q].T.reshape(-1)  # rank 1 of every run, then rank 2, ...
        _, first = np.unique(visits, return_index=True)
        pool = visits[np.sort(first)]
        index = np.full(n_c, -1, dtype=np.int64)
        index[pool] = np.arange(len(pool))
        rankings[q] = index[chosen[q]]
        best = np.full(len(pool), depth, dtype=np.int64)
        np.minimum.at(best, rankings[q].reshape(-1), np.tile(np.arange(depth), n_r))
        pools.append(pool)
        first_ranks.append(best)
    sizes_q = np.array([len(p) for p in pools], dtype=np.int64)
    truth = np.full((n_q, int(sizes_q.max())), -1, dtype=np.int64)
    pool_styled = np.zeros(truth.shape, dtype=bool)
    for q, pool in enumerate(pools):
        truth[q, : len(pool)] = grades[q, pool]
        pool_styled[q, : len(pool)] = styled[q, pool]
    tops = []
    for q in range(n_q):
        top_size = int((first_ranks[q] < sizes.k).sum())
        tops.append(QueryTop.of(rankings[q, :, : sizes.k], top_size))
    q_of = np.concatenate([np.full(len(p), q) for q, p in enumerate(pools)])
    d_of = np.concatenate([np.arange(len(p)) for p in pools])
    order = np.lexsort((d_of, q_of, np.concatenate(first_ranks)))
    depth_order = np.stack([q_of[order], d_of[order]], axis=1).astype(np.int64)
    return Collection(rankings, truth, sizes_q, tops, depth_order, sizes.k, pool_styled, favouring)


def fast_means(collection: Collection, grades: IntArray) -> FloatArray:
    """Mean nDCG@k of every run with ``grades`` (Q, P) known (-1: unjudged, gain 0), the
    IDCG from every known grade of the query; checked against ``engine_means``."""
    k = collection.k
    n_q, n_r = collection.rankings.shape[:2]
    gains = gains_of(grades)
    top = np.take_along_axis(gains, collection.rankings[:, :, :k].reshape(n_q, -1), axis=1)
    discount = np.array(ndcg.discounts(k)[:k])
    dcg = np.cumsum(top.reshape(n_q, n_r, k) / discount, axis=2)[:, :, -1]
    best = -np.sort(-gains, axis=1)[:, :k]
    idcg = np.cumsum(best / discount[: best.shape[1]], axis=1)[:, -1]
    scores = np.where(idcg[:, None] > 0, dcg / np.where(idcg > 0, idcg, 1.0)[:, None], 0.0)
    means: FloatArray = scores.sum(axis=0) / n_q
    return means


def engine_means(collection: Collection, grades: IntArray) -> FloatArray:
    """The same means from ``ndcg_arrays.score_matrix`` (nDCG@k as trec_eval computes it,
    unjudged documents non-relevant) per query, averaged by ``ndcg.ordered_mean``. All
    queries count: one with nothing judged scores 0 for every run, which scales every mean
    alike and so leaves the ranking as trec_eval's mean over judged queries orders it."""
    k = collection.k
    per_query = []
    for q in range(len(collection.sizes)):
        row = grades[q, : collection.sizes[q]]
        known = {d: int(g) for d, g in enumerate(row.tolist()) if g >= 0}
        rankings = {r: collection.rankings[q, r] for r in range(collection.runs)}
        _, scores = ndcg_arrays.score_matrix(rankings, known, [k], SCHEME)
        per_query.append(scores[:, 0, 0])
    matrix = np.array(per_query)
    return np.array([ndcg.ordered_mean(matrix[:, r].tolist()) for r in range(collection.runs)])


@dataclass(frozen=True)
class JudgeNoise:
    """The judge's random numbers, shared by every accuracy (common random numbers)."""

    z: FloatArray  # (Q, P) standard normal: the judge's error in units of its spread
    difficulty: FloatArray  # (Q, P) log-normal, mean 1: how hard the pair is for the judge
    self_error: FloatArray  # (Q, P) standard normal: how wrong the judge is about its spread


@dataclass(frozen=True)
class Judge:
    """A machine judge of controlled accuracy over every pool pair."""

    target: float  # the quadratic weighted kappa asked for
    sigma: float  # noise scale found for it
    kappa: float  # achieved, ``agreement.cohen_kappa_quadratic`` over every pool pair
    grades: IntArray  # (Q, P) the machine grade, -1 past the pool
    distribution: FloatArray  # (Q, P, grades) the grade distribution the judge reports
    uncertainty: FloatArray  # (Q, P) its entropy in bits


def judge_noise(collection: Collection, seed: int) -> JudgeNoise:
    rng = np.random.default_rng([seed, 26])
    shape = collection.truth.shape
    difficulty = np.exp(rng.normal(0.0, 0.6, shape) - 0.18)  # E[exp(N(0, 0.6))] = e^0.18
    return JudgeNoise(rng.normal(size=shape), difficulty, rng.normal(size=shape))


def _latent(
    collection: Collection, noise: JudgeNoise, sigma: float, leniency: float, style_bias: float
) -> FloatArray:
    latent: FloatArray = collection.truth + leniency + sigma * noise.difficulty * noise.z
    return latent + style_bias * collection.styled


def _grades(collection: Collection, latent: FloatArray) -> IntArray:
    grades: IntArray = np.where(
        collection.valid(), np.clip(np.rint(latent), 0, len(SCALE) - 1), -1
    ).astype(np.int64)
    return grades


def quadratic_kappa(truth: IntArray, other: IntArray) -> float:
    """Quadratic weighted kappa of two flat grade arrays on SCALE (numpy, for the search;
    the reported figure is ``agreement.cohen_kappa_quadratic``'s)."""
    n = len(SCALE)
    observed = np.bincount(truth * n + other, minlength=n * n).reshape(n, n).astype(float)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    weights = (np.arange(n)[:, None] - np.arange(n)[None, :]) ** 2 / (n - 1) ** 2
    disagreement = float((weights * expected).sum())
    return 1.0 - float((weights * observed).sum()) / disagreement if disagreement else 1.0


def judge_for(
    collection: Collection,
    noise: JudgeNoise,
    target: float,
    *,
    leniency: float = 0.25,
    overconfidence: float = 1.5,
    style_bias: float = 0.0,
) -> Judge:
    """The judge whose quadratic weighted kappa against the truth is ``target``.

    The judge's score of a pair is ``x = truth + leniency + sigma * difficulty * z`` and its
    grade ``x`` rounded onto the scale: errors of one grade are common, of more rare, and
    ``leniency`` > 0 makes it over-grade (as LLM judges tend to). Given the truth's grade
    this is a confusion matrix (a mixture over the pairs' difficulties); ``sigma`` is found
    by bisection so that kappa over every pool pair meets ``target``. The judge reports a
    distribution over grades: a normal around ``x`` with spread ``sigma * difficulty *
    exp(0.5 * self_error) / overconfidence``, cut at the midpoints between grades; its
    entropy is the judge's uncertainty: high where the judge's errors are large, though
    the judge knows its own spread only roughly and believes it smaller than it is.
    ``style_bias`` is added to the score of every styled document (an error correlated
    with the runs that favour them; the judge's distribution does not know it); the kappa
    search accounts for it, so a biased judge has less random noise for the same kappa.
    """
    if not 0.0 < target <= 1.0 or not 0.0 <= leniency < 0.5 or overconfidence <= 0:
        raise ValueError("need 0 < target <= 1, 0 <= leniency < 0.5, overconfidence > 0")
    if style_bias < 0:
        raise ValueError("style_bias must be >= 0")
    valid = collection.valid()
    truth = collection.truth[valid]

    def kappa_at(sigma: float) -> float:
        grades = _grades(collection, _latent(collection, noise, sigma, leniency, style_bias))
        return quadratic_kappa(truth, grades[valid])

    low, high = 0.0, 1.0
    if kappa_at(0.0) > target:
        while kappa_at(high) > target and high < 1e3:
            high *= 2.0
        for _ in range(60):
            middle = (low + high) / 2.0
            low, high = (middle, high) if kappa_at(middle) > target else (low, middle)
    sigma = high if kappa_at(0.0) > target else 0.0
    latent = _latent(collection, noise, sigma, leniency, style_bias)
    grades = _grades(collection, latent)
    spread = np.maximum(sigma * noise.difficulty * np.exp(0.5 * noise.self_error), 1e-9)
    spread = spread / overconfidence
    cuts = np.arange(len(SCALE) - 1) + 0.5
    below = ndtr((cuts[None, None, :] - latent[:, :, None]) / spread[:, :, None])
    cdf = np.concatenate([below, np.ones((*latent.shape, 1))], axis=2)
    distribution = np.diff(cdf, axis=2, prepend=0.0)
    distribution[~valid] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(distribution > 0, -distribution * np.log2(distribution), 0.0)
    kappa = cohen_kappa_quadratic(zip(truth.tolist(), grades[valid].tolist(), strict=True), SCALE)
    return Judge(target, sigma, kappa, grades, distribution, terms.sum(axis=2))


def uncertainty_informative(collection: Collection, judge: Judge) -> tuple[float, float]:
    """Share of wrong machine grades among the pairs of lowest and of highest uncertainty
    (the bottom and top quarter): how much the judge's uncertainty tells."""
    valid = collection.valid()
    wrong = (judge.grades != collection.truth)[valid]
    entropy = judge.uncertainty[valid]
    low, high = np.quantile(entropy, [0.25, 0.75])
    return float(wrong[entropy <= low].mean()), float(wrong[entropy >= high].mean())
