"""The admin of collections, their grade scales, members, queries and documents."""

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from annotations import services
from annotations.models import (
    DEFAULT_GRADES,
    Collection,
    Document,
    GradeLevel,
    Membership,
    Query,
)


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


admin.site.register(Membership)
