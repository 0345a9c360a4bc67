"""Runs: a system's ranked documents per query, one packed row per (run, query)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Substr

from annotations.formats import ranking_bytes
from annotations.models.collections import ID_MAX_LENGTH, Collection, Query


class Run(models.Model):
    """A system's submission: a ranked list of documents per query."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=ID_MAX_LENGTH)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    # A run fetched from a search system belongs to its history (ordered by `created`, the
    # time the fetch stored it); a run kept after its system was deleted is a plain run.
    system = models.ForeignKey(
        "annotations.SearchSystem",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
        help_text="The search system the run was fetched from",
    )

    class Meta:
        ordering = ["collection_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="run_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.collection.slug}/{self.name}"


# Document ids of each ranking copied into its row (see Ranking.head).
HEAD_IDS = 128


class Ranking(models.Model):
    """A run's ranked documents for one query: the run's results, one row per (run, query).

    The documents are stored in effective order (trec_eval's: score descending, ties by
    docno descending), fixed at import, as packed arrays
    (see `annotations.formats.ranking_bytes`): 64-bit
    document ids, the submitted scores as doubles (empty when the run gave none) and the
    submitted ranks. A TREC-scale collection has 27 million results but only 27 thousand
    rankings, so imports write a few hundred rows per run and scoring reads one row per run
    of a query instead of one per result.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rankings", db_index=False)
    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="rankings", db_index=False
    )
    size = models.PositiveIntegerField(help_text="Number of documents retrieved")
    documents = models.BinaryField(help_text="Document ids, int64 little-endian, in order")
    scores = models.BinaryField(help_text="Scores, float64 little-endian; empty: none given")
    ranks = models.BinaryField(help_text="Submitted ranks, int32 little-endian")
    # The top of the ranking, kept by the database itself inside the row: every judgement
    # reads the top of one query's rankings of every run, and reading it here avoids a
    # separate TOAST lookup per ranking for the out-of-line `documents`.
    head = models.GeneratedField(
        expression=Substr("documents", 1, HEAD_IDS * 8),
        output_field=models.BinaryField(),
        db_persist=True,
        help_text=f"The first {HEAD_IDS} document ids of `documents`",
    )

    class Meta:
        ordering = ["run_id", "query_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "query"], name="ranking_unique"),
            models.CheckConstraint(condition=Q(size__gte=1), name="ranking_not_empty"),
        ]
        # The scoring read: one query's rankings across every run.
        indexes = [models.Index(fields=["query", "run"], name="ranking_query_idx")]

    def __str__(self) -> str:
        return f"ranking of run {self.run_id} for query {self.query_id} ({self.size} documents)"

    def document_ids(self, depth: int | None = None) -> list[int]:
        return ranking_bytes.unpack_ids(self.documents, depth)

    def score_values(self) -> list[float] | None:
        return ranking_bytes.unpack_scores(self.scores) if self.scores else None

    def rank_values(self) -> list[int]:
        return ranking_bytes.unpack_ranks(self.ranks)
