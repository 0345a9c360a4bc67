"""Impact of judging: how much each unjudged (query, document) could move the leaderboard at k.

The model, at one cutoff k (numpy; framework-free like ``scoring``):

- Queries ``q`` (the ``Q`` queries the leaderboard's mean is over), runs ``a``, ``b``. Run
  ``a``'s top k of ``q`` puts document ``d`` at 1-based rank ``r``: its weight there is
  ``c[a, d] = 1 / log2(r + 1)`` (``ndcg.dcg``'s discount), 0 when ``d`` is not in the
  top k. Gains are ``ndcg.gain`` of the collection's scheme.
- nDCG@k is linear in the gains once the IDCG is fixed, so the difference of two runs' means
  is ``Delta[a, b] = sum_q sum_d gain(x_d) * (c[a, d] - c[b, d]) / (Q * I_q)``.
- **IDCG.** Judging a document can raise its query's IDCG. The model fixes ``I_q`` at an
  estimate: the DCG@k of the ideal list of the query's judged gains together with the
  *expected* gains of its unjudged top-k documents (``estimated_idcg``). A change of IDCG
  rescales every run's nDCG on that query by the same factor, so it never reverses an order
  within a query; it only reweights the query in the means. That second-order effect is
  left out of a document's impact; the estimate is refreshed whenever impact is recomputed.
  (The estimate also gives a query with nothing relevant judged yet, whose IDCG is 0, a
  finite scale.) The scale is at least the least positive gain of the scale at rank 1
  (``max(estimate, least gain)``, when the estimate is above 0): once anything relevant is
  found the query's IDCG is at least that. Without this floor a query with nothing relevant
  judged has an ``I_q`` made only of expected gains, which shrink with the prior as ``E_d``
  does, so its documents kept a large impact however unlikely their relevance (and drew a
  budget into such queries).
- **Prior.** An unjudged document's grade follows a distribution over the scale estimated
  from the collection's judged top-k documents, per bucket of its best rank in any run and
  of the number of runs with it in their top k (``GradePrior``); it gives the expected gain
  ``E_d``, the variance ``V_d``; ``T`` is the top grade's gain. The prior is then
  calibrated **per query** (``query_calibrated``): how many of the query's judged pool
  documents are relevant, and how many not, against how many the prior expects of those
  same documents, smoothed with ``SMOOTHING`` pseudo-judgements spread as the pool's mean
  prior, reweights the probability of relevance of the query's unjudged documents (factor
  1 with nothing judged; the split among relevant grades stays the collection's). A query
  whose many judged documents are all non-relevant so expects little of its unjudged ones.
  (Reweighting each grade apart was tried: it reached Kendall's tau 0.95 later on the
  benchmark's collections with nothing judged at the start.)
- **Pairs.** For every pair of runs, from the judged gains and the prior (the grades of
  different documents independent): the expected final difference ``mu`` (unjudged at
  ``E_d``), its spread ``sigma``
  (``sigma^2 = sum V_d (c[a, d] - c[b, d])^2 / (Q I_q)^2``) and the bounds
  ``lower``/``upper``: every unjudged document at grade 0 or at the top grade, whichever
  helps the run (the pair's own extremes, at the estimated IDCG; tighter than the two runs'
  separate leaderboard bounds, since a shared document cannot be relevant for one run and
  not for the other).
- **Weight** ``w = 0`` when the bounds exclude a reversal (``lower >= 0`` or
  ``upper <= 0``, to within ``TIE``: the pair is decided; a reachable tie is not a
  reversal) or ``sigma = 0``; otherwise
  ``w = erfc(|mu| / (sigma * sqrt(2))) = 2 * Phi(-|mu| / sigma)``: under a normal
  approximation, twice the probability that the final order is not the expected one, so a
  coin-flip pair weighs 1 and a pair far from a tie next to nothing.
- **Impact** of an unjudged ``d`` of query ``q``: the leaderboard counts it non-relevant,
  so judging it moves the difference of ``a`` and ``b`` by
  ``gain(x_d) * (c[a, d] - c[b, d]) / (Q I_q)``. Its impact is the expected absolute move,
  summed over pairs with their weights:
  ``impact(d) = E_d / (Q I_q) * sum_{a < b} w[a, b] * |c[a, d] - c[b, d]|``.
  A document every run ranks the same, or only pairs that are decided rank differently,
  has impact 0. Impacts are comparable across the queries of one computation (one
  collection and cutoff); their unit is mean nDCG@k moved, summed over pairs.
- A run without a query scores 0 there (``ndcg.run_mean``'s convention), so it can only
  lose ground to runs that retrieved anything relevant for it.
- **Machine grades.** A document only a machine judge graded is unjudged to the model (its
  true grade is a person's to give), with its own prior (``DocumentPrior``): the grades
  people gave where the machine gave its grade (the caller's calibration counts), smoothed
  towards the document's bucketed prior with ``SMOOTHING`` pseudo-judgements, so with no
  calibration yet it is the bucketed prior. Where the machine said how sure it was (its
  probability of each grade, from the answer's token log-probabilities), the prior is the
  mixture of the calibrated rows of every grade it might have given, by those
  probabilities.
  When the leaderboard counts the machine's grade ``m`` (``counted``), judging it moves a
  difference by ``gain(x) - gain(m)``, so its impact weighs ``E|gain(x_d) - gain(m)|``
  instead of ``E_d``: a pair whose machine grade is reliable has little left to move, an
  uncertain one a lot.
"""

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from annotations.metrics import ndcg
from annotations.metrics.impact.pool import (
    UNJUDGED,
    FloatArray,
    IntArray,
    QueryTop,
    check_scale,
    discounts,
)
from annotations.metrics.impact.prior import SMOOTHING, GradePrior, grade_prior, scale_indices

