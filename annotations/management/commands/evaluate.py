"""Print the stored scores of a collection's runs: trec_eval layout, JSON or CSV."""

import csv
import json
from typing import Any

from django.core.management.base import CommandError

from annotations import selectors
from annotations.management.commands._base import PrintingCommand, collection_get
from annotations.models import Run
from annotations.selectors import evaluation


class Command(PrintingCommand):
    help = (
        "Print stored nDCG@k scores (never recomputed). trec: trec_eval's layout for one run "
        "(-q adds per-query lines); json: full precision for every run, query and k; csv."
    )

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--run", default=None, help="only this run (required for trec)")
        parser.add_argument("-q", action="store_true", help="per-query lines (trec format)")
        parser.add_argument("--k", type=int, default=None, help="one cutoff (default: all)")
        parser.add_argument("--format", choices=["trec", "json", "csv"], default="trec")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        runs = list(Run.objects.filter(collection=collection).order_by("name"))
        if options["run"] is not None:
            runs = [run for run in runs if run.name == options["run"]]
            if not runs:
                raise CommandError(f"no run {options['run']!r} in {collection.slug}")
        ks = collection.sorted_cutoffs
        if options["k"] is not None:
            if options["k"] not in ks:
                raise CommandError(f"--k {options['k']}: {collection.slug} is scored at k={ks}")
            ks = [options["k"]]
        pending = selectors.pending_count(collection=collection)
        if pending:
            self.stderr.write(
                f"warning: scores pending for {pending} queries or runs; "
                f"these are the last stored values (see `rescore {collection.slug} --stale`)"
            )
        fmt = options["format"]
        if fmt == "trec":
            if len(runs) != 1:
                raise CommandError("the trec format shows one run: name it with --run")
            self._trec(runs[0], ks, per_query=options["q"])
        elif fmt == "json":
            self._json(collection, runs, ks, pending)
        else:
            self._csv(collection, runs, ks)

    def _trec(self, run: Run, ks: list[int], *, per_query: bool) -> None:
        # trec_eval prints "%-22s\t%s\t%.4f": per-query lines by qid, then the "all" line.
        means = {row.k: row for row in evaluation.stored_run_scores(runs=[run], ks=ks)}
        if run.scored_at is None and not means:
            raise CommandError(f"run {run.name!r} has not been scored yet (pending)")
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
                    self.stdout.write(f"{'ndcg_cut_' + str(k):<22}\t{qid}\t{value:.4f}")
        for k in ks:
            if k in means:
                self.stdout.write(f"{'ndcg_cut_' + str(k):<22}\tall\t{means[k].ndcg:.4f}")

    def _json(self, collection: Any, runs: list[Run], ks: list[int], pending: int) -> None:
        per_query = evaluation.stored_query_scores(collection=collection, runs=runs, ks=ks)
        means = evaluation.stored_run_scores(runs=runs, ks=ks)
        document: dict[str, Any] = {
            "collection": collection.slug,
            "gain": collection.gain,
            "cutoffs": ks,
            "pending": pending,
            "evaluated_queries": evaluation.evaluated_qids(collection=collection),
            "idcg": evaluation.stored_ideal_scores(collection=collection, ks=ks),
            "runs": {},
        }
        for run in runs:
            document["runs"][run.name] = {
                "scored_at": run.scored_at and run.scored_at.isoformat(),
                "all": {},
                "queries": {},
            }
        for mean in means:
            document["runs"][mean.run]["all"][str(mean.k)] = {
                "ndcg": mean.ndcg,
                "ndcg_condensed": mean.ndcg_condensed,
                "judged": mean.judged,
                "queries": mean.queries,
            }
        for row in per_query:
            document["runs"][row.run]["queries"].setdefault(row.qid, {})[str(row.k)] = {
                "ndcg": row.ndcg,
                "dcg": row.dcg,
                "judged": row.judged,
                "ndcg_condensed": row.ndcg_condensed,
            }
        # json writes floats with repr: every digit of the stored double survives
        self.stdout.write(json.dumps(document, indent=2))

    def _csv(self, collection: Any, runs: list[Run], ks: list[int]) -> None:
        writer = csv.writer(self.stdout, lineterminator="\n")
        writer.writerow(["run", "qid", "k", "ndcg", "dcg", "judged", "ndcg_condensed", "queries"])
        for row in evaluation.stored_query_scores(collection=collection, runs=runs, ks=ks):
            writer.writerow(
                [
                    row.run,
                    row.qid,
                    row.k,
                    repr(row.ndcg),
                    repr(row.dcg),
                    repr(row.judged),
                    repr(row.ndcg_condensed),
                    "",
                ]
            )
        for mean in evaluation.stored_run_scores(runs=runs, ks=ks):
            writer.writerow(
                [
                    mean.run,
                    "all",
                    mean.k,
                    repr(mean.ndcg),
                    "",
                    repr(mean.judged),
                    repr(mean.ndcg_condensed),
                    mean.queries,
                ]
            )
