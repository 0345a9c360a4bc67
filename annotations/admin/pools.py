"""The admin of judging pools and assignments."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from annotations.models import (
    Assignment,
    Pool,
    PoolEntry,
)


class PoolEntryInline(admin.TabularInline):
    model = PoolEntry
    extra = 0
    raw_id_fields = ["query", "document"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    """Pools are built and extended with `build_pool` or the pool pages."""

    list_display = ["name", "collection", "depth", "overlap", "created"]
    list_filter = ["collection"]
    readonly_fields = ["collection", "depth", "overlap"]
    inlines = [PoolEntryInline]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["pool", "assessor", "created"]
    list_filter = ["pool__collection"]
    list_select_related = ["pool", "assessor"]
    readonly_fields = ["pool", "assessor"]
