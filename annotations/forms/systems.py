"""Search system forms: the system's description, and a fetch of its run."""

from __future__ import annotations

from django import forms

from annotations.models import SearchSystem


class SearchSystemForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = SearchSystem
        fields = [
            "name", "method", "url_template", "headers", "body_template", "depth",
            "answer_format", "hits_path", "id_path", "score_path", "title_path",
            "snippet_path", "url_path", "timeout_seconds", "attempts", "concurrency",
            "requests_per_minute", "fetch_every_hours",
        ]  # fmt: skip
        widgets = {
            "url_template": forms.TextInput(attrs={"spellcheck": "false"}),
            "headers": forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
            "body_template": forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        }
        labels = {
            "url_template": "URL", "body_template": "JSON body", "answer_format": "Answer",
            "hits_path": "Hits", "id_path": "Document id", "score_path": "Score",
            "title_path": "Title", "snippet_path": "Text", "url_path": "Link",
            "fetch_every_hours": "Fetch every (hours)",
        }  # fmt: skip
        help_texts = {
            "answer_format": "A preset reads Elasticsearch's and OpenSearch's hits.hits[]._id "
            "and _score, or Solr's response.docs[].id and score; the expressions below "
            "(JMESPath) change what it reads, blank ones keep the preset's.",
        }

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["headers"].required = False
        if self.instance.pk:
            self.fields["name"].disabled = True


class FetchForm(forms.Form):
    label = forms.CharField(
        required=False,
        max_length=200,
        help_text="The run's name, e.g. \"bm25-boost-title\"; empty: the system's name and "
        "the time.",
    )
