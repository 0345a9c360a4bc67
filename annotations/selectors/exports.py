"""Downloads as streamed text: runs and qrels (TREC), judgement history (CSV), stored scores
in trec_eval's layout, CSV and JSON (what `evaluate` prints)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, NamedTuple

from annotations.formats import trec
from annotations.formats.spreadsheet_cells import SpreadsheetWriter
from annotations.models import Collection, Judgement, JudgementHistory, Run
from annotations.selectors import evaluation, pending_count, run_rows, runs_of

CHUNK_LINES = 4096
SCORE_COLUMNS = [
    "run",
    "qid",
    "k",
    "ndcg",
    "dcg",
    "judged",
    "ndcg_condensed",
    "queries",
    "answered",
    "machine_grades",
]
HISTORY_COLUMNS = [
    "qid",
    "docno",
    "assessor",
    "old_grade",
    "new_grade",
    "source",
    "changed_by",
    "changed_at",
    "note",
]
_HISTORY_FIELDS = (
    "query__qid",
    "document__docno",
    "assessor__username",
    "old_grade",
    "new_grade",
    "source",
    "changed_by__username",
    "changed_at",
    "note",
)


def _chunks(rows: Iterable[Any], write: Any) -> Iterator[str]:
    """`write(rows, sink)` applied to CHUNK_LINES rows at a time, each piece as text."""
    iterator = iter(rows)
    while batch := list(islice(iterator, CHUNK_LINES)):
        sink = io.StringIO()
        write(batch, sink)
        yield sink.getvalue()


def run_text(*, run: Run) -> Iterator[str]:
    """The run as a TREC run file (`export_run`), a piece at a time."""
    return _chunks(run_rows(run=run), trec.write_run)


def assessor_qrels_text(*, collection: Collection, assessor_id: int) -> Iterator[str]:
    """One assessor's own grades as TREC qrels, by qid then docno (not the effective grades)."""
    rows = (
        Judgement.objects.filter(query__collection=collection, assessor_id=assessor_id)
        .order_by("query__qid", "document__docno")
        .values_list("query__qid", "document__docno", "grade")
        .iterator(chunk_size=20000)
    )
    return trec.qrels_text(rows)


def _csv_lines(header: list[str], rows: Iterable[Iterable[object]]) -> Iterator[str]:
    """The rows as CSV, a piece at a time; numbers are given as numbers, so that only text
    (ids, names, notes) is neutralised for spreadsheets (`SpreadsheetWriter`)."""
    buffer = io.StringIO()
    writer = SpreadsheetWriter(buffer, lineterminator="\n")
    writer.writerow(header)
    for count, row in enumerate(rows, start=1):
        writer.writerow(row)
        if count % CHUNK_LINES == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def history_csv(*, collection: Collection) -> Iterator[str]:
    """Every judgement change of the collection as CSV, oldest first; grades are numbers,
    ids, usernames and notes text a spreadsheet will not evaluate."""
    rows = (
        JudgementHistory.objects.filter(query__collection=collection)
        .order_by("changed_at", "id")
        .values_list(*_HISTORY_FIELDS)
        .iterator(chunk_size=20000)
    )
    return _csv_lines(
        HISTORY_COLUMNS,
        (
            (qid, docno, who, _blank(old), _blank(new), source, by or "", at.isoformat(), note)
            for qid, docno, who, old, new, source, by, at, note in rows
        ),
    )


def _blank(value: object) -> object:
    return "" if value is None else value


def scores_trec(*, run: Run, ks: list[int], per_query: bool) -> Iterator[str]:
    """trec_eval's layout ("%-22s\\t%s\\t%.4f"): per-query lines by qid, then the "all" lines."""
    means = {row.k: row for row in evaluation.stored_run_scores(runs=[run], ks=ks)}
    if per_query:
        collection = run.collection
        values = {
            (row.qid, row.k): row.ndcg
            for row in evaluation.stored_query_scores(collection=collection, runs=[run], ks=ks)
        }
        qids = {qid for qid, _ in values}
        if collection.missing_queries == "zero":
            # trec_eval -c -q: a judged query the run did not answer has its 0 line too
            qids.update(evaluation.evaluated_qids(collection=collection))
        for qid in sorted(qids):
            for k in ks:
                value = values.get((qid, k), 0.0)
                yield f"{'ndcg_cut_' + str(k):<22}\t{qid}\t{value:.4f}\n"
    for k in ks:
        if k in means:
            yield f"{'ndcg_cut_' + str(k):<22}\tall\t{means[k].ndcg:.4f}\n"


