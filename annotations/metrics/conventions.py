"""nDCG@k as scikit-learn, ranx and ir_measures compute it, each difference written at its function.

The platform's own numbers are trec_eval's (``ndcg.py``). A user who checks them with another
library gets other numbers on the same qrels and run, and each difference comes from one
line of that library's documentation or source, quoted at the function that reproduces it:

- ``sklearn``: ``sklearn.metrics.ndcg_score(y_true, y_score, k=k)`` called per query on the
  run's own documents (``y_true`` their gains, ``y_score`` the run's scores). Tied scores
  share their averaged gain; the ideal list is made of the retrieved documents only.
- ``ranx``: ``ranx.evaluate(Qrels, Run, "ndcg@k", make_comparable=True)`` (``ndcg_burges``
  under exponential gain). The run is re-sorted by score with numba's unstable quicksort,
  so tied documents take ranx's order; every judged query counts, unanswered ones 0.
- ``ir_measures``: ``ir_measures.calc_aggregate([nDCG@k], qrels, run)``: pytrec_eval's
  ``ndcg_cut_k``, trec_eval's per-query values; every judged query counts, unanswered ones
  0, whatever the collection's rule. Its ``Judged@k`` is its own (``measures.judged``),
  computed on its own order of tied scores.

The engine never imports those libraries; the tests hold it equal to them.
"""

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby

from annotations.metrics.measures import Measure, RunValues, judged
from annotations.metrics.ndcg import (
    dcg,
    gain,
    idcg,
    ndcg,
    order_ranking,
    ordered_mean,
    trec_order,
)

__all__ = [
    "CONVENTIONS",
    "ConventionError",
    "check_measures",
    "convention_values",
    "ir_measures_judged",
    "ir_measures_order",
    "numba_argsort",
    "numpy_mean",
    "query_ndcg",
    "ranx_ndcg",
    "ranx_order",
    "sklearn_ndcg",
    "trec_eval_ndcg",
]

# trec_eval first: the platform's own, the default everywhere a convention is chosen.
CONVENTIONS: tuple[str, ...] = ("trec_eval", "sklearn", "ranx", "ir_measures")

# (docno, score) pairs of one query's results, as the run gives them (the platform's
# stored and exported order: score descending, ties by docno descending).
Results = Sequence[tuple[str, float]]


class ConventionError(ValueError):
    """A convention or a measure that a convention does not define."""


def _check_convention(convention: str) -> str:
    if convention not in CONVENTIONS:
        raise ConventionError(f"unknown convention {convention!r}; expected one of {CONVENTIONS}")
    return convention


# --- trec_eval: the platform ----------------------------------------------------------------


def trec_eval_ndcg(results: Results, grades: Mapping[str, int], k: int, scheme: str) -> float:
    """trec_eval's ``ndcg_cut_k`` (the platform's stored nDCG@k): score descending, ties by
    docno descending; IDCG from every judged document of the query, retrieved or not."""
    ranking = order_ranking(results)
    gained = dcg([grades.get(docno) for docno in ranking], k, scheme)
    return ndcg(gained, idcg(grades.values(), k, scheme))


# --- scikit-learn ---------------------------------------------------------------------------


def _sklearn_discount(position: int) -> float:
    # sklearn/metrics/_ranking.py, _dcg_sample_scores:
    #   discount = 1 / (np.log(np.arange(y_true.shape[1]) + 2) / np.log(log_base))
    # A natural log over ln 2, not log2: it may differ from trec_eval's log2 in the last bit.
    return 1.0 / (math.log(position + 2) / math.log(2))


def _sklearn_dcg(labels: Sequence[float], scores: Sequence[float], k: int) -> float:
    """scikit-learn's tie-averaged DCG@k (McSherry & Najork 2008): the documents that share
    a score form one group; each rank of the group gets the group's mean gain.

    scikit-learn's documentation of ``_tie_averaged_dcg``: "The gain (`y_true`) of an index
    falling inside a tied group (in the order induced by `y_score`) is replaced by the
    average gain within this group." ``ignore_ties=False`` is ``ndcg_score``'s default.
    Ranks below k have no discount ("the discount is 0 after index k").
    """
    order = sorted(range(len(scores)), key=lambda index: -scores[index])
    total = 0.0
    position = 0
    for _, members in groupby(order, key=lambda index: scores[index]):
        group = list(members)
        mean_gain = sum(labels[index] for index in group) / len(group)
        ranks = range(position, min(position + len(group), k))
        total += mean_gain * sum(_sklearn_discount(rank) for rank in ranks)
        position += len(group)
    return total