__all__ = [
    "TIE",
    "DocumentPrior",
    "ImpactResult",
    "PairStates",
    "estimated_idcg",
    "impact_compute",
    "impact_scores",
    "pair_weights",
    "query_calibrated",
]

TIE = 1e-12  # a bound this close to 0 is a reachable tie, not a reversal (rounding)

RunId = TypeVar("RunId", bound=Hashable)
DocId = TypeVar("DocId", bound=Hashable)
QueryId = TypeVar("QueryId", bound=Hashable)


def estimated_idcg(gains: Sequence[float] | FloatArray, k: int) -> float:
    """DCG@k of ``gains`` sorted descending: the query's IDCG with expected gains standing in
    for its unjudged documents (the model's fixed ``I_q``)."""
    ideal = np.sort(np.asarray(gains, dtype=np.float64))[::-1][:k]
    return float((ideal * discounts(k)[: len(ideal)]).sum())


@dataclass(frozen=True)
class DocumentPrior:
    """A machine-graded document's calibration: ``counts[i]``, how often people gave grade
    ``scale[i]`` where the machine gave this document's grade; and the grade the leaderboard
    counts for it now (None: unjudged, 0 gain). With ``said`` (the machine's probability
    of each grade of the scale), ``counts`` is the whole calibration matrix, one row per
    grade the machine gave."""

    counts: Sequence[float] | Sequence[Sequence[float]] | FloatArray
    counted: int | None = None
    said: Sequence[float] | FloatArray | None = None


@dataclass(frozen=True)
class PairStates:
    """Per pair of runs ``(a, b)`` (matrices, antisymmetric but ``spread`` and ``weight``
    symmetric): ``mean`` of ``Delta = mean_a - mean_b`` under the prior, its ``spread``
    (sigma), its ``lower`` / ``upper`` bounds and the pair's ``weight``."""

    mean: FloatArray
    spread: FloatArray
    lower: FloatArray
    upper: FloatArray
    weight: FloatArray


@dataclass(frozen=True)
class ImpactResult:
    """``impacts[q][d]``: impact of pool document ``d`` of query ``q`` (0 once judged)."""

    impacts: list[FloatArray]
    pairs: PairStates
    prior: GradePrior
    idcgs: FloatArray


