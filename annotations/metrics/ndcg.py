"""Pure nDCG@k core that reproduces trec_eval's ndcg_cut (and -J) bit for bit; stdlib only."""

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from operator import itemgetter
from typing import Any, NamedTuple, TypeGuard, TypeVar

__all__ = [
    "RULES",
    "SCHEMES",
    "CutoffScores",
    "condensed",
    "dcg",
    "effective_grade",
    "gain",
    "idcg",
    "idcgs_for",
    "judged_at",
    "ndcg",
    "order_ranking",
    "order_results",
    "query_scores",
    "run_mean",
]

SCHEMES: tuple[str, ...] = ("linear", "exponential")
RULES: tuple[str, ...] = ("median", "majority", "mean")

DocId = TypeVar("DocId", bound=Hashable)
QueryId = TypeVar("QueryId", str, int)


# --- ordering -----------------------------------------------------------------------------


def order_ranking(results: Iterable[tuple[str, float | None]]) -> list[str]:
    """Return the docnos of one query's results in effective (evaluated) order.

    ``results`` are ``(docno, score)`` pairs in file order. The submitted rank column is
    informational only and deliberately not an argument: trec_eval ignores it too.

    - Scores present: score descending; ties broken by docno *descending*, exactly
      trec_eval's ``comp_sim_docno`` (``strcmp(docno2, docno1)`` on the raw bytes). Python
      compares ``str`` by code point, which for UTF-8 equals byte order (and PostgreSQL
      ``COLLATE "C"``), so ``"d9a" > "d9" > "d10" > "D9"``. ``-0.0`` ties with ``0.0``.
    - All scores ``None`` (a run submitted without scores): the given order is kept.
    - Some scores ``None``, others numbers: ``ValueError`` (there is no honest order).
    - A NaN score or a repeated docno: ``ValueError`` (trec_eval rejects duplicate docs;
      NaN has no place in a descending sort).
    """
    return [row[0] for row in order_results(results)]


_Row = TypeVar("_Row", bound=tuple[Any, ...])


def order_results(results: Iterable[_Row]) -> list[_Row]:
    """``order_ranking`` for whole result rows: tuples starting ``(docno, score, ...)``, the
    rest (a rank, say) carried along; the rows come back in effective order."""
    rows = list(results)
    docnos = [row[0] for row in rows]
    if len(set(docnos)) != len(docnos):
        duplicate = next(docno for docno, count in Counter(docnos).items() if count > 1)
        raise ValueError(f"duplicate docno {duplicate!r} in one query's results")
    scores = [row[1] for row in rows]
    unscored = scores.count(None)
    if unscored == len(rows):
        return rows
    if unscored:
        raise ValueError("results mix scored and unscored documents; give all or no scores")
    if any(map(math.isnan, scores)):
        raise ValueError("a result score is NaN")
    # Two stable sorts give (score desc, docno desc) without negating strings.
    rows.sort(key=itemgetter(0), reverse=True)
    rows.sort(key=itemgetter(1), reverse=True)
    return rows


# --- gain and cutoffs ---------------------------------------------------------------------


def _linear_gain(grade: int) -> float:
    return float(grade) if grade > 0 else 0.0


def _exponential_gain(grade: int) -> float:
    # Integer power first, then one rounding: exact for any grade a float can hold.
    return float(2**grade - 1) if grade > 0 else 0.0


_GAINS: dict[str, Callable[[int], float]] = {
    "linear": _linear_gain,
    "exponential": _exponential_gain,
}


_DISCOUNTS: list[float] = [math.log2(i + 2) for i in range(1024)]


def discounts(length: int) -> list[float]:
    """log2(i + 2) for i < length at least: the same doubles math.log2 gives, computed once."""
    global _DISCOUNTS
    table = _DISCOUNTS
    if len(table) < length:
        table = [math.log2(i + 2) for i in range(max(length, 2 * len(table)))]
        _DISCOUNTS = table  # rebound whole, so a concurrent reader never sees a partial list
    return table


def gain_function(scheme: str) -> Callable[[int], float]:
    try:
        return _GAINS[scheme]
    except KeyError:
        raise ValueError(f"unknown gain scheme {scheme!r}; expected one of {SCHEMES}") from None


