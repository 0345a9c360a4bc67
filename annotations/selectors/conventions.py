"""A run's nDCG@k under another library's convention, computed from the current qrels."""

from collections.abc import Sequence

from annotations.metrics.conventions import convention_values
from annotations.metrics.measures import Measure, RunValues
from annotations.models import Collection, Run
from annotations.selectors.qrels import qrels_rows, run_rows


def collection_qrels(*, collection: Collection) -> dict[str, dict[str, int]]:
    """Every judged query's effective grades (qid -> docno -> grade)."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, docno, grade in qrels_rows(collection=collection):
        qrels.setdefault(qid, {})[docno] = grade
    return qrels


def run_results(*, run: Run) -> dict[str, list[tuple[str, float]]]:
    """A run's (docno, score) pairs per query, in the order its download lists them."""
    results: dict[str, list[tuple[str, float]]] = {}
    for qid, docno, _rank, score, _tag in run_rows(run=run):
        results.setdefault(qid, []).append((docno, score))
    return results


def run_convention_values(
    *,
    run: Run,
    measures: Sequence[Measure],
    convention: str,
    qrels: dict[str, dict[str, int]] | None = None,
    results: dict[str, list[tuple[str, float]]] | None = None,
) -> RunValues:
    """One run's measures under ``convention`` (``metrics.conventions``), per evaluated query
    and in the mean; ``qrels`` (``collection_qrels``) may be read once for several runs, and
    ``results`` (``run_results``) by a caller that uses them too. Reads only: nothing is
    stored. ValueError when no query is evaluated."""
    collection = run.collection
    if qrels is None:
        qrels = collection_qrels(collection=collection)
    if results is None:
        results = run_results(run=run)
    return convention_values(
        convention,
        measures,
        qrels,
        results,
        complete=collection.missing_queries == "zero",
        scheme=collection.gain,
    )