_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def pair_weights(
    mean: FloatArray, spread: FloatArray, lower: FloatArray, upper: FloatArray
) -> FloatArray:
    """How undecided pairs of runs are, element-wise: ``erfc(|mean| / (spread sqrt 2))``,
    i.e. ``2 Phi(-|mean| / spread)``, in [0, 1]; 0 where the bounds exclude a reversal
    (``lower >= 0`` or ``upper <= 0``) or where ``spread`` is 0 (nothing left to learn)."""
    mean = np.asarray(mean, dtype=np.float64)
    spread = np.asarray(spread, dtype=np.float64)
    open_pairs = (np.asarray(lower) < -TIE) & (np.asarray(upper) > TIE) & (spread > 0)
    ratio = np.divide(
        np.abs(mean), spread * math.sqrt(2.0), out=np.zeros_like(mean), where=open_pairs
    )
    weights: FloatArray = np.where(open_pairs, _erfc(ratio), 0.0)
    return weights


def impact_compute(
    queries: Sequence[QueryTop],
    grades: Sequence[IntArray],
    *,
    scale: Sequence[int],
    scheme: str,
    prior: GradePrior | None = None,
    outside_grades: Sequence[Sequence[int]] | None = None,
    document_priors: Sequence[Mapping[int, DocumentPrior]] | None = None,
) -> ImpactResult:
    """Impact of every pool document of every query, and the pair states behind it.

    ``queries`` are the ``Q`` queries the leaderboard's mean is over, each with the same
    runs in the same order (a run without a query has an all ``-1`` row there).
    ``grades[q][d]``: grade of pool document ``d`` of query ``q``, ``UNJUDGED`` (any
    negative value) when unjudged. ``outside_grades[q]``: grades of the query's judged
    documents that are in no run's top k (they only enter the IDCG estimate). ``prior``:
    by default ``grade_prior`` of these judgements. ``document_priors[q][d]``: the own prior
    of unjudged pool document ``d`` of query ``q`` (a machine-graded one). The model is the
    module docstring's.
    """
    values = check_scale(scale)
    if len(queries) != len(grades):
        raise ValueError("one grade array per query is required")
    if outside_grades is not None and len(outside_grades) != len(queries):
        raise ValueError("one list of outside grades per query is required")
    if not queries:
        raise ValueError("no queries: the leaderboard's mean is over at least one")
    if document_priors is not None and len(document_priors) != len(queries):
        raise ValueError("one mapping of document priors per query is required")
    n_runs = queries[0].top.shape[0]
    if any(query.top.shape[0] != n_runs for query in queries):
        raise ValueError("every query must list the same runs")
    k = queries[0].top.shape[1]
    if any(query.top.shape[1] != k for query in queries):
        raise ValueError("every query must have the same cutoff k")
    if prior is None:
        prior = grade_prior(queries, grades, scale=values)
    elif prior.scale != values:
        raise ValueError("the prior was estimated on another scale")
    scale_gains = np.array([ndcg.gain(value, scheme) for value in values])
    top_gain = float(scale_gains.max())
    least_gain = float(scale_gains[scale_gains > 0].min()) if (scale_gains > 0).any() else 0.0
    n_queries = len(queries)

    mean = np.zeros((n_runs, n_runs))
    variance = np.zeros((n_runs, n_runs))
    lower = np.zeros((n_runs, n_runs))
    upper = np.zeros((n_runs, n_runs))
    idcgs = np.zeros(n_queries)
    per_query: list[tuple[FloatArray, FloatArray, NDArray[np.intp], float]] = []
    for q, (query, row) in enumerate(zip(queries, grades, strict=True)):
        if len(row) != query.weights.shape[1]:
            raise ValueError(f"query {q}: {len(row)} grades for a pool of {query.weights.shape[1]}")
        indices = scale_indices(row, values)
        unjudged = indices < 0
        judged_gains = np.where(unjudged, 0.0, scale_gains[np.maximum(indices, 0)])
        prior_rows = query_calibrated(prior.distribution(query.best_rank, query.runs), indices)
        own = document_priors[q] if document_priors is not None else {}
        moved = _own_priors(prior_rows, own, unjudged, values, scale_gains, scheme)
        expected = np.where(unjudged, prior_rows @ scale_gains, 0.0)
        spread2 = np.where(unjudged, prior_rows @ scale_gains**2 - expected**2, 0.0)
        moved = np.where(np.isnan(moved), expected, moved)
        outside = [ndcg.gain(g, scheme) for g in (outside_grades or [()] * n_queries)[q]]
        ideal = np.concatenate([judged_gains[~unjudged], expected[unjudged], outside])
        idcgs[q] = estimated_idcg(ideal, k)
        if idcgs[q] > 0:
            idcgs[q] = max(idcgs[q], least_gain)
        scale_q = 1.0 / (n_queries * idcgs[q]) if idcgs[q] > 0 else 0.0
        weights = query.weights
        judged_values = weights @ judged_gains
        expected_values = judged_values + weights @ expected
        mean += scale_q * (expected_values[:, None] - expected_values[None, :])
        # sum_d V_d (c_a - c_b)^2 = (c^2 V)_a + (c^2 V)_b - 2 (c V c^T)_ab
        squares = (weights**2) @ spread2
        cross = (weights * spread2) @ weights.T
        variance += scale_q**2 * (squares[:, None] + squares[None, :] - 2.0 * cross)
        columns = weights[:, unjudged]
        moves = columns[:, None, :] - columns[None, :, :]  # (runs, runs, unjudged)
        room = top_gain * np.abs(moves).sum(axis=2)
        net = top_gain * moves.sum(axis=2)
        difference = judged_values[:, None] - judged_values[None, :]
        upper += scale_q * (difference + (room + net) / 2.0)
        lower += scale_q * (difference - (room - net) / 2.0)
        per_query.append((columns, moved[unjudged], np.flatnonzero(unjudged), float(scale_q)))

    spread = np.sqrt(np.maximum(variance, 0.0))
    weight = pair_weights(mean, spread, lower, upper)
    np.fill_diagonal(weight, 0.0)
    flat_weight = weight.reshape(-1)
    impacts = []
    for query, (columns, expected_u, positions, scale_q) in zip(queries, per_query, strict=True):
        impact = np.zeros(query.weights.shape[1])
        if positions.size:
            moves = np.abs(columns[:, None, :] - columns[None, :, :]).reshape(-1, positions.size)
            # Both (a, b) and (b, a) are in the sum: half of it is the sum over a < b.
            impact[positions] = expected_u * scale_q * (flat_weight @ moves) / 2.0
        impacts.append(impact)
    pairs = PairStates(mean=mean, spread=spread, lower=lower, upper=upper, weight=weight)
    return ImpactResult(impacts=impacts, pairs=pairs, prior=prior, idcgs=idcgs)


