"""Judgements, their history and organisers' adjudications."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotations.models.collections import MACHINE_GRADE_CHOICES, Document, Query


class Judgement(models.Model):
    """One assessor's grade for a (query, document) pair."""

    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="judgements", db_index=False
    )
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="judgements")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgements"
    )
    grade = models.SmallIntegerField()
    note = models.TextField(blank=True)
    stale = models.BooleanField(
        default=False,
        db_default=False,
        help_text="The document's text changed after this grade was given (see history)",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query_id", "document_id", "assessor_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["query", "document", "assessor"], name="judgement_unique_per_assessor"
            ),
            models.CheckConstraint(
                condition=Q(grade__gte=-9) & Q(grade__lte=99), name="judgement_grade_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id} by {self.assessor_id}: {self.grade}"


class JudgementHistory(models.Model):
    """Append-only record of every judgement change; rows are never updated or deleted."""

    SOURCE_CHOICES = [
        ("form", "Assessor form"),
        ("undo", "Assessor undo (the form's last grade taken back)"),
        ("api", "REST API"),
        ("import", "Qrels import"),
        ("admin", "Admin"),
        ("adjudication", "Adjudication"),
        ("machine", "Machine judge"),
        ("stale", "Document changed: judgement marked stale"),
        ("other", "Other (direct database change)"),
    ]

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judgement_history")
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="judgement_history"
    )
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgement_history"
    )
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="judgement_changes",
    )
    old_grade = models.SmallIntegerField(null=True, blank=True, help_text="Empty when created")
    new_grade = models.SmallIntegerField(null=True, blank=True, help_text="Empty when deleted")
    note = models.TextField(blank=True)
    source = models.CharField(max_length=12, choices=SOURCE_CHOICES)
    changed_at = models.DateTimeField(auto_now_add=True)
    dwell_ms = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="How long the grading page showed the pair (visible) before this grade, "
        "in milliseconds, at most DWELL_CAP_MS; empty for other changes",
    )

    # A pair left on screen longer than this counts as this long (a tab left open).
    DWELL_CAP_MS = 30 * 60 * 1000

    class Meta:
        ordering = ["query_id", "document_id", "changed_at", "id"]
        verbose_name_plural = "judgement history"
        constraints = [
            models.CheckConstraint(
                condition=Q(old_grade__isnull=False) | Q(new_grade__isnull=False),
                name="history_has_a_grade",
            ),
        ]
        indexes = [
            models.Index(fields=["query", "document"], name="history_pair_idx"),
            # The dashboard's per-assessor pace reads each assessor's latest grades.
            models.Index(fields=["assessor", "changed_at"], name="history_assessor_time_idx"),
            # ... and today's changes hour by hour.
            models.Index(fields=["changed_at"], name="history_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}: {self.old_grade} -> {self.new_grade}"


class Adjudication(models.Model):
    """An organiser's final grade for a (query, document); it overrides the assessors' grades."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="adjudications")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="adjudications")
    grade = models.SmallIntegerField()
    organiser = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications"
    )
    note = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query_id", "document_id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="adjudication_unique"),
            models.CheckConstraint(
                condition=Q(grade__gte=-9) & Q(grade__lte=99), name="adjudication_grade_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}: {self.grade} (adjudicated)"


class QrelsVersion(models.Model):
    """A named mark in a collection's judgement history: the qrels as they stood then.

    Nothing is copied: the version's effective qrels are the judgement history up to
    `history_id` replayed (see `annotations.selectors.versions`), combined with the rules the
    collection had when it was tagged (or, for machine grades, the rule the tag named), so
    they can be exported and scored at any later date.
    """

    collection = models.ForeignKey(
        "annotations.Collection", on_delete=models.CASCADE, related_name="qrels_versions"
    )
    name = models.SlugField(max_length=100, help_text="Letters, digits, - and _")
    note = models.TextField(blank=True)
    history_id = models.BigIntegerField(
        help_text="The last judgement history row included (0: none)"
    )
    aggregation = models.CharField(max_length=10, help_text="The rule when tagged")
    gain = models.CharField(max_length=12, help_text="The gain when tagged")
    missing_queries = models.CharField(max_length=8, help_text="The rule when tagged")
    machine_grades = models.CharField(
        max_length=8,
        choices=MACHINE_GRADE_CHOICES,
        default="assessor",
        help_text="How machine judges' grades count in this version (the collection's rule "
        "when tagged, unless the tag named another)",
    )
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="qrels_versions",
    )

    class Meta:
        ordering = ["collection_id", "created", "id"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="qrels_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.collection_id}@{self.name}"
