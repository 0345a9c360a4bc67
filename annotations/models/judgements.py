"""Judgements, their history and organisers' adjudications."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotations.models.collections import Document, Query


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
        ("api", "REST API"),
        ("import", "Qrels import"),
        ("admin", "Admin"),
        ("adjudication", "Adjudication"),
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

    class Meta:
        ordering = ["query_id", "document_id", "changed_at", "id"]
        verbose_name_plural = "judgement history"
        constraints = [
            models.CheckConstraint(
                condition=Q(old_grade__isnull=False) | Q(new_grade__isnull=False),
                name="history_has_a_grade",
            ),
        ]
        indexes = [models.Index(fields=["query", "document"], name="history_pair_idx")]

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
