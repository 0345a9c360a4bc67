"""Stored scores: ideal DCGs, per-query scores, which runs are scored, leaderboards."""

from __future__ import annotations

from django.db import models

from annotations.formats import score_bytes
from annotations.models.collections import Query
from annotations.models.runs import Run

# Foreign keys whose column leads a composite index or constraint below carry no index of
# their own (db_index=False): every extra index is maintained on each score write.


class IdealScore(models.Model):
    """A query's ideal DCG at k, from every judged document of the query."""

    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="ideal_scores", db_index=False
    )
    k = models.PositiveIntegerField()
    idcg = models.FloatField()

    class Meta:
        ordering = ["query_id", "k"]
        constraints = [models.UniqueConstraint(fields=["query", "k"], name="ideal_unique")]

    def __str__(self) -> str:
        return f"IDCG@{self.k} of {self.query_id} = {self.idcg}"


class QueryScore(models.Model):
    """A run's scores for one evaluated query at every cutoff of its collection, packed.

    See `annotations.formats.score_bytes`: `cutoffs` is the layout; each measure is one float64 per
    cutoff. `at(k)` unpacks one cutoff.
    """

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="query_scores", db_index=False
    )
    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="scores", db_index=False
    )
    cutoffs = models.TextField(help_text="The cutoffs k of the packed values, e.g. 5,10,20")
    ndcg = models.BinaryField(help_text="nDCG@k per cutoff (float64, little-endian)")
    dcg = models.BinaryField(help_text="DCG@k per cutoff (float64, little-endian)")
    judged = models.BinaryField(help_text="judged@k per cutoff (float64, little-endian)")
    ndcg_condensed = models.BinaryField(help_text="nDCG'@k per cutoff (float64, little-endian)")
    # The collection's other measures (see `score_bytes`); the database's defaults keep a
    # writer of nDCG alone (and a collection without other measures) as it was.
    measures = models.TextField(
        default="",
        db_default="",
        blank=True,
        help_text="The layout key of the measure set `measure_values` is in "
        "(`score_bytes.measures_layout` of the collection's measures)",
    )
    measure_values = models.BinaryField(
        default=b"",
        db_default=b"",
        blank=True,
        help_text="One value per measure of the set (float64, little-endian)",
    )

    class Meta:
        ordering = ["run_id", "query_id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "run"], name="query_score_unique"),
        ]
        indexes = [models.Index(fields=["run"], name="query_score_run_idx")]

    def __str__(self) -> str:
        return f"scores of run {self.run_id} on query {self.query_id} at k={self.cutoffs}"

    def at(self, k: int) -> score_bytes.QueryValues:
        """The scores at cutoff k; KeyError if the row has no value at k."""
        return self.per_cutoff()[k]

    def per_cutoff(self) -> dict[int, score_bytes.QueryValues]:
        """k -> the scores at k."""
        return score_bytes.query_values(
            self.cutoffs, self.ndcg, self.dcg, self.judged, self.ndcg_condensed
        )


class RankingQrels(models.Model):
    """Where a run's ranking of a query holds the query's qrels documents (packed by
    `annotations.formats.ranking_bytes.pack_qrels_ranks`): all that the measures without a
    cutoff (AP, RR, R-prec, bpref, infAP, nDCG) read of a ranking, kept so that a judgement
    does not read the query's whole rankings again.

    Derived data, used only while it describes what is current: the ranking it was found in
    (`ranking_id`: a re-imported run has new rankings) and the query's set of qrels
    documents (`digest`, `ranking_bytes.qrels_digest`: a document entering or leaving the
    qrels changes it; a grade change does not). Otherwise the ranks are found again in the
    whole ranking and the row rewritten.
    """

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="ranking_qrels", db_index=False
    )
    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="ranking_qrels", db_index=False
    )
    ranking_id = models.BigIntegerField(help_text="The ranking the ranks were found in")
    digest = models.BinaryField(help_text="The set of qrels documents they were found for")
    ranks = models.BinaryField(help_text="Where the ranking holds those documents, packed")

    class Meta:
        ordering = ["query_id", "run_id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "run"], name="ranking_qrels_unique"),
        ]
        verbose_name_plural = "ranking qrels"

    def __str__(self) -> str:
        return f"qrels ranks of run {self.run_id} on query {self.query_id}"


