"""Forms of the exports page: which run, which assessor, which scores in which format."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from annotations.models import Collection, Run

FORMATS = [
    ("trec", "trec_eval text (one run)"),
    ("csv", "CSV, full precision"),
    ("json", "JSON, full precision (as evaluate --format json)"),
]


class _RunChoice(forms.ModelChoiceField):  # type: ignore[type-arg]
    def label_from_instance(self, obj: Any) -> str:
        return str(obj.name)


class RunExportForm(forms.Form):
    run = _RunChoice(queryset=Run.objects.none(), to_field_name="name", label="Run")

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast(_RunChoice, self.fields["run"])
        field.queryset = Run.objects.filter(collection=collection).order_by("name")


class ScoresExportForm(forms.Form):
    k = forms.TypedChoiceField(
        coerce=int,
        required=False,
        empty_value=None,
        label="Cutoff k",
        help_text="Scores are stored at the collection's cutoffs; empty: all of them.",
    )
    run = _RunChoice(
        queryset=Run.objects.none(),
        to_field_name="name",
        required=False,
        label="Run",
        help_text="Empty: every run (not for the trec_eval format).",
    )
    format = forms.ChoiceField(choices=FORMATS, initial="trec", widget=forms.RadioSelect)
    per_query = forms.BooleanField(
        required=False, label="Per-query lines (trec_eval -q)", help_text="trec_eval format only."
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection
        k = cast(forms.TypedChoiceField, self.fields["k"])
        k.choices = [("", "every cutoff")] + [(c, str(c)) for c in collection.sorted_cutoffs]
        run = cast(_RunChoice, self.fields["run"])
        run.queryset = Run.objects.filter(collection=collection).order_by("name")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("format") == "trec" and data.get("run") is None:
            self.add_error("run", "The trec_eval format shows one run: choose it.")
        return data

    def ks(self) -> list[int]:
        k = self.cleaned_data.get("k")
        return [k] if k is not None else self.collection.sorted_cutoffs