def gain(grade: int, scheme: str) -> float:
    """Gain of one document: ``"linear"`` -> ``grade``; ``"exponential"`` -> ``2**grade - 1``.

    Grades <= 0 (non-relevant, and negative "in pool but unjudged" grades) give 0.0.
    trec_eval's ``ndcg_cut`` uses the qrels value itself as gain (linear); the exponential
    scheme equals trec_eval run on qrels whose grades were rewritten to ``2**grade - 1``.
    Unknown scheme: ``ValueError``.
    """
    return gain_function(scheme)(grade)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be an integer >= 1, got {k!r}")
    return k


def check_cutoffs(ks: Iterable[int]) -> list[int]:
    """Validated cutoffs, ascending and deduplicated (a repeated k is harmless)."""
    cutoffs = sorted({_check_k(k) for k in ks})
    if not cutoffs:
        raise ValueError("at least one cutoff k is required")
    return cutoffs


# --- DCG, IDCG, nDCG ----------------------------------------------------------------------


def dcg(ranking_grades: Sequence[int | None], k: int, scheme: str) -> float:
    """DCG@k of grades listed in effective rank order; ``None`` marks an unjudged document.

    The document at 1-based rank ``i`` contributes ``gain / log2(i + 1)``. For bit equality
    with trec_eval the discount is ``math.log2`` of the same double (trec_eval writes
    ``gain / log2(i + 2)`` for 0-based ``i``), the terms are added one by one in rank order
    (no ``fsum``, no pairwise summation), and only positive gains are added. Unjudged,
    non-relevant and negative grades add nothing. Fewer than k documents: the missing ranks
    add nothing (no penalty for a short list, as in trec_eval).
    """
    _check_k(k)
    gain_of = gain_function(scheme)
    total = 0.0
    for position, grade in enumerate(ranking_grades[:k]):
        if grade is not None and grade > 0:
            total += gain_of(grade) / math.log2(position + 2)
    return total


def idcgs_for(grades: Iterable[int], ks: Iterable[int], scheme: str) -> dict[int, float]:
    """IDCG@k for every k in ``ks`` (ascending) in one pass over the ideal list.

    ``grades`` are the effective grades of *all* judged documents of the query, retrieved or
    not (trec_eval's convention; IDCG from retrieved documents only would reward a system for
    missing relevant documents). The ideal list keeps grades > 0 sorted descending (both
    schemes are increasing in the grade, so this is also gain-descending) and is summed
    sequentially like ``dcg``. Fewer relevant documents than k: the sum simply stops.
    """
    cutoffs = check_cutoffs(ks)
    gain_of = gain_function(scheme)
    ideal = sorted((grade for grade in grades if grade > 0), reverse=True)
    result: dict[int, float] = {}
    total = 0.0
    position = 0
    for k in cutoffs:
        while position < k and position < len(ideal):
            total += gain_of(ideal[position]) / math.log2(position + 2)
            position += 1
        result[k] = total
    return result


def idcg(grades: Iterable[int], k: int, scheme: str) -> float:
    """IDCG@k: the DCG@k of the ideal list of all judged documents; see ``idcgs_for``."""
    return idcgs_for(grades, (k,), scheme)[k]


def ndcg(dcg_value: float, idcg_value: float) -> float:
    """nDCG = DCG / IDCG; 0.0 when IDCG is 0 (no relevant document known), as trec_eval."""
    return dcg_value / idcg_value if idcg_value > 0.0 else 0.0


# --- judged@k and the condensed list ------------------------------------------------------


def is_judged(grade: int | None) -> TypeGuard[int]:
    """Whether a grade (None: no judgement) counts as judged: grade >= 0, as in trec_eval."""
    # trec_eval reads a negative qrels value as "in the pool but not judged"
    # (RELVALUE_UNJUDGED): it gains nothing, is left out of the ideal list, and -J drops it.
    return grade is not None and grade >= 0


def judged_at(ranking_grades: Sequence[int | None], k: int) -> float:
    """judged@k: the share of the top k whose grade is >= 0 (``None`` or negative: unjudged).

    The divisor is always k, also when fewer than k documents were retrieved: an absent rank
    counts as unjudged, like trec_eval's P@k and ir_measures' original Judged@k. (Since
    ir_measures PR #48, Dec 2022, its Judged@k divides by min(k, retrieved) instead, and it
    counts any qrels entry, negative ones included, as judged.)
    """
    _check_k(k)
    return sum(1 for grade in ranking_grades[:k] if is_judged(grade)) / k


