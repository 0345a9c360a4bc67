"""The qrels version form: tag the judgements as they stand."""

from __future__ import annotations

from django import forms

from annotations.models import MACHINE_GRADE_CHOICES


class QrelsVersionForm(forms.Form):
    name = forms.SlugField(
        max_length=100, help_text="Letters, digits, - and _, e.g. round-1 (unique here)."
    )
    note = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="What it marks."
    )
    machine_grades = forms.ChoiceField(
        choices=[("", "As the collection counts them now"), *MACHINE_GRADE_CHOICES],
        required=False,
        label="Machine judges' grades",
        help_text="Tag one version people only and one machine-filled to keep both qrels.",
    )
