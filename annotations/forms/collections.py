"""Forms of the collection pages: settings and the grade-scale editor (a formset)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from annotations.metrics.machine_grades import DEFAULT_RULE, RULE_EFFECTS
from annotations.models import (
    AGGREGATION_CHOICES,
    GAIN_CHOICES,
    MACHINE_GRADE_CHOICES,
    MISSING_CHOICES,
    STALE_CHOICES,
    Collection,
)
from annotations.models.collections import measures_checked

SETTINGS = (
    "name",
    "description",
    "gain",
    "measures",
    "missing_queries",
    "aggregation",
    "stale_judgements",
    "machine_grades",
    "public_leaderboard",
    "assessors_see_leaderboard",
)


class DescribedRadioSelect(forms.RadioSelect):
    """Radio buttons, each with the sentence saying what choosing it does
    (``annotations/forms/_field.html`` sets it under its label)."""

    def __init__(self, descriptions: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.descriptions = dict(descriptions)

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option: dict[str, Any] = super().create_option(*args, **kwargs)
        option["description"] = self.descriptions.get(str(option["value"]), "")
        if option["description"] and option["attrs"].get("id"):
            option["attrs"]["aria-describedby"] = f"{option['attrs']['id']}_description"
        return option


class CollectionForm(forms.Form):
    """A collection's settings; the slug only when it is created (every URL is built on it)."""

    slug = forms.SlugField(
        max_length=100,
        help_text="Letters, digits, - and _; the collection's address in every page and API "
        "URL. It cannot be changed later.",
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Shown in titles; the slug if empty."
    )
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="What the collection is for.",
    )
    gain = forms.ChoiceField(
        choices=GAIN_CHOICES,
        initial="linear",
        widget=forms.RadioSelect,
        help_text="Linear is trec_eval's ndcg_cut; exponential is the learning-to-rank form.",
    )
    cutoffs = forms.CharField(
        initial="5, 10, 20", help_text="The k of nDCG@k, separated by commas (1 to 1000)."
    )
    measures = forms.CharField(
        required=False,
        label="Other measures",
        help_text="Measures kept beside nDCG@k, stored per query and live like it, in "
        "ir_measures' syntax or trec_eval's, separated by spaces or commas: e.g. "
        "AP P@10 R@100 RR AP(rel=2)@100 Rprec Bpref ERR@20 RBP(p=0.8). Empty: nDCG@k only.",
    )
    missing_queries = forms.ChoiceField(
        choices=MISSING_CHOICES,
        initial="zero",
        label="A judged query a run did not answer",
    )
    aggregation = forms.ChoiceField(
        choices=AGGREGATION_CHOICES,
        initial="median",
        label="Several assessors' grades of one pair",
        help_text="An organiser's adjudication overrides the rule.",
    )
    stale_judgements = forms.ChoiceField(
        choices=STALE_CHOICES,
        initial="count",
        label="Judgements given before their document's text changed",
        help_text="Stale judgements are flagged on the pages either way.",
    )
    machine_grades = forms.ChoiceField(
        choices=MACHINE_GRADE_CHOICES,
        initial=DEFAULT_RULE,
        required=False,
        widget=DescribedRadioSelect(RULE_EFFECTS),
        label="Grades of machine judges",
        help_text="A new collection scores people's grades only until you choose otherwise. "
        "The leaderboard, its downloads and the API say which rule holds; the agreement page "
        "compares the ranking under each.",
    )
    public_leaderboard = forms.BooleanField(
        required=False,
        label="Public leaderboard",
        help_text="Anyone, logged in or not, reads the leaderboard, run pages and comparisons: "
        "this collection's assessors too, so a public leaderboard unblinds them.",
    )
    assessors_see_leaderboard = forms.BooleanField(
        required=False,
        label="Assessors see the leaderboard",
        help_text="Otherwise assessors are blinded to systems and scores (TREC practice).",
    )

    def __init__(self, *args: Any, collection: Collection | None = None, **kwargs: Any) -> None:
        if collection is not None:
            initial = {field: getattr(collection, field) for field in SETTINGS}
            initial["cutoffs"] = ", ".join(map(str, collection.sorted_cutoffs))
            initial["measures"] = " ".join(collection.measures)
            kwargs.setdefault("initial", initial)
        super().__init__(*args, **kwargs)
        self.collection = collection
        if collection is not None:
            del self.fields["slug"]

    def clean_machine_grades(self) -> str:
        """Left out of the form (a script's post): the rule stays as it is."""
        value: str = self.cleaned_data["machine_grades"]
        if value:
            return value
        return self.collection.machine_grades if self.collection is not None else DEFAULT_RULE

    def clean_measures(self) -> list[str]:
        entries = measure_entries(self.cleaned_data["measures"])
        try:
            return measures_checked(entries)
        except ValidationError as error:
            raise forms.ValidationError(error.message_dict["measures"]) from None

    def clean_cutoffs(self) -> list[int]:
        raw: str = self.cleaned_data["cutoffs"]
        parts = [part.strip() for part in raw.replace(" ", ",").split(",") if part.strip()]
        if not parts or not all(part.isdigit() for part in parts):
            raise forms.ValidationError(f"{raw!r}: write whole numbers like 5, 10, 20.")
        return [int(part) for part in parts]


# A separator between measure names: spaces or commas, but not a comma between the
# parameters of one name (``RBP(p=0.8,rel=2)``).
_MEASURE_SEPARATOR = re.compile(r"[\s,]+(?![^()]*\))")


def measure_entries(text: str) -> list[str]:
    """The measure names typed in one field, in order."""
    return [entry for entry in _MEASURE_SEPARATOR.split(text.strip()) if entry]


class GradeLevelForm(forms.Form):
    value = forms.IntegerField(min_value=-9, max_value=99, help_text="-9 to 99")
    label = forms.CharField(max_length=100)
    definition = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What an assessor reads before choosing this grade.",
    )


class _ScaleRows(forms.BaseFormSet):  # type: ignore[type-arg]
    def get_form_kwargs(self, index: int | None) -> dict[str, Any]:
        # A blank row is skipped, the starting rows of a new collection included; a stored
        # level's row is always read (unchanged, it is kept; emptied, it is an error).
        stored = index is not None and index < len(self.initial or [])
        return {"empty_permitted": not stored, "use_required_attribute": False}


GradeScaleFormSet = forms.formset_factory(
    GradeLevelForm, formset=_ScaleRows, extra=2, can_delete=True, max_num=110, validate_max=True
)


def grade_scale_formset(
    data: Any = None, *, collection: Collection | None = None, default: Any = ()
) -> Any:
    """The scale editor: the collection's levels (or `default`) and two empty rows."""
    levels = (
        [(g.value, g.label, g.definition) for g in collection.grades.all()]
        if collection is not None
        else list(default)
    )
    initial = [{"value": v, "label": lb, "definition": d} for v, lb, d in levels]
    if data is not None and collection is None:
        # A new collection has no stored levels: every posted row is new (the default rows
        # were only a starting point), so none is compared with an initial value.
        initial = []
    return GradeScaleFormSet(data, initial=initial, prefix="grades")


def grade_levels(formset: Any) -> list[tuple[int, str, str]]:
    """The levels a valid formset keeps, by value (blank extra rows and removed rows left out)."""
    kept = [
        (form.cleaned_data["value"], form.cleaned_data["label"], form.cleaned_data["definition"])
        for form in formset.forms
        if form.cleaned_data and not form.cleaned_data.get("DELETE")
    ]
    return sorted(kept)
