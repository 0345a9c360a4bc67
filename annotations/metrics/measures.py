"""Pure reference of the measures beside nDCG, as trec_eval 10, gdeval or ir_measures give them."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from annotations.metrics.ndcg import dcg, idcg, ndcg, ordered_mean, trec_order

__all__ = [
    "INFAP_EPSILON",
    "Measure",
    "average_precision",
    "bpref",
    "depth_read",
    "err",
    "inferred_average_precision",
    "judged",
    "measure_value",
    "ndcg_full",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "precision",
    "query_values",
    "r_precision",
    "rbp",
    "rbp_residual",
    "recall",
    "reciprocal_rank",
    "set_f",
    "set_precision",
    "set_recall",
    "success",
    "summary",
]

QueryId = TypeVar("QueryId", str, int)

# trec_eval's infAP smoothing (trec_eval.h): keeps 0/0 out of the precision estimate.
INFAP_EPSILON = 0.00001

# The grades below are those of one query's results in effective order (see
# ndcg.order_ranking): an int for a document in the qrels (negative: in the pool but not
# judged, trec_eval's RELVALUE_UNJUDGED), None for a document absent from the qrels
# (RELVALUE_NONPOOL). `qrels` is every grade of the query's qrels, retrieved or not.
Grades = Sequence[int | None]


@dataclass(frozen=True)
class Measure:
    """One measure as a user names it: a family (ir_measures' name: "AP", "P", "nDCG", ...),
    a cutoff (None: the whole ranking), the relevance level (trec_eval's ``-l``: a grade is
    relevant when >= rel) and further parameters (RBP's p, SetF's beta) as sorted pairs."""

    name: str
    cutoff: int | None = None
    rel: int = 1
    params: tuple[tuple[str, float], ...] = ()

    def param(self, key: str, default: float) -> float:
        return dict(self.params).get(key, default)


# --- counts -------------------------------------------------------------------------------


def is_relevant(grade: int | None, level: int) -> bool:
    """trec_eval's test ``rel >= relevance_level`` on a result: a grade in the qrels at or
    above the level. Absent (None) and negative (in pool, unjudged) grades never are."""
    return grade is not None and grade >= 0 and grade >= level


def num_rel(qrels: Iterable[int], level: int = 1) -> int:
    """Relevant documents of the query: qrels grades >= max(level, 0), retrieved or not."""
    return sum(1 for grade in qrels if grade >= 0 and grade >= level)


def num_ret(ranking_grades: Grades) -> int:
    return len(ranking_grades)


def num_rel_ret(ranking_grades: Grades, level: int = 1, k: int | None = None) -> int:
    """Relevant documents among the first k results (all results when k is None)."""
    top = ranking_grades if k is None else ranking_grades[:k]
    return sum(1 for grade in top if is_relevant(grade, level))


# --- precision, recall, success -------------------------------------------------------------


def precision(ranking_grades: Grades, k: int, level: int = 1) -> float:
    """P@k: relevant in the top k over k, also when fewer than k were retrieved (the absent
    ranks count as non-relevant, trec_eval's ``P``)."""
    return num_rel_ret(ranking_grades, level, k) / k


def recall(ranking_grades: Grades, k: int, relevant: int, level: int = 1) -> float:
    """R@k: relevant in the top k over all relevant of the query; 0.0 when it has none."""
    return num_rel_ret(ranking_grades, level, k) / relevant if relevant else 0.0


def success(ranking_grades: Grades, k: int, level: int = 1) -> float:
    """Success@k: 1.0 when a relevant document is in the top k, else 0.0."""
    return 1.0 if num_rel_ret(ranking_grades, level, k) else 0.0


def set_precision(ranking_grades: Grades, level: int = 1) -> float:
    """set_P: relevant retrieved over retrieved (no fill-up to a cutoff); 0.0 for none."""
    retrieved = len(ranking_grades)
    return num_rel_ret(ranking_grades, level) / retrieved if retrieved else 0.0


def set_recall(ranking_grades: Grades, relevant: int, level: int = 1) -> float:
    return num_rel_ret(ranking_grades, level) / relevant if relevant else 0.0


def set_f(ranking_grades: Grades, relevant: int, level: int = 1, beta: float = 1.0) -> float:
    """set_F: ``(beta + 1) * P * R / (beta * P + R)`` written as trec_eval writes it, where
    beta (trec_eval's parameter x) weighs recall against precision; 0.0 without a relevant
    retrieved document. (trec_eval's x is ir_measures' beta, not van Rijsbergen's beta**2.)"""
    found = num_rel_ret(ranking_grades, level)
    if not found:
        return 0.0
    p = found / len(ranking_grades)
    r = found / relevant
    return (beta + 1.0) * p * r / (beta * p + r)


def r_precision(ranking_grades: Grades, relevant: int, level: int = 1) -> float:
    """R-prec: precision in the top R, R the number of relevant documents; 0.0 when R is 0
    or nothing was retrieved."""
    if not min(len(ranking_grades), relevant):
        return 0.0
    return num_rel_ret(ranking_grades, level, relevant) / relevant


def reciprocal_rank(ranking_grades: Grades, level: int = 1, k: int | None = None) -> float:
    """1 / rank of the first relevant document (within the top k); 0.0 when there is none."""
    top = ranking_grades if k is None else ranking_grades[:k]
    for position, grade in enumerate(top):
        if is_relevant(grade, level):
            return 1.0 / (position + 1)
    return 0.0


# --- average precision and its estimators -------------------------------------------------


def average_precision(
    ranking_grades: Grades, relevant: int, level: int = 1, k: int | None = None
) -> float:
    """AP (trec_eval ``map``) or AP@k (``map_cut_k``): the precision at each relevant
    document of the top k, ``found / rank`` added one by one in rank order into a double,
    divided by the number of relevant documents of the query (retrieved or not); 0.0 when
    it has none. Missed relevant documents add 0 to the sum but count in the divisor."""
    total = 0.0
    found = 0
    top = ranking_grades if k is None else ranking_grades[:k]
    for position, grade in enumerate(top):
        if is_relevant(grade, level):
            found += 1
            total += found / (position + 1)
    return total / relevant if relevant else 0.0


def bpref(ranking_grades: Grades, qrels: Iterable[int], level: int = 1) -> float:
    """bpref (Buckley & Voorhees 2004) as trec_eval computes it: each relevant retrieved
    document scores ``1 - min(n, R) / min(N, R)``, n the judged non-relevant documents
    above it, R the relevant and N the judged non-relevant of the query (grades 0..level-1);
    1 when none is above it. The sum is divided by R. Documents outside the qrels and
    negative grades are skipped: they are neither relevant nor non-relevant."""
    grades = list(qrels)
    relevant = num_rel(grades, level)
    nonrelevant = sum(1 for grade in grades if 0 <= grade < level)
    total = 0.0
    nonrel_so_far = 0
    for grade in ranking_grades:
        if grade is None or grade < 0:
            continue
        if grade < level:
            nonrel_so_far += 1
        elif nonrel_so_far > 0:
            total += 1.0 - min(nonrel_so_far, relevant) / min(nonrelevant, relevant)
        else:
            total += 1.0
    return total / relevant if relevant else total


def inferred_average_precision(ranking_grades: Grades, relevant: int, level: int = 1) -> float:
    """infAP (Yilmaz & Aslam 2006) as trec_eval computes it, term by term in its order of
    operations: at a relevant document at 0-based position j > 0,
    ``1/(j+1) + (j/(j+1)) * ((rel_above + nonrel_above + pooled_unjudged_above) / j)
    * ((rel_above + eps) / (rel_above + nonrel_above + 2 eps))``, 1.0 at j = 0, summed and
    divided by R. Documents outside the qrels only lengthen j; pooled but unjudged ones
    (negative grades) count in the first ratio only."""
    total = 0.0
    rel_so_far = nonrel_so_far = unjudged_so_far = 0
    for position, grade in enumerate(ranking_grades):
        if grade is None:
            continue
        if grade < 0:
            unjudged_so_far += 1
            continue
        if grade < level:
            nonrel_so_far += 1
            continue
        rel_so_far += 1
        if position == 0:
            total += 1.0
        else:
            fj = float(position)
            total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
                (rel_so_far - 1 + nonrel_so_far + unjudged_so_far) / fj
            ) * (
                (rel_so_far - 1 + INFAP_EPSILON)
                / (rel_so_far - 1 + nonrel_so_far + 2 * INFAP_EPSILON)
            )
    return total / relevant if relevant else total


# --- graded measures ----------------------------------------------------------------------


def ndcg_full(ranking_grades: Grades, qrels: Iterable[int], scheme: str = "linear") -> float:
    """trec_eval's ``ndcg`` (no cutoff): the DCG of the whole ranking over the DCG of the
    whole ideal list of the qrels. trec_eval ignores ``-l`` here: every positive grade
    gains. Sums in rank order like ``ndcg.dcg`` and ``ndcg.idcg``."""
    grades = list(qrels)
    positive = sum(1 for grade in grades if grade > 0)
    if not positive:
        return 0.0
    ideal = idcg(grades, positive, scheme)
    gained = dcg(ranking_grades, len(ranking_grades), scheme) if ranking_grades else 0.0
    return gained / ideal if ideal > 0.0 else 0.0


def err(ranking_grades: Grades, k: int, max_grade: int = 4) -> float:
    """ERR@k (Chapelle et al. 2009) as gdeval computes it: the document at rank i stops the
    user with probability ``r = (2**g - 1) / 2**max_grade`` (g its grade, 0 when absent
    from the qrels or negative); ``ERR += r * decay / i`` and ``decay *= 1 - r``. gdeval
    fixes max_grade at 4 and refuses larger grades; so does this function for its
    max_grade. Grades are exact small integers: the same doubles as Perl's ``**``."""
    if max_grade < 1:
        raise ValueError(f"max_grade must be >= 1, got {max_grade!r}")
    scale = float(2**max_grade)
    total = 0.0
    decay = 1.0
    for position, grade in enumerate(ranking_grades[:k]):
        g = grade if grade is not None and grade > 0 else 0
        if g > max_grade:
            raise ValueError(f"grade {g} exceeds ERR's maximum grade {max_grade}")
        r = float(2**g - 1) / scale
        total += r * decay / (position + 1)
        decay *= 1.0 - r
    return total


def rbp(ranking_grades: Grades, p: float, level: int = 1, k: int | None = None) -> float:
    """RBP(p) (Moffat & Zobel 2008) on binary relevance: ``(1 - p) * sum p**(i-1)`` over the
    relevant documents at ranks i (within the top k). ``p**(i-1)`` is kept as a running
    product, like trec_eval's rbp; the sum is scaled by (1 - p) once at the end."""
    _check_persistence(p)
    total = 0.0
    weight = 1.0
    top = ranking_grades if k is None else ranking_grades[:k]
    for grade in top:
        if is_relevant(grade, level):
            total += weight
        weight *= p
    return (1.0 - p) * total


def rbp_residual(ranking_grades: Grades, p: float, k: int | None = None) -> float:
    """RBP's residual (Moffat & Zobel 2008): what RBP could still gain if every unjudged
    document of the top k (absent from the qrels or negative) were relevant, plus the whole
    tail beyond the evaluated depth d: ``(1 - p) * sum p**(i-1) over unjudged i + p**d``.
    RBP + residual bounds the score from above. (trec_eval's rbp_resid gives 0 instead when
    the ranking holds no unjudged document, leaving the tail out.)"""
    _check_persistence(p)
    unjudged = 0.0
    weight = 1.0
    top = ranking_grades if k is None else ranking_grades[:k]
    for grade in top:
        if grade is None or grade < 0:
            unjudged += weight
        weight *= p
    if k is not None:
        for _ in range(len(top), k):  # absent ranks below a short list are unjudged too
            unjudged += weight
            weight *= p
    return weight + (1.0 - p) * unjudged


def _check_persistence(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"RBP's persistence p must be in (0, 1), got {p!r}")


def judged(ranking_grades: Grades, k: int | None = None) -> float:
    """ir_measures' Judged@k: the share of the top k found in the qrels (any grade, negative
    ones included), over min(k, retrieved); without k, over all retrieved; 0.0 for an empty
    ranking. Unlike the platform's judged@k (``ndcg.judged_at``), a short list is not
    penalised and a negative grade counts as judged."""
    top = ranking_grades if k is None else ranking_grades[:k]
    if not top:
        return 0.0
    return sum(1 for grade in top if grade is not None) / len(top)


# --- how much of a ranking a measure reads -------------------------------------------------

# Families whose value with a cutoff k depends on the top k results alone (and, for
# RBPResid@k, on how many of them there are): a ranking cut anywhere below k gives the same.
_CUT_AT_K: frozenset[str] = frozenset(
    {"AP", "P", "R", "Success", "RR", "nDCG", "ERR", "RBP", "RBPResid", "Judged"}
)


def depth_read(measure: Measure) -> int | None:
    """How many of a ranking's first results the measure reads: its cutoff for the
    families in _CUT_AT_K, 0 for NumRel (the qrels alone), None for the whole ranking."""
    if measure.name == "NumRel":
        return 0
    if measure.cutoff is not None and measure.name in _CUT_AT_K:
        return measure.cutoff
    return None


# --- one measure, one query ---------------------------------------------------------------


def _cut(measure: Measure) -> int:
    if measure.cutoff is None:
        raise ValueError(f"{measure.name} needs a cutoff")
    return measure.cutoff


def measure_value(
    measure: Measure, ranking_grades: Grades, qrels: Sequence[int], scheme: str = "linear"
) -> float:
    """The value of one measure for one query's ranking (grades in effective order, see the
    module's note) and the query's qrels grades. An empty ranking gives trec_eval ``-c``'s
    values for a query the run did not answer: 0, except NumRel (and RBP's residual, 1:
    nothing of the ranking is known)."""
    name, level, k = measure.name, measure.rel, measure.cutoff
    relevant = num_rel(qrels, level)
    if name == "AP":
        return average_precision(ranking_grades, relevant, level, k)
    if name == "P":
        return precision(ranking_grades, _cut(measure), level)
    if name == "R":
        return recall(ranking_grades, _cut(measure), relevant, level)
    if name == "Success":
        return success(ranking_grades, _cut(measure), level)
    if name == "RR":
        return reciprocal_rank(ranking_grades, level, k)
    if name == "Rprec":
        return r_precision(ranking_grades, relevant, level)
    if name == "Bpref":
        return bpref(ranking_grades, qrels, level)
    if name == "infAP":
        return inferred_average_precision(ranking_grades, relevant, level)
    if name == "nDCG":
        if k is None:
            return ndcg_full(ranking_grades, qrels, scheme)
        return ndcg(dcg(ranking_grades, k, scheme), idcg(qrels, k, scheme))
    if name == "NumRel":
        return float(relevant)
    if name == "NumRet":
        return float(num_ret(ranking_grades))
    if name == "NumRelRet":
        return float(num_rel_ret(ranking_grades, level))
    if name == "SetP":
        return set_precision(ranking_grades, level)
    if name == "SetR":
        return set_recall(ranking_grades, relevant, level)
    if name == "SetF":
        return set_f(ranking_grades, relevant, level, measure.param("beta", 1.0))
    if name == "ERR":
        return err(ranking_grades, _cut(measure), int(measure.param("max_grade", 4)))
    if name == "RBP":
        return rbp(ranking_grades, measure.param("p", 0.8), level, k)
    if name == "RBPResid":
        return rbp_residual(ranking_grades, measure.param("p", 0.8), k)
    if name == "Judged":
        return judged(ranking_grades, k)
    raise ValueError(f"unknown measure {name!r}")


def query_values(
    measures: Iterable[Measure],
    ranking: Sequence[str],
    grades: Mapping[str, int],
    scheme: str = "linear",
) -> dict[Measure, float]:
    """Every measure for one query: ``ranking`` the docnos in effective order, ``grades``
    the query's qrels (docno -> grade)."""
    ranking_grades = [grades.get(docno) for docno in ranking]
    qrels = list(grades.values())
    return {measure: measure_value(measure, ranking_grades, qrels, scheme) for measure in measures}


# --- the `all` line -----------------------------------------------------------------------

# Counts trec_eval sums over the queries instead of averaging.
SUMMED: frozenset[str] = frozenset({"NumRel", "NumRet", "NumRelRet"})


def summary(
    measure: Measure,
    values: Mapping[QueryId, float],
    evaluated: Iterable[QueryId],
    qrels: Mapping[QueryId, Iterable[int]] | None = None,
) -> float:
    """trec_eval ``-c``'s ``all`` value of a measure over the evaluated queries (a query
    missing from ``values`` counts 0, as an unanswered one does).

    - Means: the values in trec_eval's query order added one by one, over the count
      (``ndcg.ordered_mean``).
    - NumRet, NumRelRet: the sum, not the mean.
    - NumRel: with ``-c`` trec_eval counts the qrels grades > 0 of every query, whatever
      ``-l`` says (m_num_rel.c); pass ``qrels`` for that. Without it, the sum of values.
    """
    queries = trec_order(set(evaluated))
    if not queries:
        raise ValueError("no evaluated queries: a mean over zero queries is undefined")
    if measure.name == "NumRel" and qrels is not None:
        return float(sum(1 for query in queries for grade in qrels.get(query, ()) if grade > 0))
    if measure.name in SUMMED:
        total = 0.0
        for query in queries:
            total += values.get(query, 0.0)
        return total
    return ordered_mean(values.get(query, 0.0) for query in queries)


# --- a whole run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunValues:
    """A run's values as trec_eval ``-q`` prints them: per evaluated query (qids in
    trec_eval's order), then the ``all`` value of each measure."""

    per_query: dict[str, dict[Measure, float]]
    means: dict[Measure, float]


def run_values(
    measures: Sequence[Measure],
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    *,
    complete: bool = True,
    scheme: str = "linear",
) -> RunValues:
    """Every measure of one run, per query and in the mean, as trec_eval 10 computes them.

    ``qrels`` maps each judged query to its grades, ``rankings`` each answered query to its
    docnos in effective order. A query is evaluated when it is judged; one the run did not
    answer counts with an empty ranking when ``complete`` (trec_eval ``-c``) and is left
    out otherwise. Queries answered but not judged are ignored. No evaluated query:
    ValueError (trec_eval: "No queries with both results and relevance info")."""
    evaluated = [qid for qid in trec_order(qrels) if complete or qid in rankings]
    per_query = {
        qid: query_values(measures, rankings.get(qid, ()), qrels[qid], scheme) for qid in evaluated
    }
    grades = {qid: list(qrels[qid].values()) for qid in evaluated} if complete else None
    means = {
        measure: summary(
            measure, {qid: per_query[qid][measure] for qid in evaluated}, evaluated, grades
        )
        for measure in measures
    }
    return RunValues(per_query, means)
