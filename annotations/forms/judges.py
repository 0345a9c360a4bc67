"""Machine judge forms: the judge's settings, and a run over a pool."""

from __future__ import annotations

from django import forms

from annotations.models import JudgeRun, MachineJudge, Pool


class MachineJudgeForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = MachineJudge
        fields = [
            "name", "base_url", "model", "api_key_env", "prompt_template", "variant_template",
            "temperature",
            "max_tokens", "concurrency", "requests_per_minute", "timeout_seconds", "attempts",
            "prompt_price", "completion_price", "currency", "logprobs",
        ]  # fmt: skip
        widgets = {
            "prompt_template": forms.Textarea(attrs={"rows": 14}),
            "variant_template": forms.Textarea(attrs={"rows": 6}),
        }
        help_texts = {
            "prompt_template": "Fields: {scale} {title} {description} {narrative} {document} "
            "{low} {high}. Empty: the UMBRELA prompt. The answer must end in "
            "'##final score: N' with N on the scale; anything else is a failure.",
        }

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["prompt_template"].required = False
        self.fields["variant_template"].required = False
        if self.instance.pk:
            self.fields["name"].disabled = True


class JudgeRunForm(forms.Form):
    pool = forms.ModelChoiceField(queryset=Pool.objects.none(), help_text="The pairs to grade")
    scope = forms.ChoiceField(choices=JudgeRun.SCOPE_CHOICES, initial=JudgeRun.UNJUDGED)

    def __init__(self, *args: object, collection_id: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        pools = Pool.objects.filter(collection_id=collection_id).order_by("name")
        self.fields["pool"].queryset = pools  # type: ignore[attr-defined]
