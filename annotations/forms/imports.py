"""HTML forms of the import page: one per kind of file, runs several files at once, and a
standard collection by its ir_datasets id."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile

from annotations.formats import ir_records
from annotations.models import Collection, ImportJob
from annotations.selectors.judging import grading_members
from annotations.services.jobs import upload_text_problem
from annotations.services.judgements import IMPORT_ASSESSOR
from annotations.services.members import not_a_member


def _size_checked(upload: UploadedFile) -> UploadedFile:
    """The upload, refused before it is queued when it is too large, empty or not text."""
    problem = upload_text_problem(upload)
    if problem is not None:
        raise ValidationError(f"{upload.name}: {problem}; nothing was imported")
    limit = settings.NDCG_MAX_UPLOAD_MB
    if (upload.size or 0) > limit * 1024 * 1024:
        megabytes = (upload.size or 0) / (1024 * 1024)
        raise ValidationError(
            f"{upload.name}: {megabytes:.0f} MB is more than the {limit} MB a file may hold "
            "(NDCG_MAX_UPLOAD_MB); nothing was imported"
        )
    return upload


class _FileInput(forms.FileInput):
    """A file input that may take several files (`multiple`)."""

    allow_multiple_selected = True


class _MultipleFileField(forms.FileField):
    """Several files from one input: a list, each file checked as FileField checks one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", _FileInput(attrs={"multiple": True}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        uploads = list(data) if isinstance(data, list | tuple) else [data]
        if not uploads:
            uploads = [None]  # FileField says a file is required
        return [super(_MultipleFileField, self).clean(upload, initial) for upload in uploads]


class UploadForm(forms.Form):
    """One file of one kind; the parser decides the format from the first line."""

    kind = ImportJob.TOPICS
    file = forms.FileField(allow_empty_file=True)  # an empty file gets the page's own message

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", self.kind)
        super().__init__(*args, **kwargs)
        self.collection = collection

    def clean_file(self) -> UploadedFile:
        return _size_checked(self.cleaned_data["file"])

    @property
    def uploads(self) -> list[UploadedFile]:
        return [self.cleaned_data["file"]]


class TopicsForm(UploadForm):
    kind = ImportJob.TOPICS
    file = forms.FileField(
        label="Topics file",
        allow_empty_file=True,
        help_text="TSV (qid<TAB>title), JSONL (qid, title, description, narrative) or TREC "
        "topics (<top> <num> <title> <desc> <narr>). Queries of the same qid are updated.",
    )


class DocumentsForm(UploadForm):
    kind = ImportJob.DOCUMENTS
    file = forms.FileField(
        label="Documents file",
        allow_empty_file=True,
        help_text="JSONL (docno, title, text, url) or TSV (docno<TAB>text or "
        "docno<TAB>title<TAB>text). Documents of the same docno are updated.",
    )


class QrelsForm(UploadForm):
    kind = ImportJob.QRELS
    file = forms.FileField(
        label="Qrels file",
        allow_empty_file=True,
        help_text="TREC qrels: qid iter docno grade, grades on the collection's scale. "
        "Re-importing updates changed grades (kept in the judgement history).",
    )
    assessor = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        label="Record the judgements as",
        empty_label=f"the import account ({IMPORT_ASSESSOR})",
        help_text="The account whose judgements these are: the import account, or an "
        "organiser or assessor of the collection.",
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, collection=collection, **kwargs)
        field = cast(forms.ModelChoiceField, self.fields["assessor"])
        field.queryset = grading_members(collection=collection).order_by("username")
        # One answer for any account not offered, as the API's for any name it refuses.
        field.error_messages["invalid_choice"] = not_a_member(collection=collection)


class RunsForm(UploadForm):
    kind = ImportJob.RUN
    file = _MultipleFileField(
        label="Run files",
        allow_empty_file=True,
        help_text="TREC runs (qid Q0 docno rank score tag), one or many files; each file is "
        "its own job and its run is named by its tag.",
    )
    replace = forms.BooleanField(
        required=False,
        label="Replace runs of the same name",
        help_text="Unticked, a file whose tag names an existing run is refused.",
    )
    split_tags = forms.BooleanField(
        required=False,
        label="One run per tag",
        help_text="A file whose lines carry several tags becomes one run per tag, in the "
        "file's order (the import_run command's --split-tags, the API's split_tags). "
        "Unticked, such a file is refused.",
    )

    def clean_file(self) -> list[UploadedFile]:  # type: ignore[override]
        files: list[UploadedFile] = self.cleaned_data["file"]
        problems = []
        for upload in files:
            try:
                _size_checked(upload)
            except ValidationError as error:
                problems.extend(error.messages)
        if problems:
            raise ValidationError(problems)
        return files

    @property
    def uploads(self) -> list[UploadedFile]:
        return list(self.cleaned_data["file"])


FORMS: dict[str, type[UploadForm]] = {
    form.kind: form for form in (TopicsForm, DocumentsForm, QrelsForm, RunsForm)
}


PART_LABELS = {
    "queries": "queries (topics)",
    "docs": "documents",
    "qrels": "qrels (as judgements)",
    "scoreddocs": "scored documents (as a run)",
}


class DatasetForm(forms.Form):
    """A standard collection by its ir_datasets id, and which of its parts to import (the
    import_ir_datasets command's options); checked by the service that starts its job."""

    kind = ImportJob.DATASET
    dataset = forms.CharField(
        label="Dataset id",
        max_length=200,
        help_text="An id from the ir_datasets catalogue (ir-datasets.com), e.g. vaswani, "
        "antique/test or msmarco-passage/trec-dl-2019/judged.",
    )
    parts = forms.MultipleChoiceField(
        label="Parts to import",
        choices=[(part, PART_LABELS[part]) for part in ir_records.PARTS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="None ticked: every part the dataset has.",
    )
    assessor = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        label="Record the qrels as",
        empty_label=f"the import account ({IMPORT_ASSESSOR})",
        help_text="The account whose judgements the dataset's qrels become: the import "
        "account, or an organiser or assessor of the collection.",
    )
    run_name = forms.CharField(
        label="Name of the run of scored documents",
        max_length=200,
        required=False,
        help_text="Default: the dataset id.",
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", self.kind)
        super().__init__(*args, **kwargs)
        self.collection = collection
        field = cast(forms.ModelChoiceField, self.fields["assessor"])
        field.queryset = grading_members(collection=collection).order_by("username")
        field.error_messages["invalid_choice"] = not_a_member(collection=collection)
