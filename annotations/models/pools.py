"""The assessor workflow: pools of (query, document) pairs and assignments."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from annotations.models.collections import Collection, Document, Query
from annotations.models.runs import Run

# --- assessor workflow: pools, assignments ------------------------------------------------


class Pool(models.Model):
    """A judging pool: the union of the pooled runs' top `depth` documents per query.

    `runs` are the runs pooled so far and `queries` the queries it is limited to (empty: all
    of them). `overlap` is how many assessors each pair should be assigned to. An
    impact-ordered pool (`order`) holds the `budget` unjudged pairs of highest impact at
    cutoff `depth` (`annotations.metrics.impact`), at most `per_query` of any one query, and
    hands them out highest impact first.
    """

    DEPTH = "depth"
    IMPACT = "impact"
    ORDER_CHOICES = [(DEPTH, "depth-k pooling"), (IMPACT, "by impact")]

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=100)
    depth = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    overlap = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    order = models.CharField(max_length=10, choices=ORDER_CHOICES, default=DEPTH)
    budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Impact-ordered: how many pairs were asked for"
    )
    per_query = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Impact-ordered: the most pairs of one query the budget took",
    )
    runs = models.ManyToManyField(Run, related_name="pools", blank=True)
    queries = models.ManyToManyField(Query, related_name="pools", blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="pools_created",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="pool_name_unique"),
            models.CheckConstraint(condition=Q(depth__gte=1), name="pool_depth_positive"),
            models.CheckConstraint(condition=Q(overlap__gte=1), name="pool_overlap_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.collection.slug}/{self.name}"


class PoolEntry(models.Model):
    """One (query, document) pair of a pool; `best_position` is its best rank in any run.

    `impact` is the pair's impact when last refreshed (impact-ordered pools only; 0 once
    judged), the order in which assignments hand out and re-prioritise its items.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="entries")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="pool_entries")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pool_entries")
    best_position = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    impact = models.FloatField(null=True, blank=True)
    added = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool_id", "query_id", "document_id"]
        verbose_name_plural = "pool entries"
        constraints = [
            models.UniqueConstraint(fields=["pool", "query", "document"], name="pool_entry_unique"),
            models.CheckConstraint(
                condition=Q(best_position__gte=1), name="pool_entry_position_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pool_id}:{self.query_id}/{self.document_id}"


class Assignment(models.Model):
    """One assessor's share of a pool: an ordered list of pairs to judge."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="assignments")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="assignments_created",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool_id", "assessor_id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "assessor"], name="assignment_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.pool} for {self.assessor}"


class AssignmentItem(models.Model):
    """A pair in an assignment, at a 1-based `position`.

    Whether it is judged is read from the assessor's Judgement (the single source of truth);
    `skipped` marks "unsure / skip", with the assessor's optional `note`.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="items")
    entry = models.ForeignKey(PoolEntry, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    skipped = models.BooleanField(default=False)
    note = models.TextField(blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "entry"], name="assignment_item_entry_unique"
            ),
            models.UniqueConstraint(
                fields=["assignment", "position"], name="assignment_item_position_unique"
            ),
            models.CheckConstraint(
                condition=Q(position__gte=1), name="assignment_item_position_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id}#{self.position}"
