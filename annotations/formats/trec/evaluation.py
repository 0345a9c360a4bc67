"""trec_eval's output layout for any measure: ``%-22s\\t%s\\t%6.4f`` lines, counts as integers."""

from collections.abc import Iterable, Iterator

from annotations.metrics.measure_names import trec_name
from annotations.metrics.measures import Measure, RunValues

__all__ = ["measure_order", "trec_eval_lines"]

# The order trec_eval prints its measures in (its table in measures.c), whatever the order
# of -m; within a family, cutoffs ascending. Measures trec_eval lacks come last, as given.
_TREC_TABLE = (
    "NumRet",
    "NumRel",
    "NumRelRet",
    "AP",  # map
    "Rprec",
    "Bpref",
    "RR",
    "P",
    "R",
    "infAP",
    "nDCG",  # ndcg, then ndcg_cut
    "AP@",  # map_cut
    "Success",
    "SetP",
    "SetR",
    "SetF",
)
_COUNTS = frozenset({"NumRet", "NumRel", "NumRelRet"})


def _slot(measure: Measure) -> str:
    if measure.name == "AP" and measure.cutoff is not None:
        return "AP@"
    if measure.name == "RR" and measure.cutoff is not None:
        return ""  # no trec_eval measure: among the others
    return measure.name if measure.name in _TREC_TABLE else ""


def measure_order(measures: Iterable[Measure]) -> list[Measure]:
    """The measures without repeats in trec_eval's printing order."""
    unique = list(dict.fromkeys(measures))
    position = {name: index for index, name in enumerate(_TREC_TABLE)}

    def key(item: tuple[int, Measure]) -> tuple[int, int, int]:
        given, measure = item
        slot = _slot(measure)
        if not slot:
            return (len(_TREC_TABLE), given, 0)
        return (position[slot], measure.cutoff or 0, given)

    return [measure for _, measure in sorted(enumerate(unique), key=key)]


def _line(measure: Measure, qid: str, value: float) -> str:
    if measure.name in _COUNTS:
        return f"{trec_name(measure):<22}\t{qid}\t{int(value)}\n"
    return f"{trec_name(measure):<22}\t{qid}\t{value:6.4f}\n"


def trec_eval_lines(
    measures: Iterable[Measure], values: RunValues, *, per_query: bool, runid: str | None = None
) -> Iterator[str]:
    """What ``trec_eval [-q] -m ...`` prints for one run: with ``per_query`` every measure of
    each evaluated query, then the optional ``runid`` line, then the ``all`` lines."""
    ordered = measure_order(measures)
    if per_query:
        for qid, query_values in values.per_query.items():
            for measure in ordered:
                yield _line(measure, qid, query_values[measure])
    if runid is not None:
        yield f"{'runid':<22}\tall\t{runid}\n"
    for measure in ordered:
        yield _line(measure, "all", values.means[measure])