def condensed(ranking_grades: Sequence[int | None]) -> list[int]:
    """Sakai's (2007) condensed list: the judged grades (>= 0) in their original order.

    Scoring it with ``dcg`` and the unchanged IDCG gives nDCG'@k, trec_eval's ``-J``
    (judged_docs_only_flag): unjudged and negatively graded documents are removed *before*
    the cutoff, so the documents below them move up.
    """
    return [grade for grade in ranking_grades if is_judged(grade)]


# --- one query, several cutoffs: the entry point of the database layer ---------------------


class CutoffScores(NamedTuple):
    """Scores of one ranking for one query at cutoff k (a named tuple: immutable, and cheap
    to create on the judgement path, a few hundred per change)."""

    k: int
    dcg: float
    ndcg: float
    judged: float
    ndcg_condensed: float


def query_scores(
    ranking: Sequence[DocId],
    grades: Mapping[DocId, int],
    ks: Sequence[int],
    scheme: str,
    idcgs: Mapping[int, float] | None = None,
) -> dict[int, CutoffScores]:
    """DCG@k, nDCG@k, judged@k and condensed nDCG'@k of one ranking, keyed by ascending k.

    ``ranking`` holds document ids (docnos, primary keys: any hashable) already in effective
    order (see ``order_ranking``) and without repeats. ``grades`` maps every judged document
    of the query to its effective grade; an id absent from it, or with a negative grade, is
    unjudged (see ``judged_at``). ``idcgs`` may carry IDCG@k precomputed with ``idcgs_for``
    (shared by all runs of a query); otherwise it is computed from ``grades.values()``.

    Same numbers as ``dcg``/``ndcg``/``judged_at``/``condensed`` (and trec_eval), but in a
    single pass: the ranking is read up to max(ks), and beyond that only while the condensed
    list still has fewer than max(ks) judged documents.
    """
    cutoffs = check_cutoffs(ks)
    gain_of = gain_function(scheme)
    if idcgs is None:
        idcgs = idcgs_for(grades.values(), cutoffs, scheme)
    else:
        missing = [k for k in cutoffs if k not in idcgs]
        if missing:
            raise ValueError(f"idcgs lacks cutoffs {missing}")
    discount = discounts(len(ranking) + 1)  # discount[i] == math.log2(i + 2)
    last = len(cutoffs)

    dcg_at: dict[int, float] = {}
    judged_count_at: dict[int, int] = {}
    condensed_at: dict[int, float] = {}
    total = 0.0  # DCG of the ranking as submitted
    condensed_total = 0.0  # DCG of the condensed list
    judged_seen = 0  # judged documents so far = length of the condensed list so far
    next_cut = 0  # index of the next cutoff to record for the ranking
    next_condensed_cut = 0  # ... and for the condensed list

    for position, doc in enumerate(ranking):
        grade = grades.get(doc)
        # is_judged inlined: this loop runs for every run of a query on each judgement.
        if grade is not None and grade >= 0:
            if grade > 0:
                doc_gain = gain_of(grade)
                if next_cut < last:
                    total += doc_gain / discount[position]
                if next_condensed_cut < last:
                    condensed_total += doc_gain / discount[judged_seen]
            judged_seen += 1
            if next_condensed_cut < last and judged_seen == cutoffs[next_condensed_cut]:
                condensed_at[judged_seen] = condensed_total
                next_condensed_cut += 1
        if next_cut < last and position + 1 == cutoffs[next_cut]:
            dcg_at[position + 1] = total
            judged_count_at[position + 1] = judged_seen
            next_cut += 1
        if next_cut == last and next_condensed_cut == last:
            break  # checked last so that not one document too many is read

    # Cutoffs deeper than the ranking (or than its judged documents) keep the final sums.
    for k in cutoffs[next_cut:]:
        dcg_at[k] = total
        judged_count_at[k] = judged_seen
    for k in cutoffs[next_condensed_cut:]:
        condensed_at[k] = condensed_total

    return {
        k: CutoffScores(
            k=k,
            dcg=dcg_at[k],
            ndcg=ndcg(dcg_at[k], idcgs[k]),
            judged=judged_count_at[k] / k,
            ndcg_condensed=ndcg(condensed_at[k], idcgs[k]),
        )
        for k in cutoffs
    }


