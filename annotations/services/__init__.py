"""Use cases that write, one module per concept; everything is re-exported here."""

from annotations.services.collections import (
    SCORING_FIELDS,
    collection_create,
    collection_mark_stale,
    collection_update,
    grade_levels_from_spec,
    grade_values,
)
from annotations.services.imports import (
    ImportSummary,
    documents_ensure,
    documents_import,
    qrels_export,
    queries_ensure,
    topics_import,
)
from annotations.services.judgements import (
    IMPORT_ASSESSOR,
    import_assessor,
    judgement_delete,
    judgement_record,
    judgements_import,
)
from annotations.services.runs import run_delete, run_export, run_import, run_store

__all__ = [
    "IMPORT_ASSESSOR",
    "SCORING_FIELDS",
    "ImportSummary",
    "collection_create",
    "collection_mark_stale",
    "collection_update",
    "documents_ensure",
    "documents_import",
    "grade_levels_from_spec",
    "grade_values",
    "import_assessor",
    "judgement_delete",
    "judgement_record",
    "judgements_import",
    "qrels_export",
    "queries_ensure",
    "run_delete",
    "run_export",
    "run_import",
    "run_store",
    "topics_import",
]
