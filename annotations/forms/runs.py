"""Forms of the runs page: a run's description, and a file that replaces its results."""

from __future__ import annotations

from django import forms

from annotations.services.run_details import DESCRIPTION_MAX


class RunDescriptionForm(forms.Form):
    description = forms.CharField(
        required=False,
        max_length=DESCRIPTION_MAX,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="What the system is (model, parameters, data); shown with the run.",
    )


class RunReplaceForm(forms.Form):
    file = forms.FileField(
        label="TREC run file",
        help_text="qid Q0 docno rank score tag, one result a line. It replaces every result of "
        "this run (the run keeps its name whatever the tag); the run is scored again.",
    )
