"""Import jobs: one uploaded file (or one ir_datasets dataset) imported into a collection,
or a run fetched from a search system, its state and progress."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from annotations.models.collections import ID_MAX_LENGTH


class ImportJob(models.Model):
    """One uploaded file and its import: queued, running, then done (with a summary) or
    failed (with the parser's `file:line: field: problem (nothing was imported)` message).

    A job is marked done in the same transaction that imports its file, so "done" and the
    imported rows are committed together or not at all. A job failed other than by its file
    (its worker stopped, the broker was down) keeps its upload: Retry queues it again,
    Dismiss deletes the upload and leaves the job dismissed.
    """

    TOPICS, DOCUMENTS, QRELS, RUN, FETCH = "topics", "documents", "qrels", "run", "fetch"
    # A standard collection read through ir_datasets: no upload, its id in `file_name`.
    DATASET = "dataset"
    KIND_CHOICES = [
        (TOPICS, "topics"),
        (DOCUMENTS, "documents"),
        (QRELS, "qrels"),
        (RUN, "run"),
        (FETCH, "run fetched from a search system"),
        (DATASET, "ir_datasets dataset"),
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
    # What a job is doing, in the units of the work: lines of its file parsed (of
    # lines_total; a fetch: queries asked, of the collection's), then rows stored, then,
    # once its import committed, queries scored (of queries_total) where the scores are
    # computed in the job's own process.
    PARSING, STORING, SCORING = "parsing", "storing", "scoring"
    STAGE_CHOICES = [("", "none"), (PARSING, "parsing"), (STORING, "storing"), (SCORING, "scoring")]

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
    lines_total = models.BigIntegerField(default=0, help_text="Lines of the file")
    stage = models.CharField(max_length=10, choices=STAGE_CHOICES, blank=True)
    queries_done = models.BigIntegerField(default=0, help_text="Scoring: queries scored")
    queries_total = models.BigIntegerField(default=0, help_text="Scoring: queries to score")
    summary = models.TextField(blank=True)
    error = models.TextField(blank=True)
    replace = models.BooleanField(default=False, help_text="Runs: replace a run of that name")
    split_tags = models.BooleanField(
        default=False, help_text="Runs: one run per tag of the file, in the file's order"
    )
    run_name = models.CharField(
        max_length=ID_MAX_LENGTH,
        blank=True,
        help_text="Runs: the run's name (empty: its tag); datasets: the name of the run of "
        "scored documents (empty: the dataset id)",
    )
    description = models.TextField(blank=True, help_text="Runs: the run's description")
    parts = models.JSONField(
        default=list,
        blank=True,
        help_text="ir_datasets: the parts to import (queries, docs, qrels, scoreddocs); "
        "empty: every part the dataset has",
    )
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Qrels and datasets: the account the judgements are recorded as (empty: the "
        "import account)",
    )
    system = models.ForeignKey(
        "annotations.SearchSystem",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="fetches",
        help_text="Fetches: the search system asked",
    )
    cancel_requested = models.BooleanField(
        default=False, help_text="Fetches: stop after the queries in flight, storing nothing"
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
                condition=models.Q(
                    kind__in=["topics", "documents", "qrels", "run", "fetch", "dataset"]
                ),
                name="import_job_kind_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    size__gte=0,
                    bytes_done__gte=0,
                    lines_done__gte=0,
                    lines_total__gte=0,
                    queries_done__gte=0,
                    queries_total__gte=0,
                ),
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
        """Failed with its upload kept (a fetch or a dataset needs none: its system asked
        again, its files may be in place now): Retry (and Dismiss) are offered."""
        return self.state == self.FAILED and (
            bool(self.upload_path) or self.kind in (self.FETCH, self.DATASET)
        )

    @property
    def progress(self) -> tuple[int | None, int, str]:
        """The job's bar in the units of its current stage: (value, max, what it says);
        value None while it stores (a bar without a measure: rows have no total)."""
        if self.state == self.QUEUED:
            return 0, 1, "queued"
        if self.kind == self.FETCH and self.stage != self.SCORING:
            return self._fetch_progress()
        if self.stage == self.SCORING:
            total = max(self.queries_total, self.queries_done, 1)
            done = min(self.queries_done, total)
            lead = "imported; " if self.state == self.DONE else ""
            return done, total, f"{lead}scoring {done:,} of {total:,} queries"
        if self.state == self.DONE:
            return 1, 1, "done"
        if self.state == self.RUNNING and self.stage == self.STORING:
            return None, 1, f"storing ({self.lines_done:,} lines parsed)"
        if self.kind == self.DATASET:
            return self._records_progress()
        total = max(self.lines_total, self.lines_done, 1)
        done = min(self.lines_done, total)
        if self.state == self.RUNNING:
            return done, total, f"parsing {done:,} of {total:,} lines"
        return done, total, f"stopped after {done:,} of {total:,} lines"

    def _fetch_progress(self) -> tuple[int | None, int, str]:
        if self.state == self.DONE:
            return 1, 1, "done"
        total = max(self.lines_total, self.lines_done, 1)
        done = min(self.lines_done, total)
        if self.state == self.RUNNING and self.stage == self.STORING:
            return None, 1, f"storing the answers to {done:,} queries"
        if self.state == self.RUNNING:
            return done, total, f"asked {done:,} of {total:,} queries"
        return done, total, f"stopped after {done:,} of {total:,} queries"

    def _records_progress(self) -> tuple[int | None, int, str]:
        """A dataset's bar: records read of the parts' total, when ir_datasets knows it
        without reading them (else a bar without a measure)."""
        done = self.lines_done
        lead = "reading" if self.state == self.RUNNING else "stopped after"
        if self.lines_total:
            total = max(self.lines_total, done, 1)
            return done, total, f"{lead} {done:,} of {total:,} records"
        return (None if self.state == self.RUNNING else 0), 1, f"{lead} {done:,} records"