def sklearn_ndcg(results: Results, grades: Mapping[str, int], k: int, scheme: str) -> float:
    """``ndcg_score([gains], [scores], k=k)`` for one query: the run's documents are the
    "labels", their gains ``y_true`` and the run's scores ``y_score``.

    - Ties: tie-averaged DCG (``_sklearn_dcg``), where trec_eval orders ties by docno.
    - IDCG from the retrieved documents only: ``_ndcg_sample_scores`` normalises by
      ``_dcg_sample_scores(y_true, y_true, k, ignore_ties=True)``, the DCG of the scored
      list's own labels sorted; judged documents the run missed are not in ``y_true``, so a
      run that finds one document of grade 1 among ten relevant ones scores 1.0.
    - Gain: ``y_true`` as given ("true scores of entities to be ranked"); under the
      collection's exponential scheme the gains passed are ``2**grade - 1``. A document
      without a grade, or with a negative one, gains 0: ``ndcg_score`` refuses negative
      ``y_true`` ("ndcg_score should not be used on negative y_true values").
    - No positive gain: 0.0 (``gain[all_irrelevant] = 0``).
    - ``ndcg_score`` refuses a list of one document ("Computing NDCG is only meaningful
      when there is more than 1 document"); here it scores what the formula gives, 1.0 or
      0.0; an empty list (a query the run did not answer) scores 0.0.
    """
    labels = [gain(grades.get(docno, 0), scheme) for docno, _ in results]
    scores = [score for _, score in results]
    ideal = _sklearn_dcg(sorted(labels, reverse=True), sorted(labels, reverse=True), k)
    if ideal == 0.0:
        return 0.0
    return _sklearn_dcg(labels, scores, k) / ideal


# --- ranx -----------------------------------------------------------------------------------

# numba/misc/quicksort.py: "Under this size, switch to a simple insertion sort".
_SMALL_QUICKSORT = 15


def numba_argsort(keys: Sequence[float]) -> list[int]:
    """``np.argsort(keys)`` as numba compiles it (default kind ``quicksort``), written after
    ``numba/misc/quicksort.py``: median-of-three partitions down to 15 items, then
    insertion sort. Not stable: items with equal keys may change places, depending on where
    the pivots fall; the order is nonetheless deterministic, and so reproducible here."""
    order = list(range(len(keys)))
    if len(keys) < 2:
        return order

    def insertion_sort(low: int, high: int) -> None:
        for i in range(low + 1, high + 1):
            item = order[i]
            value = keys[item]
            j = i
            while j > low and value < keys[order[j - 1]]:
                order[j] = order[j - 1]
                j -= 1
            order[j] = item

    def partition(low: int, high: int) -> int:
        mid = (low + high) >> 1
        if keys[order[mid]] < keys[order[low]]:
            order[low], order[mid] = order[mid], order[low]
        if keys[order[high]] < keys[order[mid]]:
            order[high], order[mid] = order[mid], order[high]
        if keys[order[mid]] < keys[order[low]]:
            order[low], order[mid] = order[mid], order[low]
        pivot = keys[order[mid]]
        order[high], order[mid] = order[mid], order[high]
        i, j = low, high - 1
        while True:
            while i < high and keys[order[i]] < pivot:
                i += 1
            while j >= low and pivot < keys[order[j]]:
                j -= 1
            if i >= j:
                break
            order[i], order[j] = order[j], order[i]
            i += 1
            j -= 1
        order[i], order[high] = order[high], order[i]
        return i

    stack = [(0, len(keys) - 1)]
    while stack:
        low, high = stack.pop()
        while high - low >= _SMALL_QUICKSORT:
            i = partition(low, high)
            if high - i > i - low:  # push the larger side, go on with the smaller
                if high > i:
                    stack.append((i + 1, high))
                high = i - 1
            else:
                if i > low:
                    stack.append((low, i - 1))
                low = i + 1
        insertion_sort(low, high)
    return order


def ranx_order(results: Results) -> list[str]:
    """The docnos in the order ranx's ``Run`` holds them for evaluation.

    ranx sorts each query's documents with ``sort_dict_by_value``
    (``ranx/data_structures/common.py``): ``typed_list_argosrt([-v for v in values])``, a
    numba ``np.argsort`` of the negated scores, which is not stable (``numba_argsort``). It
    sorts twice: when the ``Run`` is built (``create_and_sort``) and again in
    ``Run.make_comparable`` (``self.sort()``), which ``evaluate(..., make_comparable=True)``
    calls. Distinct scores come out descending as everywhere; tied documents come out in
    the input order while a query has at most 16 results (insertion sort), and in
    quicksort's order beyond. The input order is the platform's (its run download)."""
    rows = list(results)
    for _ in range(2):
        rows = [rows[index] for index in numba_argsort([-score for _, score in rows])]
    return [docno for docno, _ in rows]