def query_calibrated(
    prior_rows: FloatArray, indices: IntArray, smoothing: float = SMOOTHING
) -> FloatArray:
    """The query's prior rows reweighted by what its judged pool documents say.

    ``prior_rows`` (documents, grades) are the collection prior of the query's pool
    documents and ``indices`` their grades' positions on the scale (-1: unjudged; position
    0 is the lowest grade, non-relevant). Of the query's judged documents ``n_0`` are
    non-relevant and ``n_+`` relevant where the prior expects ``m_0`` and ``m_+`` (sums of
    their rows); the lowest grade's probability is multiplied by
    ``(n_0 + s p_0) / (m_0 + s p_0)``, every relevant grade's by
    ``(n_+ + s p_+) / (m_+ + s p_+)`` (``p``: the pool's mean row, ``s``: ``smoothing``
    pseudo-judgements), and each row renormalised: relevant or not is what the query's own
    judgements tell, the split among relevant grades stays the collection's. Nothing judged
    gives factor 1.
    """
    judged = indices >= 0
    if not judged.any() or prior_rows.shape[1] < 2:
        return prior_rows
    counts = np.bincount(indices[judged], minlength=prior_rows.shape[1]).astype(np.float64)
    sums = prior_rows[judged].sum(axis=0)
    means = smoothing * prior_rows.mean(axis=0)
    observed = np.array([counts[0], counts[1:].sum()])
    expected = np.array([sums[0], sums[1:].sum()])
    pseudo = np.array([means[0], means[1:].sum()])
    ratio = (observed + pseudo) / np.maximum(expected + pseudo, 1e-300)
    factors = np.concatenate([ratio[:1], np.full(prior_rows.shape[1] - 1, ratio[1])])
    weighted = prior_rows * factors
    totals = weighted.sum(axis=1, keepdims=True)
    calibrated: FloatArray = np.divide(weighted, totals, out=prior_rows.copy(), where=totals > 0)
    return calibrated


