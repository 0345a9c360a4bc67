"""Django admin for organisers; judgement writes go through the services (history, rescoring)."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from annotations import score_packs, services
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
from annotations.models.collections import ID_MAX_LENGTH
from annotations.services.adjudications import adjudication_record
from annotations.trec import TrecFormatError


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


class RunAddForm(forms.ModelForm):
    """A run is added with its TREC file, imported as `import_run` imports it: a run without
    results, which could never be scored, cannot be added."""

    file = forms.FileField(
        help_text="A TREC run file: qid Q0 docno rank score tag, one tag (all or nothing)."
    )
    name = forms.CharField(
        required=False, max_length=ID_MAX_LENGTH, help_text="Defaults to the file's tag."
    )
    split_tags = forms.BooleanField(
        required=False,
        label="Split tags",
        help_text="A file holding several tags becomes one run per tag, each named by its tag.",
    )

    class Meta:
        model = Run
        fields = ["collection", "name", "owner", "description", "file", "split_tags"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        upload = data["file"]
        try:
            with transaction.atomic():  # a failed import leaves nothing behind
                self.imported = services.run_files_import(
                    collection=data["collection"],
                    sources=[upload],
                    names=[upload.name],
                    run_name=data.get("name") or None,
                    split_tags=data.get("split_tags", False),
                    owner=data.get("owner"),
                    description=data.get("description", ""),
                )
        except TrecFormatError as error:
            self.add_error("file", str(error))
        except ValidationError as error:
            for field, messages in error.message_dict.items():
                self.add_error(field if field in self.fields else "file", messages)
        else:
            self.instance = self.imported[0].run  # saved: the admin only logs it
            data["name"] = self.instance.name
        return data

    def validate_unique(self) -> None:
        """The import decided on the name, on the locked row."""


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are added with their file; organisers delete them with their scores."""

    list_display = ["name", "collection", "owner", "created", "scored_at"]
    list_filter = ["collection"]
    search_fields = ["name"]
    readonly_fields = ["scored_at"]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = RunAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ("collection", "name", "owner", "description", "file", "split_tags")
        return ("collection", "name", "owner", "description", "scored_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Its rankings hold the collection's document ids, and its name is an id: both stay.
        return ["scored_at"] if obj is None else ["collection", "name", "scored_at"]

    def save_model(self, request: HttpRequest, obj: Run, form: Any, change: bool) -> None:
        # Only what the form edits: `scored_at` belongs to the scoring that is under way.
        obj.save(update_fields=["owner", "description", "updated"])
        for imported in getattr(form, "imported", []):  # the summary `import_run` prints
            messages.info(request, str(imported))

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        """What deleting these runs removes, counted (a run holds one ranking per query and
        a packed score row per query and one for its means); organisers may delete them
        all."""
        runs = list(objs)
        counted = {
            "rankings": Ranking.objects.filter(run__in=runs).count(),
            "per-query scores": QueryScore.objects.filter(run__in=runs).count(),
            "run scores": RunScore.objects.filter(run__in=runs).count(),
        }
        listed = [f"Run {run}: its rankings and every score computed for it" for run in runs]
        return listed, {"runs": len(runs), **counted}, set(), []

    def delete_model(self, request: HttpRequest, obj: Run) -> None:
        services.run_delete(run=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        for run in queryset:
            services.run_delete(run=run)


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

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a run without a query's ranking would keep that query's scores


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


def _per_cutoff(values: dict[int, Any], fields: tuple[str, ...]) -> str:
    """'k=5: ndcg 0.5, judged 1.0; k=10: ...' of packed values (the admin's text form)."""
    return "; ".join(
        f"k={k}: " + ", ".join(f"{name} {getattr(value, name)!r}" for name in fields)
        for k, value in values.items()
    )


@admin.register(QueryScore)
class QueryScoreAdmin(ReadOnlyAdmin):
    """One row per run and query, every cutoff packed (see `annotations.score_packs`)."""

    list_display = ["run", "query", "cutoffs", "first_ndcg"]
    list_filter = ["run__collection"]
    list_select_related = ["run", "query"]
    fields = ["run", "query", "cutoffs", "scores"]
    readonly_fields = ["scores"]

    @admin.display(description="nDCG at the first cutoff")
    def first_ndcg(self, obj: QueryScore) -> float:
        return float(score_packs.floats(obj.ndcg)[0])

    @admin.display(description="scores per cutoff")
    def scores(self, obj: QueryScore) -> str:
        values = obj.per_cutoff()
        return _per_cutoff(values, ("ndcg", "dcg", "judged", "ndcg_condensed"))


@admin.register(RunScore)
class RunScoreAdmin(ReadOnlyAdmin):
    """One row per run, the means at every cutoff packed (see `annotations.score_packs`)."""

    list_display = ["run", "cutoffs", "queries", "first_ndcg", "updated"]
    list_filter = ["run__collection"]
    list_select_related = ["run"]
    fields = ["run", "cutoffs", "queries", "updated", "scores"]
    readonly_fields = ["scores"]

    @admin.display(description="mean nDCG at the first cutoff")
    def first_ndcg(self, obj: RunScore) -> float:
        return next(iter(obj.per_cutoff().values())).ndcg

    @admin.display(description="means per cutoff")
    def scores(self, obj: RunScore) -> str:
        values = obj.per_cutoff()
        return _per_cutoff(values, ("ndcg", "ndcg_condensed", "judged", "ndcg_sum"))


@admin.register(IdealScore)
class IdealScoreAdmin(ReadOnlyAdmin):
    list_display = ["query", "k", "idcg"]
    list_select_related = ["query"]


admin.site.register(Membership)