def ranx_ndcg(results: Results, grades: Mapping[str, int], k: int, scheme: str) -> float:
    """``ranx.evaluate(qrels, run, "ndcg@k")``, or ``"ndcg_burges@k"`` under the exponential
    scheme, for one query (``ranx/metrics/ndcg.py``).

    - Order: ranx's (``ranx_order``), where trec_eval orders ties by docno descending.
    - Gain: ``ndcg`` is "NDCG as proposed by Järvelin et al.": ``rel_i / log2(i+1)``, the
      grade itself; ``ndcg_burges`` is "as proposed by Burges et al.": ``2^rel_i - 1``.
    - Relevant: ``clean_qrels(qrels, rel_lvl)`` keeps the grades ``>= rel_lvl`` (1 by
      default: "rel_lvl=1 means all documents with relevance judgment scores greater or
      equal to 1 will be considered relevant"); 0 and negative grades gain nothing.
    - IDCG: ``_dcg(qrels, qrels, k)``, every judged document of the query sorted by grade,
      as trec_eval; with IDCG 0 "for numerical stability" it divides by 1, giving 0.
    - Sums: the gains ``/ np.log2(np.arange(1, k + 1) + 1)`` summed in rank order by numba,
      the same doubles as ``ndcg.dcg``: on a list without ties ranx equals trec_eval.
    """
    ranking = ranx_order(results)
    relevant = {docno: grade for docno, grade in grades.items() if grade >= 1}
    gained = dcg([relevant.get(docno) for docno in ranking], k, scheme)
    return ndcg(gained, idcg(relevant.values(), k, scheme))


def numpy_mean(values: Sequence[float]) -> float:
    """``np.mean`` of a float64 array, bit for bit: numpy's pairwise summation (blocks of 8
    partial sums up to 128 items, halves beyond), then one division. ranx reports
    ``np.mean(scores)`` over the queries in qid order. (For more than 8,192 queries numpy
    sums in buffers of 8,192; not reproduced here.)"""

    def pairwise(items: Sequence[float]) -> float:
        n = len(items)
        if n < 8:
            total = 0.0
            for value in items:
                total += value
            return total
        if n <= 128:
            partial = list(items[:8])
            i = 8
            while i < n - n % 8:
                for j in range(8):
                    partial[j] += items[i + j]
                i += 8
            total = ((partial[0] + partial[1]) + (partial[2] + partial[3])) + (
                (partial[4] + partial[5]) + (partial[6] + partial[7])
            )
            for value in items[i:]:
                total += value
            return total
        half = n // 2
        half -= half % 8
        return pairwise(items[:half]) + pairwise(items[half:])

    if not values:
        raise ValueError("no values: a mean over zero queries is undefined")
    return pairwise(list(values)) / len(values)


# --- ir_measures ----------------------------------------------------------------------------


def ir_measures_order(results: Results) -> list[str]:
    """ir_measures' own providers' order (``JudgedProvider``):
    ``sorted(run[q].items(), key=lambda x: (-x[1], x[0]))``: score descending, ties by
    docno *ascending*, where trec_eval (and so pytrec_eval) orders them descending."""
    return [docno for docno, _ in sorted(results, key=lambda row: (-row[1], row[0]))]


def ir_measures_judged(results: Results, grades: Mapping[str, int], k: int) -> float:
    """ir_measures' ``Judged@k``: documents found in the qrels (any grade, negative ones
    included) among its top k, over min(k, retrieved) ("The cutoff should be recalculated
    if it is less than the size of the run"), on ``ir_measures_order``. The platform's
    judged@k divides by k and does not count a negative grade as judged."""
    ranking = ir_measures_order(results)
    return judged([grades.get(docno) for docno in ranking], k)


def ir_measures_ndcg(results: Results, grades: Mapping[str, int], k: int, scheme: str) -> float:
    """ir_measures' ``nDCG@k`` comes from its pytrec_eval provider (``ndcg_cut_k``:
    "measures._nDCG(cutoff=Any(), dcg=Choices('log2'), ...)"), so per query it is
    trec_eval's value. The exponential scheme is ``nDCG(gains={g: 2**g - 1})@k`` there,
    the qrels rewritten the same way. Its mean differs (``convention_values``)."""
    return trec_eval_ndcg(results, grades, k, scheme)


