"""The admin of runs (added from a TREC file, through the services) and their rankings."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from annotations import services
from annotations.formats.trec import TrecFormatError
from annotations.models import (
    QueryScore,
    Ranking,
    Run,
    RunScore,
)
from annotations.models.collections import ID_MAX_LENGTH


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
