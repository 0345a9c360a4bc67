"""The webhook form: a URL and the events it receives."""

from __future__ import annotations

from django import forms

from annotations.models.webhooks import EVENT_TYPES


class WebhookForm(forms.Form):
    url = forms.URLField(
        max_length=2000,
        label="URL",
        assume_scheme="https",
        help_text="Where deliveries are POSTed, e.g. https://example.org/hooks/ndcg",
    )
    events = forms.MultipleChoiceField(
        required=False,
        choices=[(name, f"{name}: {meaning}") for name, meaning in EVENT_TYPES.items()],
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every event.",
    )