# --- one query, one run ---------------------------------------------------------------------

_NDCG = {
    "trec_eval": trec_eval_ndcg,
    "sklearn": sklearn_ndcg,
    "ranx": ranx_ndcg,
    "ir_measures": ir_measures_ndcg,
}


def query_ndcg(
    convention: str, results: Results, grades: Mapping[str, int], k: int, scheme: str
) -> float:
    """nDCG@k of one query's results under a convention; ``grades`` every judged document
    of the query (docno -> grade)."""
    return _NDCG[_check_convention(convention)](results, grades, k, scheme)


def check_measures(convention: str, measures: Iterable[Measure]) -> list[Measure]:
    """The measures a convention defines: nDCG@k under each, and ir_measures' Judged@k.
    Anything else: ``ConventionError`` saying why (under ir_measures the other measures
    come from pytrec_eval, so they are the platform's: no convention needed)."""
    _check_convention(convention)
    chosen = list(dict.fromkeys(measures))
    for measure in chosen:
        if measure.name == "nDCG" and measure.cutoff is not None:
            continue
        if (
            measure.name == "Judged"
            and measure.cutoff is not None
            and convention
            in (
                "ir_measures",
                "trec_eval",
            )
        ):
            continue
        if convention == "ir_measures":
            why = "ir_measures takes it from pytrec_eval: leave --convention out"
        else:
            why = f"the {convention} convention defines nDCG@k only"
        raise ConventionError(f"{measure.name}: {why}")
    return chosen


def _value(
    convention: str, measure: Measure, results: Results, grades: Mapping[str, int], scheme: str
) -> float:
    assert measure.cutoff is not None
    if measure.name == "Judged":
        if convention == "ir_measures":
            return ir_measures_judged(results, grades, measure.cutoff)
        return judged([grades.get(docno) for docno in order_ranking(results)], measure.cutoff)
    return query_ndcg(convention, results, grades, measure.cutoff, scheme)


@dataclass(frozen=True)
class _Rule:
    """Which judged queries a convention's mean takes and how it sums them."""

    always_complete: bool  # unanswered judged queries count 0 whatever the collection says
    numpy: bool  # np.mean's pairwise sum rather than trec_eval's running sum


# ranx: make_comparable "adds empty results for queries missing from the run and removes
# those not appearing in qrels", then np.mean. ir_measures: Evaluator.iter_calc yields
# ``measure.DEFAULT`` (0) for every qrels query the run lacks; MeanAgg sums one by one.
# scikit-learn has no query set: a caller averages its per-query values, over the queries
# the platform evaluates (the collection's rule for unanswered ones).
_RULES = {
    "trec_eval": _Rule(always_complete=False, numpy=False),
    "sklearn": _Rule(always_complete=False, numpy=False),
    "ranx": _Rule(always_complete=True, numpy=True),
    "ir_measures": _Rule(always_complete=True, numpy=False),
}


def convention_values(
    convention: str,
    measures: Sequence[Measure],
    qrels: Mapping[str, Mapping[str, int]],
    results: Mapping[str, Results],
    *,
    complete: bool,
    scheme: str = "linear",
) -> RunValues:
    """One run under a convention, per evaluated query and in the mean, in trec_eval's
    output shape (``formats.trec.evaluation.trec_eval_lines`` prints it).

    ``qrels`` maps each judged query to its grades, ``results`` each answered query to its
    ``(docno, score)`` pairs. The evaluated queries are the judged ones; a judged query the
    run did not answer counts 0 when ``complete`` (the collection's rule), and always under
    ranx and ir_measures. No evaluated query: ``ValueError``."""
    chosen = check_measures(convention, measures)
    rule = _RULES[convention]
    everything = complete or rule.always_complete
    evaluated = [qid for qid in trec_order(qrels) if everything or qid in results]
    if not evaluated:
        raise ValueError("no evaluated queries: a mean over zero queries is undefined")
    per_query = {
        qid: {
            measure: _value(convention, measure, results.get(qid, ()), qrels[qid], scheme)
            for measure in chosen
        }
        for qid in evaluated
    }
    mean = numpy_mean if rule.numpy else ordered_mean
    means = {measure: mean([per_query[qid][measure] for qid in evaluated]) for measure in chosen}
    return RunValues(per_query, means)
