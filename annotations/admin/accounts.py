"""The admin of account origins and the account audit trail (who issued which link, who added
whom): read only, written by the members services."""

from django.contrib import admin

from annotations.admin._base import ReadOnlyAdmin
from annotations.models import AccountAudit, AccountOrigin


@admin.register(AccountAudit)
class AccountAuditAdmin(ReadOnlyAdmin):
    list_display = ["time", "actor_name", "action", "target_name", "collection_slug", "detail"]
    list_filter = ["action"]
    search_fields = ["actor_name", "target_name", "collection_slug"]
    date_hierarchy = "time"


@admin.register(AccountOrigin)
class AccountOriginAdmin(ReadOnlyAdmin):
    list_display = ["user", "collection", "created_by", "system", "created"]
    list_filter = ["system"]
    list_select_related = ["user", "collection", "created_by"]
    search_fields = ["user__username"]
