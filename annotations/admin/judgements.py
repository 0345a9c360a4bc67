"""The admin of judgements, their history and adjudications: writes go through the services
(history, rescoring)."""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from annotations import services
from annotations.admin._base import ReadOnlyAdmin
from annotations.models import (
    Adjudication,
    Judgement,
    JudgementHistory,
)
from annotations.services.adjudications import adjudication_record


class JudgementAdminForm(forms.ModelForm):
    class Meta:
        model = Judgement
        fields = ["query", "document", "assessor", "grade", "note"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # On a change the pair is read-only, so it comes from the judgement being edited.
        query = data.get("query") or (self.instance.query if self.instance.query_id else None)
        grade = data.get("grade")
        if query is not None and grade is not None:
            levels = services.grade_values(query.collection)
            if grade not in levels:
                self.add_error("grade", f"{grade} is not on this collection's scale {levels}.")
        document = data.get("document")
        if (
            query is not None
            and document is not None
            and document.collection_id != query.collection_id
        ):
            self.add_error("document", "The document belongs to another collection.")
        return data


@admin.register(Judgement)
class JudgementAdmin(admin.ModelAdmin):
    form = JudgementAdminForm
    list_display = ["query", "document", "assessor", "grade", "updated"]
    list_filter = ["query__collection", "grade"]
    list_select_related = ["query", "document", "assessor"]
    search_fields = ["query__qid", "document__docno", "assessor__username"]
    raw_id_fields = ["query", "document"]
    actions = ["delete_with_history"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Query, document and assessor identify a judgement: editing them would record a new
        # judgement and leave this one behind. Delete it and add another instead.
        return ["query", "document", "assessor"] if obj is not None else []

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # bulk delete would bypass history and rescoring
        return actions

    def save_model(self, request: HttpRequest, obj: Judgement, form: Any, change: bool) -> None:
        recorded = services.judgement_record(
            query=obj.query,
            document=obj.document,
            assessor=obj.assessor,
            grade=obj.grade,
            note=obj.note,
            source="admin",
            changed_by=request.user,  # type: ignore[arg-type]
        )
        obj.pk = recorded.pk

    def delete_model(self, request: HttpRequest, obj: Judgement) -> None:
        services.judgement_delete(judgement=obj, source="admin", changed_by=request.user)  # type: ignore[arg-type]

    @admin.action(description="Delete selected judgements (history kept, scores follow)")
    def delete_with_history(self, request: HttpRequest, queryset: QuerySet[Judgement]) -> None:
        for judgement in queryset:
            services.judgement_delete(
                judgement=judgement,
                source="admin",
                changed_by=request.user,  # type: ignore[arg-type]
            )


@admin.register(JudgementHistory)
class JudgementHistoryAdmin(ReadOnlyAdmin):
    """Append-only: nobody edits or deletes history."""

    list_display = [
        "query",
        "document",
        "assessor",
        "old_grade",
        "new_grade",
        "source",
        "changed_at",
    ]
    list_filter = ["source", "query__collection"]
    list_select_related = ["query", "document", "assessor"]


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    """Adjudications are saved through the service: history row, rescoring, organiser check."""

    list_display = ["query", "document", "grade", "organiser", "updated"]
    list_select_related = ["query", "document", "organiser"]
    raw_id_fields = ["query", "document"]
    fields = ["query", "document", "grade", "note"]

    def save_model(self, request: HttpRequest, obj: Adjudication, form: Any, change: bool) -> None:
        recorded = adjudication_record(
            query=obj.query,
            document=obj.document,
            organiser=request.user,  # type: ignore[arg-type]
            grade=obj.grade,
            note=obj.note,
        )
        obj.pk = recorded.pk

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # an adjudication is changed, never silently removed
