"""Use cases that write, one module per concept; everything is re-exported here."""

from annotations.services.adjudications import adjudication_record
from annotations.services.catalogue import (
    DocumentFields,
    QueryFields,
    collection_create_with_organiser,
    collection_publish,
    documents_store,
    membership_grant,
    queries_store,
)
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
    judgement_upsert,
    judgements_import,
)
from annotations.services.pools import (
    assignment_create,
    assignment_item_grade,
    assignment_item_skip,
    pool_add_pairs,
    pool_build,
    pool_extend,
)
from annotations.services.runs import (
    run_delete,
    run_export,
    run_import,
    run_store,
    runs_import,
)

__all__ = [
    "IMPORT_ASSESSOR",
    "SCORING_FIELDS",
    "DocumentFields",
    "ImportSummary",
    "QueryFields",
    "adjudication_record",
    "assignment_create",
    "assignment_item_grade",
    "assignment_item_skip",
    "collection_create",
    "collection_create_with_organiser",
    "collection_mark_stale",
    "collection_publish",
    "collection_update",
    "documents_ensure",
    "documents_import",
    "documents_store",
    "grade_levels_from_spec",
    "grade_values",
    "import_assessor",
    "judgement_delete",
    "judgement_record",
    "judgement_upsert",
    "judgements_import",
    "membership_grant",
    "pool_add_pairs",
    "pool_build",
    "pool_extend",
    "qrels_export",
    "queries_ensure",
    "queries_store",
    "run_delete",
    "run_export",
    "run_import",
    "run_store",
    "runs_import",
    "topics_import",
]