def scores_csv(*, collection: Collection, runs: list[Run], ks: list[int]) -> Iterator[str]:
    """Per-query and mean scores at full precision (repr), one row each; run names and qids
    are text a spreadsheet will not evaluate, the scores stay numbers. The last column is
    the rule for machine grades the scores count under, on every row (one plain table)."""
    rule = collection.machine_grades
    per_query = (
        [
            row.run,
            row.qid,
            row.k,
            row.ndcg,
            row.dcg,
            row.judged,
            row.ndcg_condensed,
            "",
            "true" if row.answered else "false",
            rule,
        ]
        for row in evaluation.stored_query_scores(collection=collection, runs=runs, ks=ks)
    )
    means = (
        [
            mean.run,
            "all",
            mean.k,
            mean.ndcg,
            "",
            mean.judged,
            mean.ndcg_condensed,
            mean.queries,
            "",
            rule,
        ]
        for mean in evaluation.stored_run_scores(runs=runs, ks=ks)
    )
    return _csv_lines(SCORE_COLUMNS, (*per_query, *means))


def scores_json(*, collection: Collection, runs: list[Run], ks: list[int]) -> str:
    """Every run, query and k at full precision, the means, judged@k, IDCGs, pending count,
    and the rule for machine grades they count under."""
    document: dict[str, Any] = {
        "collection": collection.slug,
        "gain": collection.gain,
        "machine_grades": collection.machine_grades,
        "cutoffs": ks,
        "pending": pending_count(collection=collection),
        "evaluated_queries": evaluation.evaluated_qids(collection=collection),
        "idcg": evaluation.stored_ideal_scores(collection=collection, ks=ks),
        "runs": {
            run.name: {
                "scored_at": run.scored_at and run.scored_at.isoformat(),
                "all": {},
                "queries": {},
            }
            for run in runs
        },
    }
    for mean in evaluation.stored_run_scores(runs=runs, ks=ks):
        document["runs"][mean.run]["all"][str(mean.k)] = {
            "ndcg": mean.ndcg,
            "ndcg_condensed": mean.ndcg_condensed,
            "judged": mean.judged,
            "queries": mean.queries,
        }
    for row in evaluation.stored_query_scores(collection=collection, runs=runs, ks=ks):
        document["runs"][row.run]["queries"].setdefault(row.qid, {})[str(row.k)] = {
            "ndcg": row.ndcg,
            "dcg": row.dcg,
            "judged": row.judged,
            "ndcg_condensed": row.ndcg_condensed,
            "answered": row.answered,
        }
    # json writes floats with repr: every digit of the stored double survives
    return json.dumps(document, indent=2)


class Download(NamedTuple):
    """A file to send: its pieces, its name and its content type."""

    pieces: Iterable[str | bytes]
    filename: str
    content_type: str


def scores_download(
    *, collection: Collection, layout: str, run: Run | None, ks: list[int], per_query: bool
) -> Download:
    """The exports page's and the API's stored scores in a layout: ``trec`` (one run, its
    ``run`` required by the form), ``csv`` or ``json`` (``run`` or every run)."""
    runs = [run] if run is not None else list(runs_of(collection=collection))
    name = f"{collection.slug}-scores"
    if layout == "trec" and run is not None:
        pieces = scores_trec(run=run, ks=ks, per_query=per_query)
        return Download(pieces, f"{name}.txt", "text/plain; charset=utf-8")
    if layout == "csv":
        pieces = scores_csv(collection=collection, runs=runs, ks=ks)
        return Download(pieces, f"{name}.csv", "text/csv; charset=utf-8")
    document = scores_json(collection=collection, runs=runs, ks=ks)
    return Download([document], f"{name}.json", "application/json")
