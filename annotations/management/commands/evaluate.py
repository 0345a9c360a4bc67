"""Print the stored scores of a collection's runs (trec_eval layout, JSON, CSV) or its
leaderboard as a report (CSV, booktabs LaTeX)."""

from typing import Any

from django.core.management.base import CommandError

from annotations import selectors
from annotations.formats.trec.evaluation import trec_eval_lines
from annotations.management.commands._base import PrintingCommand, collection_get
from annotations.metrics.conventions import CONVENTIONS, ConventionError, check_measures
from annotations.metrics.measure_names import MeasureNameError, parse_measures
from annotations.metrics.measures import Measure, run_values
from annotations.models import Collection, Run
from annotations.scores.reports import leaderboard_report
from annotations.scores.snapshots import leaderboard_complete
from annotations.selectors import conventions, evaluation, exports

# --format value -> report kind (scores.reports)
LEADERBOARD_FORMATS = {"leaderboard-csv": "csv", "leaderboard-latex": "latex"}


class Command(PrintingCommand):
    help = (
        "Print stored nDCG@k scores (never recomputed). trec: trec_eval's layout, one block "
        "per run (-q adds per-query lines); json: full precision for every run, query and k; csv; "
        "leaderboard-csv, leaderboard-latex: the leaderboard at --k (default 10 or the middle "
        "cutoff) with CIs, judged@k and significance letters, as the page's downloads. "
        "-m MEASURE (repeatable) computes other measures from the current qrels instead, in "
        "trec_eval's layout. --convention sklearn|ranx|ir_measures computes nDCG@k (and "
        "ir_measures' Judged@k) as that library would on the same qrels and run."
    )

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--run", default=None, help="only this run (default: every run)")
        parser.add_argument("-q", action="store_true", help="per-query lines (trec format)")
        parser.add_argument("--k", type=int, default=None, help="one cutoff (default: all)")
        parser.add_argument(
            "--format",
            choices=["trec", "json", "csv", *LEADERBOARD_FORMATS],
            default="trec",
            help="trec: trec_eval's layout, one block per run (each headed by its runid line "
            "when there are several); json or csv: every run, query and k at full precision; "
            "leaderboard-csv or leaderboard-latex: the leaderboard report at --k",
        )

        parser.add_argument(
            "-m",
            dest="measures",
            action="append",
            default=None,
            metavar="MEASURE",
            help="a measure to compute (repeatable): trec_eval's names (map, P.10 or P_10, "
            "P.5,10, ndcg_cut.10, recall.1000, Rprec, bpref, recip_rank, infAP, set_F, "
            "num_rel_ret...) or ir_measures' (AP(rel=2)@100, P@10, nDCG@10, RR, ERR@20, "
            "RBP(p=0.8), Judged@10...); trec format only",
        )
        parser.add_argument(
            "-l",
            dest="level",
            type=int,
            default=1,
            metavar="LEVEL",
            help="relevance level, as trec_eval's -l: a grade counts as relevant from LEVEL "
            "on (default 1), for the measures whose name sets none",
        )
        parser.add_argument(
            "--convention",
            choices=CONVENTIONS,
            default="trec_eval",
            help="trec_eval (default): the stored scores. sklearn, ranx or ir_measures: "
            "nDCG@k computed from the current qrels as that library computes it (ties, "
            "ideal list, gain, which queries count: docs/conventions.md), at every cutoff "
            "or --k, or the nDCG@k and Judged@k named by -m; trec format only",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        runs = list(Run.objects.filter(collection=collection).order_by("name"))
        if options["run"] is not None:
            runs = [run for run in runs if run.name == options["run"]]
            if not runs:
                raise CommandError(f"no run {options['run']!r} in {collection.slug}")
        if options["convention"] != "trec_eval":
            self._convention(collection, runs, options)
            return
        if options["measures"]:
            self._measures(collection, runs, options)
            return
        ks = collection.sorted_cutoffs
        if options["format"] in LEADERBOARD_FORMATS and options["k"] is None:
            options["k"] = selectors.cutoff_from(collection, None)
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
        if fmt in LEADERBOARD_FORMATS:
            if options["run"] is not None:
                raise CommandError(f"--format {fmt} shows every run: leave --run out")
            board = leaderboard_complete(collection=collection, k=ks[0])
            report = leaderboard_report(board=board, kind=LEADERBOARD_FORMATS[fmt])
            self.stdout.write(report.text, ending="")
        elif fmt == "trec":
            if options["run"] is not None:
                self._trec(runs[0], ks, per_query=options["q"])
            else:
                self._trec_all(runs, ks, per_query=options["q"])
        elif fmt == "json":
            self._json(collection, runs, ks, pending)
        else:
            self._csv(collection, runs, ks)

    def _measures(self, collection: Collection, runs: list[Run], options: Any) -> None:
        """-m: the measures computed from the collection's effective grades and the runs'
        stored rankings, one trec_eval call's output per run (-c when the collection counts
        unanswered queries as 0)."""
        if options["format"] != "trec" or options["k"] is not None:
            raise CommandError("-m prints trec_eval's layout: leave --format and --k out")
        if options["level"] < 1:
            raise CommandError(f"-l {options['level']}: the relevance level is >= 1")
        measures: list[Measure] = []
        for text in options["measures"]:
            try:
                measures.extend(parse_measures(text, options["level"]))
            except MeasureNameError as error:
                raise CommandError(str(error)) from None
        if not runs:
            raise CommandError("the collection has no run yet")
        qrels: dict[str, dict[str, int]] = {}
        for qid, docno, grade in selectors.qrels_rows(collection=collection):
            qrels.setdefault(qid, {})[docno] = grade
        if not qrels:
            raise CommandError(f"{collection.slug} has no judgement yet")
        for run in runs:
            rankings: dict[str, list[str]] = {}
            for qid, docno, *_ in selectors.run_rows(run=run):
                rankings.setdefault(qid, []).append(docno)
            complete = collection.missing_queries == "zero"
            if not complete and not set(rankings) & set(qrels):
                self.stderr.write(f"warning: run {run.name!r} answers no judged query")
                continue
            try:
                values = run_values(
                    measures, qrels, rankings, complete=complete, scheme=collection.gain
                )
            except ValueError as error:  # ERR refuses grades above its scale
                raise CommandError(f"run {run.name!r}: {error}") from None
            runid = run.name if len(runs) > 1 else None
            for line in trec_eval_lines(measures, values, per_query=options["q"], runid=runid):
                self.stdout.write(line, ending="")

    def _convention(self, collection: Collection, runs: list[Run], options: Any) -> None:
        """--convention: nDCG@k (or -m's nDCG@k and Judged@k) as another library computes
        it, from the collection's effective grades and the runs' stored results, in
        trec_eval's layout (one block per run, headed by its runid when there are several)."""
        convention = options["convention"]
        if options["format"] != "trec":
            raise CommandError(f"--convention {convention} prints trec_eval's layout")
        if options["measures"]:
            if options["k"] is not None:
                raise CommandError("-m names its cutoffs: leave --k out")
            try:
                measures = [m for text in options["measures"] for m in parse_measures(text, 1)]
            except MeasureNameError as error:
                raise CommandError(str(error)) from None
        else:
            ks = collection.sorted_cutoffs
            if options["k"] is not None:
                if options["k"] not in ks:
                    raise CommandError(f"--k {options['k']}: {collection.slug} is scored at k={ks}")
                ks = [options["k"]]
            measures = [Measure("nDCG", k) for k in ks]
        try:
            measures = check_measures(convention, measures)
        except ConventionError as error:
            raise CommandError(f"--convention {convention}: {error}") from None
        if not runs:
            raise CommandError("the collection has no run yet")
        qrels = conventions.collection_qrels(collection=collection)
        if not qrels:
            raise CommandError(f"{collection.slug} has no judgement yet")
        for run in runs:
            try:
                values = conventions.run_convention_values(
                    run=run, measures=measures, convention=convention, qrels=qrels
                )
            except ValueError:
                self.stderr.write(f"warning: run {run.name!r} answers no judged query")
                continue
            runid = run.name if len(runs) > 1 else None
            for line in trec_eval_lines(measures, values, per_query=options["q"], runid=runid):
                self.stdout.write(line, ending="")

    def _trec(self, run: Run, ks: list[int], *, per_query: bool) -> None:
        if run.scored_at is None and not evaluation.stored_run_scores(runs=[run], ks=ks):
            raise CommandError(f"run {run.name!r} has not been scored yet (pending)")
        for line in exports.scores_trec(run=run, ks=ks, per_query=per_query):
            self.stdout.write(line, ending="")

    def _trec_all(self, runs: list[Run], ks: list[int], *, per_query: bool) -> None:
        """Every scored run, one block each as one trec_eval call per run prints it: with
        -q the per-query lines, then the `runid` line, then the `all` lines."""
        if not runs:
            raise CommandError("the collection has no run yet")
        scored = {row.run for row in evaluation.stored_run_scores(runs=runs, ks=ks)}
        for run in runs:
            if run.name not in scored:
                self.stderr.write(f"warning: run {run.name!r} has not been scored yet (pending)")
                continue
            lines = list(exports.scores_trec(run=run, ks=ks, per_query=per_query))
            means = list(exports.scores_trec(run=run, ks=ks, per_query=False))  # a qid may be "all"
            for line in lines[: len(lines) - len(means)]:
                self.stdout.write(line, ending="")
            self.stdout.write(f"{'runid':<22}\tall\t{run.name}\n", ending="")
            for line in means:
                self.stdout.write(line, ending="")

    def _json(self, collection: Any, runs: list[Run], ks: list[int], pending: int) -> None:
        self.stdout.write(exports.scores_json(collection=collection, runs=runs, ks=ks))

    def _csv(self, collection: Any, runs: list[Run], ks: list[int]) -> None:
        for piece in exports.scores_csv(collection=collection, runs=runs, ks=ks):
            self.stdout.write(piece, ending="")