def _own_priors(
    prior_rows: FloatArray,
    own: Mapping[int, DocumentPrior],
    unjudged: NDArray[np.bool_],
    values: tuple[int, ...],
    scale_gains: FloatArray,
    scheme: str,
) -> FloatArray:
    """Put the documents' own priors into ``prior_rows`` (in place); the expected size of
    the move judging each would make where the leaderboard counts a grade for it (NaN
    elsewhere: the expected gain)."""
    moved = np.full(len(unjudged), np.nan)
    for d, document in own.items():
        if not 0 <= d < len(unjudged) or not unjudged[d]:
            raise ValueError(f"document {d}: an own prior is for an unjudged pool document")
        counts = np.asarray(document.counts, dtype=np.float64)
        said = np.ones(1) if document.said is None else np.asarray(document.said, float)
        rows = counts.reshape(1, -1) if document.said is None else counts
        if rows.shape != (len(said), len(values)) or (rows < 0).any():
            raise ValueError(f"document {d}: the counts are one count >= 0 per grade of the scale")
        if (said < 0).any() or said.sum() <= 0:
            raise ValueError(f"document {d}: the machine's probabilities are >= 0, not all 0")
        calibrated = (rows + SMOOTHING * prior_rows[d]) / (rows.sum(axis=1)[:, None] + SMOOTHING)
        prior_rows[d] = (said / said.sum()) @ calibrated
        if document.counted is not None:
            counted = ndcg.gain(max(document.counted, 0), scheme)
            moved[d] = float(prior_rows[d] @ np.abs(scale_gains - counted))
    return moved


def impact_scores(
    rankings: Mapping[QueryId, Mapping[RunId, Sequence[DocId]]],
    grades: Mapping[QueryId, Mapping[DocId, int]],
    *,
    k: int,
    scale: Sequence[int],
    scheme: str,
) -> dict[tuple[QueryId, DocId], float]:
    """Impact of every unjudged (query, document) in some run's top k, by (query, doc).

    ``rankings[q][run]`` is the run's ranking of query ``q`` in effective order (only the
    first k count); the leaderboard's mean is over the queries of ``rankings``, and a run
    absent from a query scores 0 there. ``grades[q]`` maps every judged document of the
    query (in the pool or not) to its effective grade; a negative grade is unjudged, as in
    ``ndcg.is_judged``. Judged documents get no entry. The model: the module docstring.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be an integer >= 1, got {k!r}")
    runs = sorted({run for by_run in rankings.values() for run in by_run}, key=repr)
    qids = list(rankings)
    tops, rows, outside, pools = [], [], [], []
    for qid in qids:
        pool: dict[DocId, int] = {}
        matrix = np.full((len(runs), k), -1, dtype=np.int64)
        for a, run in enumerate(runs):
            ranking = list(rankings[qid].get(run, ()))[:k]
            for i, doc in enumerate(ranking):
                matrix[a, i] = pool.setdefault(doc, len(pool))
        judged = grades.get(qid, {})
        rows.append(
            np.array([judged.get(doc, UNJUDGED) for doc in pool], dtype=np.int64).reshape(-1)
        )
        outside.append([g for doc, g in judged.items() if doc not in pool and g >= 0])
        tops.append(QueryTop.of(matrix, len(pool)))
        pools.append(list(pool))
    if not runs or not qids:
        return {}
    result = impact_compute(tops, rows, scale=scale, scheme=scheme, outside_grades=outside)
    return {
        (qid, doc): float(result.impacts[q][d])
        for q, qid in enumerate(qids)
        for d, doc in enumerate(pools[q])
        if rows[q][d] < 0
    }
