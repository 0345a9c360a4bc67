"""The admin of import jobs: what each upload became, read only (the services run them)."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from annotations.admin._base import ReadOnlyAdmin
from annotations.models import ImportJob


@admin.register(ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    """Every upload of the import page (and standard collection read through ir_datasets) and
    its outcome; a finished job may be deleted (with the upload a failed job keeps for its
    Retry), a queued or running one not (a worker holds it)."""

    list_display = ["file_name", "collection", "kind", "state", "size", "created_by", "created"]
    list_filter = ["state", "kind", "collection"]
    list_select_related = ["collection", "created_by"]
    search_fields = ["file_name", "summary", "error"]
    date_hierarchy = "created"
    fields = [
        "collection",
        "kind",
        "file_name",
        "size",
        "state",
        "summary",
        "error",
        "stage",
        "bytes_done",
        "lines_done",
        "lines_total",
        "queries_done",
        "queries_total",
        "replace",
        "split_tags",
        "run_name",
        "description",
        "parts",
        "assessor",
        "created_by",
        "created",
        "started",
        "finished",
        "heartbeat",
        "retries",
        "retried",
    ]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if not request.user.has_perm("annotations.delete_importjob"):
            return False
        return obj is None or not obj.active
