"""Stored impact of judging: per (query, document) impact and per pair of runs state, by stamp."""

from __future__ import annotations

from django.db import models

from annotations.models.collections import Collection, Document, Query


class ImpactSnapshot(models.Model):
    """The impact model's result for a collection at cutoff k, as of one scores stamp.

    Derived data, replaced in place by `services.impact_refresh`: `pairs` holds one
    ``[run a id, run b id, lower, upper, weight]`` per pair of runs (``a < b``; bounds of
    mean_a - mean_b, see `annotations.metrics.impact.model`), `adjacent` the leaderboard's adjacent
    pairs as of `leaderboard_stamp` (upper and lower run ids, whether judging can still flip
    them, how many impact-ordered pairs are queued for them).
    """

    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="impact_snapshots", db_index=False
    )
    k = models.PositiveIntegerField()
    stamp = models.CharField(max_length=32, help_text="The scores stamp it was computed at")
    pairs = models.JSONField(default=list)
    adjacent = models.JSONField(default=list)
    leaderboard_stamp = models.CharField(max_length=32, blank=True)
    computed_at = models.DateTimeField()
    seconds = models.FloatField(default=0.0)

    class Meta:
        ordering = ["collection_id", "k"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "k"], name="impact_snapshot_unique")
        ]

    def __str__(self) -> str:
        return f"impact@{self.k} of collection {self.collection_id} at {self.stamp}"


class DocumentImpact(models.Model):
    """The impact of judging one unjudged (query, document) of some run's top k."""

    snapshot = models.ForeignKey(
        ImpactSnapshot, on_delete=models.CASCADE, related_name="documents", db_index=False
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    impact = models.FloatField()

    class Meta:
        ordering = ["snapshot_id", "-impact", "query_id", "document_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "query", "document"], name="document_impact_unique"
            )
        ]

    def __str__(self) -> str:
        return f"impact {self.impact} of {self.query_id}/{self.document_id}"
