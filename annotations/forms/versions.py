"""The qrels version form: tag the judgements as they stand."""

from __future__ import annotations

from django import forms


class QrelsVersionForm(forms.Form):
    name = forms.SlugField(
        max_length=100, help_text="Letters, digits, - and _, e.g. round-1 (unique here)."
    )
    note = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="What it marks."
    )
