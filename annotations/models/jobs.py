"""Import jobs: one uploaded file imported into a collection, its state and progress."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import models, transaction


class ImportJob(models.Model):
    """One uploaded file and its import: queued, running, then done (with a summary) or
    failed (with the parser's `file:line: field: problem (nothing was imported)` message).

    A job is marked done in the same transaction that imports its file, so "done" and the
    imported rows are committed together or not at all. A job failed other than by its file
    (its worker stopped, the broker was down) keeps its upload: Retry queues it again,
    Dismiss deletes the upload and leaves the job dismissed.
    """

    TOPICS, DOCUMENTS, QRELS, RUN = "topics", "documents", "qrels", "run"
    KIND_CHOICES = [
        (TOPICS, "topics"),
        (DOCUMENTS, "documents"),
        (QRELS, "qrels"),
        (RUN, "run"),
    ]
    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    DISMISSED = "dismissed"
    STATE_CHOICES = [
        (QUEUED, "queued"),
        (RUNNING, "running"),
        (DONE, "done"),
        (FAILED, "failed"),
        (DISMISSED, "dismissed"),
    ]
    ACTIVE = (QUEUED, RUNNING)

    collection = models.ForeignKey(
        "annotations.Collection", on_delete=models.CASCADE, related_name="import_jobs"
    )
    kind = models.CharField(max_length=10, choices=KIND_CHOICES)
    # Names the stored upload and the job's progress in the coordination cache.
    token = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    file_name = models.CharField(max_length=255)
    upload_path = models.CharField(
        max_length=1000, blank=True, help_text="The stored upload; emptied when it is deleted"
    )
    size = models.BigIntegerField(help_text="Bytes")
    state = models.CharField(max_length=10, choices=STATE_CHOICES, default=QUEUED)
    bytes_done = models.BigIntegerField(default=0)
    lines_done = models.BigIntegerField(default=0)
    summary = models.TextField(blank=True)
    error = models.TextField(blank=True)
    replace = models.BooleanField(default=False, help_text="Runs: replace a run of that name")
    split_tags = models.BooleanField(
        default=False, help_text="Runs: one run per tag of the file, in the file's order"
    )
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Qrels: the account the judgements are recorded as (empty: the import account)",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="import_jobs",
    )
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    heartbeat = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the process running the job"
    )
    retries = models.PositiveIntegerField(default=0, help_text="Times it was queued again")
    retried = models.DateTimeField(
        null=True, blank=True, help_text="When it was last queued again (Retry)"
    )

    class Meta:
        ordering = ["collection_id", "-created", "-id"]
        indexes = [models.Index(fields=["state", "heartbeat"], name="import_job_state")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=["queued", "running", "done", "failed", "dismissed"]),
                name="import_job_state_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["topics", "documents", "qrels", "run"]),
                name="import_job_kind_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(size__gte=0, bytes_done__gte=0, lines_done__gte=0),
                name="import_job_counts_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.file_name} ({self.state})"

    @property
    def active(self) -> bool:
        return self.state in self.ACTIVE

    @property
    def retryable(self) -> bool:
        """Failed with its upload kept: Retry (and Dismiss) are offered."""
        return self.state == self.FAILED and bool(self.upload_path)

    @property
    def percent(self) -> int:
        if self.state == self.DONE:
            return 100
        if not self.size:
            return 0
        return min(100, self.bytes_done * 100 // self.size)


def _upload_delete_with_job(sender: type[ImportJob], instance: ImportJob, **kwargs: Any) -> None:
    """A job deleted (in the admin, or with its collection) takes its kept upload along."""
    if instance.upload_path:
        path = Path(instance.upload_path)
        transaction.on_commit(lambda: path.unlink(missing_ok=True))


models.signals.post_delete.connect(
    _upload_delete_with_job, sender=ImportJob, dispatch_uid="import-job-upload-delete"
)