# --- aggregation --------------------------------------------------------------------------


def _lower_median(ordered: Sequence[int]) -> int:
    return ordered[(len(ordered) - 1) // 2]


def effective_grade(grades: Sequence[int], rule: str = "median") -> int:
    """One grade for a (query, document) from several assessors' grades.

    Every rule returns a grade on the same integer scale and resolves an exact tie between
    two grades towards the *lower* one, so disagreement never inflates relevance:

    - ``"median"``: the lower median (``[1, 2]`` -> 1, ``[0, 1, 3]`` -> 1); never invents a
      grade nobody gave.
    - ``"majority"``: the most frequent grade; when several grades tie for most frequent,
      the lower median of those tied grades (``[0, 0, 2, 2, 3, 3]`` -> 2, ``[1, 3]`` -> 1).
    - ``"mean"``: the arithmetic mean, computed exactly, rounded to the nearest integer with
      halves rounded *down* (``[1, 2]`` -> 1, ``[1, 2, 2]`` -> 2, ``[-1, 0]`` -> -1). Not
      Python's half-to-even ``round``, which would send 1.5 up but 2.5 down.

    Empty ``grades`` or an unknown rule: ``ValueError``.
    """
    if rule not in RULES:
        raise ValueError(f"unknown aggregation rule {rule!r}; expected one of {RULES}")
    if not grades:
        raise ValueError("no grades to aggregate")
    ordered = sorted(grades)
    if rule == "median":
        return _lower_median(ordered)
    if rule == "majority":
        counts = Counter(ordered)
        top = max(counts.values())
        return _lower_median([grade for grade in sorted(counts) if counts[grade] == top])
    # ceil(mean - 1/2) is the nearest integer with halves going down; Fraction keeps it exact.
    return math.ceil(Fraction(sum(ordered), len(ordered)) - Fraction(1, 2))


def ordered_mean(values: Iterable[float]) -> float:
    """trec_eval's mean of values given in its query order: added one by one into a double,
    left to right, then divided by their count (0.0 for none).

    trec_eval accumulates its ``all`` line this way over the queries in ascending qid
    order (bytewise, as strcmp sorts them); the caller passes the values in that order
    (``trec_order``). Not ``math.fsum`` nor numpy's pairwise sum, and not Python's ``sum``,
    which compensates from Python 3.12 on: each would differ from trec_eval in the last bits.
    """
    total = 0.0
    count = 0
    for value in values:
        total += value
        count += 1
    return total / count if count else 0.0


def trec_order(qids: Iterable[QueryId]) -> list[QueryId]:
    """Query ids in trec_eval's order: ascending, strings by code point, which is the order
    of their UTF-8 bytes (strcmp). A database's ORDER BY may collate otherwise."""
    return sorted(qids)


def run_mean(values: Mapping[QueryId, float], evaluated: Iterable[QueryId]) -> float:
    """Mean of per-query values over the evaluated queries (those with >= 1 judgement).

    - An evaluated query missing from ``values`` (the run returned nothing for it) counts
      0.0, like ``trec_eval -c``; values of queries outside ``evaluated`` are ignored.
    - Summed sequentially in ascending query-id order, the order trec_eval accumulates its
      ``all`` line in, then divided by the number of evaluated queries (``ordered_mean``).
      Deterministic: the same inputs give the same last bit whatever the mapping's order.
      Pass qid strings to get trec_eval's exact order (integer ids sort numerically, not
      bytewise).
    - No evaluated query: ``ValueError`` rather than 0.0, which would be indistinguishable
      from a run that failed every query (trec_eval also refuses: "No queries with both
      results and relevance info"). The caller shows "no score yet".
    """
    queries = trec_order(set(evaluated))
    if not queries:
        raise ValueError("no evaluated queries: a mean over zero queries is undefined")
    return ordered_mean(values.get(query, 0.0) for query in queries)
