"""File imports through the API: topics, documents and qrels, as the import commands read them."""

from __future__ import annotations

from rest_framework import serializers

from annotations.serializers.fields import UploadField
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
        help_text="Username the judgements are recorded under (as import_qrels --assessor); "
        "the caller's own account when absent.",
    )
