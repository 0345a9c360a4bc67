"""Runs: as listed, and the two bodies that submit one (a TREC file, JSON results)."""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers

from annotations.formats import trec
from annotations.models import Run
from annotations.serializers.fields import IdField, QidField, UploadField
from annotations.serializers.inputs import StrictInputMixin


class RunSerializer(serializers.ModelSerializer):
    owner = serializers.SerializerMethodField(help_text="The submitting system owner's username.")
    pending = serializers.SerializerMethodField(help_text="True until the run is first scored.")

    class Meta:
        model = Run
        fields = ["name", "description", "owner", "created", "updated", "scored_at", "pending"]

    def get_owner(self, run: Run) -> str | None:
        return run.owner.get_username() if run.owner else None

    def get_pending(self, run: Run) -> bool:
        return run.scored_at is None


class RunResultSerializer(StrictInputMixin, serializers.Serializer):
    qid = QidField()
    docno = IdField()
    score = serializers.FloatField(
        required=False, allow_null=True, help_text="Give all scores or none."
    )
    rank = serializers.IntegerField(
        required=False,
        min_value=trec.RANK_RANGE[0],
        max_value=trec.RANK_RANGE[1],
        help_text="Informational, as in trec_eval; a 32-bit integer.",
    )

    def validate_score(self, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise serializers.ValidationError("The score must be a finite number.")
        return value


class RunReported(StrictInputMixin, serializers.Serializer):
    """What a run reports but no write sets (the caller becomes the owner of a run it
    creates; the times and the scoring are the server's): naming one is a 400."""

    owner = serializers.CharField(read_only=True, help_text="Read-only: the caller's, on create.")
    created = serializers.DateTimeField(read_only=True)
    updated = serializers.DateTimeField(read_only=True)
    scored_at = serializers.DateTimeField(read_only=True)
    pending = serializers.BooleanField(read_only=True)


class RunJsonSerializer(RunReported):
    """A run's results as JSON, in rank order per query; without scores that order is kept.
    The URL names the run."""

    description = serializers.CharField(required=False, allow_blank=True, default="")
    results = RunResultSerializer(many=True, allow_empty=False)

    def validate_results(self, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        scored = [item.get("score") is not None for item in results]
        if any(scored) and not all(scored):
            raise serializers.ValidationError("Give a score for every result or for none.")
        seen: set[tuple[str, str]] = set()
        for item in results:
            pair = (item["qid"], item["docno"])
            if pair in seen:
                raise serializers.ValidationError(
                    f"Document {item['docno']!r} appears twice for query {item['qid']!r}."
                )
            seen.add(pair)
        return results

    def grouped(self) -> dict[str, list[tuple[str, float | None, int]]]:
        """{qid: [(docno, score, rank)]} in the order given, as ``run_store`` takes it."""
        by_query: dict[str, list[tuple[str, float | None, int]]] = {}
        for item in self.validated_data["results"]:
            docs = by_query.setdefault(item["qid"], [])
            docs.append((item["docno"], item.get("score"), item.get("rank", len(docs) + 1)))
        return by_query


class RunUploadSerializer(RunReported):
    """A TREC run file (qid Q0 docno rank score tag) as multipart/form-data."""

    file = UploadField(help_text="The run file; at most NDCG_MAX_UPLOAD_MB.")
    name = IdField(required=False, help_text="Defaults to the file's tag (POST).")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    split_tags = serializers.BooleanField(
        required=False,
        default=False,
        help_text="POST only: a file holding several tags becomes one run per tag, each named "
        "by its tag (without it such a file is refused).",
    )


class RunImportSerializer(serializers.Serializer):
    run = RunSerializer()
    results = serializers.IntegerField(help_text="Number of results stored.")
    ignored_ranks = serializers.IntegerField(
        default=0,
        help_text="Lines whose rank is not a 32-bit integer: ignored (results are ordered by "
        "score), stored as the result's place in that order.",
    )
    first_ignored_rank_line = serializers.IntegerField(
        allow_null=True, default=None, help_text="The first of those lines."
    )
    summary = serializers.CharField(help_text="The import summary, as `import_run` prints it.")


class RunWriteSerializer(RunImportSerializer):
    """The run stored (with `split_tags`, the first tag's), and every run the request stored."""

    runs = RunImportSerializer(
        many=True, help_text="Every run stored: one, or with `split_tags` one per tag in order."
    )
