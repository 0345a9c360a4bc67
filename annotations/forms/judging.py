"""HTML forms for judging: pools, assignments, grading and adjudication."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from annotations.models import Collection, JudgementHistory, Query, Run
from annotations.services.members import not_a_member

DISAGREEMENT_CHOICES = [(2, "Grades differ by 2 or more"), (1, "Any difference")]


class _CollectionForm(forms.Form):
    """A form whose run and query choices come from one collection."""

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection
        if "runs" in self.fields:
            runs = cast(forms.ModelMultipleChoiceField, self.fields["runs"])
            runs.queryset = Run.objects.filter(collection=collection)

    def clean_queries(self) -> list[Query]:
        """Query ids (qids) separated by commas or spaces; empty means every query."""
        raw = self.cleaned_data.get("queries", "")
        qids = [part for part in raw.replace(",", " ").split() if part]
        found = {q.qid: q for q in Query.objects.filter(collection=self.collection, qid__in=qids)}
        unknown = [qid for qid in qids if qid not in found]
        if unknown:
            raise ValidationError(f"Unknown queries: {', '.join(unknown)}")
        return [found[qid] for qid in dict.fromkeys(qids)]


class RunChoiceField(forms.ModelMultipleChoiceField):
    """Runs of the form's collection, each labelled by its name (the page names the
    collection once)."""

    def label_from_instance(self, obj: Any) -> str:
        return str(obj.name)


class PoolBuildForm(_CollectionForm):
    name = forms.SlugField(max_length=100, initial="main")
    depth = forms.IntegerField(min_value=1, max_value=1000, initial=10, help_text="k per run")
    runs = RunChoiceField(
        queryset=Run.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every run.",
    )
    queries = forms.CharField(
        required=False, help_text="qids separated by commas; empty: every query."
    )
    include_judged = forms.BooleanField(required=False, label="Queue pairs that are already judged")
    order = forms.ChoiceField(
        choices=[("depth", "Depth-k pooling: every pair"), ("impact", "By impact")],
        initial="depth",
        required=False,
        widget=forms.RadioSelect,
        help_text="By impact: the budget's pairs that can change the leaderboard most, "
        "at cutoff k = depth, handed out highest impact first.",
    )
    budget = forms.IntegerField(
        min_value=1, required=False, help_text="By impact: how many pairs to pool."
    )
    per_query = forms.IntegerField(
        min_value=1,
        required=False,
        label="Most pairs per query",
        help_text="By impact: empty takes at most twice the budget's even share over the "
        "queries; the budget itself lets it go anywhere.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["order"] = data.get("order") or "depth"
        if data["order"] == "impact" and not data.get("budget"):
            self.add_error("budget", "Give a budget of pairs for a pool by impact.")
        if data.get("order") != "impact":
            data["budget"] = None
            data["per_query"] = None
        return data


class PoolExtendForm(_CollectionForm):
    depth = forms.IntegerField(min_value=1, max_value=1000, required=False)
    runs = RunChoiceField(
        queryset=Run.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every run (new runs join).",
    )
    queries = forms.CharField(required=False, help_text="More qids; empty: the pool's queries.")
    include_judged = forms.BooleanField(required=False, label="Queue pairs that are already judged")


class AssignmentForm(_CollectionForm):
    assessors = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple
    )
    overlap = forms.IntegerField(
        min_value=1, max_value=20, initial=1, help_text="Assessors per pair"
    )
    queries = forms.CharField(
        required=False, help_text="qids separated by commas; empty: every query of the pool."
    )
    pairs = forms.IntegerField(
        min_value=1, required=False, help_text="At most this many new pairs per assessor."
    )

    def __init__(self, *args: Any, assessors: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast(forms.ModelMultipleChoiceField, self.fields["assessors"])
        field.queryset = (
            get_user_model()
            .objects.filter(pk__in=[user.pk for user in assessors])
            .order_by("username")
        )
        # One answer for any account not offered, as the API's for any name it refuses.
        field.error_messages["invalid_choice"] = not_a_member(collection=self.collection)


class ReleaseForm(forms.Form):
    """What an assessor has left of an assignment: back to the pool (``to`` empty) or handed
    to another organiser or assessor of the collection (``assessors``)."""

    to = forms.CharField(required=False, label="Hand to", widget=forms.Select)

    def __init__(
        self,
        *args: Any,
        collection: Collection,
        assessors: list[Any],
        holder: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection
        self.holder = holder
        names = [user.get_username() for user in assessors if user.pk != holder.pk]
        self.offered = set(names)
        select = cast(forms.Select, self.fields["to"].widget)
        select.choices = [("", "back to the pool")] + [(name, name) for name in names]

    def clean_to(self) -> str:
        name: str = self.cleaned_data["to"]
        if name and name == self.holder.get_username():
            raise ValidationError("Hand the pairs to another assessor than their holder.")
        if name and name not in self.offered:
            raise ValidationError(not_a_member(collection=self.collection, username=name))
        return name


class GradeForm(forms.Form):
    """One POST from the grading page: a grade, or "skip" (unsure) with an optional note."""

    grade = forms.TypedChoiceField(coerce=int, required=False, choices=())
    action = forms.ChoiceField(choices=[("grade", "Grade"), ("skip", "Skip")], required=False)
    note = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )
    # The item the page showed: impact-ordered assignments may re-sort positions meanwhile.
    item = forms.IntegerField(required=False, widget=forms.HiddenInput)
    # Set by the page's script: how long the pair was shown (visible) before this grade.
    dwell_ms = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def __init__(self, *args: Any, levels: list[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        grade = cast(forms.TypedChoiceField, self.fields["grade"])
        grade.choices = [(value, str(value)) for value in levels]

    def clean_dwell_ms(self) -> int | None:
        """A pair left open longer than the cap (a tab left open) counts as the cap."""
        value = self.cleaned_data.get("dwell_ms")
        return None if value is None else min(value, JudgementHistory.DWELL_CAP_MS)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") != "skip" and data.get("grade") in (None, ""):
            raise ValidationError("Choose a grade, or skip the pair.")
        return data


class AdjudicationForm(forms.Form):
    query = forms.IntegerField(widget=forms.HiddenInput)
    document = forms.IntegerField(widget=forms.HiddenInput)
    grade = forms.TypedChoiceField(coerce=int, choices=())
    note = forms.CharField(required=False, max_length=2000)

    def __init__(self, *args: Any, levels: list[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        grade = cast(forms.TypedChoiceField, self.fields["grade"])
        grade.choices = [(value, str(value)) for value in levels]