class RunScore(models.Model):
    """That a run is scored in a layout of cutoffs, and when its scores last moved.

    The means are not stored: every reader computes them from the run's stored per-query
    values in trec_eval's order (`annotations.selectors.stored_scores.run_means_at`), so they
    equal trec_eval's `all` line bit for bit. A row in the collection's current layout says
    the run's per-query values are all in that layout (a run whose cutoffs changed is
    pending its rescore), and `measures` likewise for the collection's other measures;
    `updated` is when one of them last moved.
    """

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="run_scores", db_index=False
    )
    cutoffs = models.TextField(help_text="The cutoffs k of the run's scores, e.g. 5,10,20")
    measures = models.TextField(
        default="",
        db_default="",
        blank=True,
        help_text="The layout key of the measure set all the run's per-query rows hold",
    )
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run_id"]
        constraints = [models.UniqueConstraint(fields=["run"], name="run_score_unique")]

    def __str__(self) -> str:
        return f"scores of run {self.run_id} at k={self.cutoffs}"


class LeaderboardSnapshot(models.Model):
    """A collection's leaderboard at one k as last computed: what pages and the API read.

    Derived data: computed from the stored scores (see `annotations.scores.snapshots`) once per
    scores stamp and replaced in place; deleting it only costs one recomputation.
    """

    collection = models.ForeignKey(
        "annotations.Collection",
        on_delete=models.CASCADE,
        related_name="leaderboard_snapshots",
        db_index=False,
    )
    k = models.PositiveIntegerField()
    stamp = models.CharField(max_length=32, help_text="The scores stamp it was computed at")
    rows = models.JSONField(default=list, help_text="One object per scored run, best first")
    unscored = models.JSONField(
        default=list, help_text="[id, name, owner] of runs without stored means"
    )
    computed_at = models.DateTimeField()
    seconds = models.FloatField(default=0.0, help_text="How long the computation took")
    # The all-pairs significance (randomised Tukey HSD) is a second, later pass over the
    # per-query matrix the first pass stores: it costs seconds, the rows milliseconds.
    query_ids = models.JSONField(
        default=list, help_text="The query ids of the per-query matrix's columns"
    )
    per_query = models.BinaryField(
        default=b"", help_text="nDCG@k per run (rows, rank order) and query (columns), float64"
    )
    significance = models.JSONField(
        default=dict, help_text="The HSD pass: its stamp, settings and letters per run"
    )
    pairs = models.BinaryField(
        default=b"", help_text="HSD-adjusted p-values, runs x runs in the pass's order, float64"
    )

    class Meta:
        ordering = ["collection_id", "k"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "k"], name="leaderboard_snapshot_unique")
        ]

    def __str__(self) -> str:
        return f"leaderboard@{self.k} of collection {self.collection_id} at {self.stamp}"


class MeasureSignificance(models.Model):
    """The all-pairs significance (randomised Tukey HSD) of one kept measure, as last computed.

    Derived data, like a snapshot's significance pass but for a measure beside nDCG@k: a
    worker reads the measure's stored per-query values at a scores stamp, ranks the runs by
    their `all` value, tests every pair over the per-query matrix and stores the result here
    (`annotations.scores.measure_significance`); pages and the API read it. Replaced in
    place at every stamp; deleting it only costs one pass.
    """

    collection = models.ForeignKey(
        "annotations.Collection",
        on_delete=models.CASCADE,
        related_name="measure_significances",
        db_index=False,
    )
    measure = models.CharField(max_length=200, help_text="The measure, in ir_measures' syntax")
    stamp = models.CharField(max_length=32, help_text="The scores stamp it was computed at")
    rows = models.JSONField(
        default=list, help_text="[run id, name, mean] of the runs tested, best first"
    )
    query_ids = models.JSONField(
        default=list, help_text="The query ids of the per-query matrix's columns"
    )
    per_query = models.BinaryField(
        default=b"", help_text="The measure per run (rows, `rows` order) and query, float64"
    )
    significance = models.JSONField(
        default=dict, help_text="The HSD pass: its stamp, settings and letters per run"
    )
    pairs = models.BinaryField(
        default=b"", help_text="HSD-adjusted p-values, runs x runs in `rows` order, float64"
    )
    computed_at = models.DateTimeField()

    class Meta:
        ordering = ["collection_id", "measure"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "measure"], name="measure_significance_unique"
            )
        ]

    def __str__(self) -> str:
        return f"significance of {self.measure} in collection {self.collection_id} at {self.stamp}"


class QueryBound(models.Model):
    """Every scored run's top-grade nDCG@k on one query, cached with what it depends on.

    `key` digests the query's judgements version, the collection's gain, aggregation and top
    grade and the scored runs (id and last change); a bound whose key differs is recomputed.
    """

    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="bounds", db_index=False
    )
    k = models.PositiveIntegerField()
    key = models.CharField(max_length=32)
    values = models.JSONField(default=dict, help_text="run id -> nDCG@k (unjudged at top grade)")

    class Meta:
        ordering = ["query_id", "k"]
        constraints = [models.UniqueConstraint(fields=["query", "k"], name="query_bound_unique")]

    def __str__(self) -> str:
        return f"bounds@{self.k} of query {self.query_id}"
