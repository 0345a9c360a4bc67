"""File imports through the API: topics, documents and qrels, as the import commands read them,
import jobs, and standard collections by their ir_datasets id."""

from __future__ import annotations

from rest_framework import serializers

from annotations.serializers.fields import IdField, UploadField
from annotations.serializers.inputs import StrictInputMixin

UPLOAD_HELP = "The file; at most NDCG_MAX_UPLOAD_MB."


class TopicsUploadSerializer(StrictInputMixin, serializers.Serializer):
    """A topic file: TSV (qid<TAB>title), JSONL (qid, title, description, narrative) or TREC
    topics (<top> <num> <title> <desc> <narr>)."""

    file = UploadField(help_text=UPLOAD_HELP)


class DocumentsUploadSerializer(StrictInputMixin, serializers.Serializer):
    """A document file: JSONL (docno, title, text, url) or TSV (docno<TAB>text or
    docno<TAB>title<TAB>text)."""

    file = UploadField(help_text=UPLOAD_HELP)


class QrelsUploadSerializer(StrictInputMixin, serializers.Serializer):
    """TREC qrels (qid iter docno grade) as one assessor's judgements."""

    file = UploadField(help_text=UPLOAD_HELP)
    assessor = serializers.CharField(
        required=False,
        min_length=1,
        max_length=150,
        trim_whitespace=False,
        help_text="Username the judgements are recorded under (as import_qrels --assessor): "
        "an organiser or assessor of the collection, or the import account `trec`; the "
        "caller's own account when absent.",
    )


class ImportJobSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """An import job: its state and its progress in the units of its stage."""

    id = serializers.IntegerField()
    kind = serializers.ChoiceField(
        choices=["topics", "documents", "qrels", "run", "fetch", "dataset"],
        help_text="The kind of file; `fetch`: a run fetched from a search system (`file_name` "
        "names it); `dataset`: a standard collection read through ir_datasets (its id in "
        "`file_name`, what it imports in `parts`).",
    )
    file_name = serializers.CharField(help_text="The file's name; a dataset job: its id.")
    parts = serializers.ListField(
        child=serializers.ChoiceField(choices=["queries", "docs", "qrels", "scoreddocs"]),
        help_text="A dataset job: the parts it imports, in order; empty for a file.",
    )
    state = serializers.ChoiceField(
        choices=["queued", "running", "done", "failed", "dismissed"],
        help_text="queued, running, then done (with `summary`) or failed (with `error`); "
        "dismissed: a failed job whose kept upload was let go.",
    )
    stage = serializers.ChoiceField(
        choices=["", "parsing", "storing", "scoring"],
        help_text="What it is doing: parsing lines, storing rows, then (done, without a "
        "broker) scoring queries; empty when it is doing nothing.",
    )
    progress = serializers.CharField(
        help_text='What the bar says: "parsing 12,000 of 1,000,000 lines", "storing (...)", '
        '"scoring 40 of 249 queries", "done", ...'
    )
    value = serializers.IntegerField(
        allow_null=True, help_text="The bar's value in the stage's units; null while storing."
    )
    max = serializers.IntegerField(help_text="The bar's maximum in the same units.")
    size = serializers.IntegerField(help_text="Bytes of the file")
    bytes_done = serializers.IntegerField()
    lines_done = serializers.IntegerField(help_text="Lines parsed; a dataset job: records read.")
    lines_total = serializers.IntegerField(
        help_text="Lines of the file (0 until it starts); a dataset job: records of its parts "
        "when ir_datasets knows them without reading (else 0)."
    )
    queries_done = serializers.IntegerField()
    queries_total = serializers.IntegerField()
    summary = serializers.CharField(allow_blank=True)
    error = serializers.CharField(
        allow_blank=True, help_text="Why it failed: `file:line: field: problem (...)`."
    )
    retryable = serializers.BooleanField(
        help_text="Failed with its upload kept, or a failed dataset job (Retry)."
    )
    created = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)
    url = serializers.URLField(help_text="This job (poll it for its progress)")


class ImportJobUploadSerializer(StrictInputMixin, serializers.Serializer):  # type: ignore[type-arg]
    """A file to import as a job, with the options of its kind (as the import page's forms)."""

    kind = serializers.ChoiceField(
        choices=["topics", "documents", "qrels", "run"],
        help_text="topics, documents, qrels (organisers) or run (organisers and owners).",
    )
    file = UploadField(help_text=UPLOAD_HELP)
    assessor = serializers.CharField(
        required=False,
        min_length=1,
        max_length=150,
        trim_whitespace=False,
        help_text="Qrels: the username the judgements are recorded under, an organiser or "
        "assessor of the collection or the import account `trec`; the caller's own account "
        "when absent.",
    )
    name = IdField(required=False, help_text="Run: its name (default: the file's tag).")
    description = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="Run: its description."
    )
    replace = serializers.BooleanField(
        required=False, default=False, help_text="Run: replace a run of that name."
    )
    split_tags = serializers.BooleanField(
        required=False, default=False, help_text="Run: one run per tag of the file."
    )


class IrDatasetImportSerializer(StrictInputMixin, serializers.Serializer):  # type: ignore[type-arg]
    """A standard collection by its ir_datasets id, and what of it to import (the
    import_ir_datasets command's options)."""

    dataset = serializers.CharField(
        min_length=1,
        max_length=200,
        help_text="An ir_datasets id, e.g. `vaswani`, `antique/test` or "
        "`msmarco-passage/trec-dl-2019/judged` (as import_ir_datasets DATASET).",
    )
    parts = serializers.ListField(
        child=serializers.ChoiceField(choices=["queries", "docs", "qrels", "scoreddocs"]),
        required=False,
        default=list,
        help_text="The parts to import (--parts): queries, docs, qrels (as one account's "
        "judgements), scoreddocs (as a run); absent or empty: every part the dataset has.",
    )
    assessor = serializers.CharField(
        required=False,
        min_length=1,
        max_length=150,
        trim_whitespace=False,
        help_text="Username the qrels are recorded under (--assessor): an organiser or "
        "assessor of the collection; the import account `trec` when absent.",
    )
    run_name = IdField(
        required=False,
        help_text="Name of the run of scored documents (--run-name; default: the dataset id).",
    )
