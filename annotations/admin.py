"""Django admin for organisers; judgement writes go through the services (history, rescoring)."""

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from annotations import services
from annotations.models import (
    DEFAULT_GRADES,
    Adjudication,
    Assignment,
    Collection,
    Document,
    GradeLevel,
    IdealScore,
    Judgement,
    JudgementHistory,
    Membership,
    Pool,
    PoolEntry,
    Query,
    QueryScore,
    Ranking,
    Run,
    RunScore,
)
from annotations.services.adjudications import adjudication_record


class GradeScaleFormSet(forms.BaseInlineFormSet):
    """The scale needs a level, and keeps every grade a judgement holds."""

    def clean(self) -> None:
        super().clean()
        values = [
            form.cleaned_data["value"]
            for form in self.forms
            if form.cleaned_data
            and not form.cleaned_data.get("DELETE")
            and form.cleaned_data.get("value") is not None
        ]
        if not values:
            raise forms.ValidationError("A collection needs at least one grade level.")
        if self.instance.pk is not None:
            problems = services.grade_scale_problems(collection=self.instance, values=values)
            if problems:
                raise forms.ValidationError(problems)


class GradeLevelInline(admin.TabularInline):
    model = GradeLevel
    formset = GradeScaleFormSet
    extra = 0

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        # A new collection starts from the default 0-3 scale, ready to edit.
        formset = super().get_formset(request, obj, **kwargs)
        if obj is None:
            formset.extra = len(DEFAULT_GRADES)
        return formset


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "gain", "cutoffs", "missing_queries", "aggregation", "updated"]
    search_fields = ["slug", "name"]
    inlines = [GradeLevelInline, MembershipInline]

    def get_formset_kwargs(
        self, request: HttpRequest, obj: Any, inline: Any, prefix: str
    ) -> dict[str, Any]:
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        # The add form shows the default scale (only on GET: rows posted unchanged from an
        # initial value would count as untouched and not be saved).
        if isinstance(inline, GradeLevelInline) and obj.pk is None and request.method != "POST":
            kwargs["initial"] = [
                {"value": value, "label": label, "definition": definition}
                for value, label, definition in DEFAULT_GRADES
            ]
        return kwargs

    def save_model(self, request: HttpRequest, obj: Collection, form: Any, change: bool) -> None:
        changed = set(form.changed_data) & set(services.SCORING_FIELDS)
        # A new collection's scale is the grade inline's rows, saved next in the same
        # transaction (save_related); the inline refuses an empty scale.
        obj.save(default_scale=False)
        if change and changed:
            services.collection_mark_stale(collection=obj)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        collection = form.instance
        if not collection.grades.exists():  # never a collection without a scale
            GradeLevel.objects.bulk_create(
                GradeLevel(collection=collection, value=v, label=lb, definition=d)
                for v, lb, d in DEFAULT_GRADES
            )


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ["qid", "collection", "title", "judgements_version", "scored_version"]
    list_filter = ["collection"]
    search_fields = ["qid", "title"]
    readonly_fields = ["judgements_version", "scored_version"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["docno", "collection", "title"]
    list_filter = ["collection"]
    search_fields = ["docno", "title"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # rankings refer to documents by id: they go only with their collection


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "owner", "created", "scored_at"]
    list_filter = ["collection"]
    search_fields = ["name"]
    readonly_fields = ["scored_at"]


@admin.register(Ranking)
class RankingAdmin(admin.ModelAdmin):
    """A run's packed ranking of one query: listed and deleted with its run, never edited."""

    list_display = ["run", "query", "size"]
    list_select_related = ["run", "query"]
    list_filter = ["run__collection"]
    raw_id_fields = ["run", "query"]
    fields = ["run", "query", "size"]
    show_full_result_count = False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a ranking changes only by importing its run again

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


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


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by the services: history is append-only, scores are computed."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


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


@admin.register(QueryScore)
class QueryScoreAdmin(ReadOnlyAdmin):
    list_display = ["run", "query", "k", "ndcg", "judged", "ndcg_condensed"]
    list_filter = ["k", "run__collection"]
    list_select_related = ["run", "query"]


@admin.register(RunScore)
class RunScoreAdmin(ReadOnlyAdmin):
    list_display = ["run", "k", "ndcg", "ndcg_condensed", "judged", "queries", "updated"]
    list_filter = ["k", "run__collection"]
    list_select_related = ["run"]


@admin.register(IdealScore)
class IdealScoreAdmin(ReadOnlyAdmin):
    list_display = ["query", "k", "idcg"]
    list_select_related = ["query"]


admin.site.register(Membership)
