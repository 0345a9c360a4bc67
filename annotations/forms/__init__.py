"""HTML forms, one module per page group; the judging forms are re-exported here."""

from annotations.forms.judging import (
    DISAGREEMENT_CHOICES,
    AdjudicationForm,
    AssignmentForm,
    GradeForm,
    PoolBuildForm,
    PoolExtendForm,
    ReleaseForm,
)

__all__ = [
    "DISAGREEMENT_CHOICES",
    "AdjudicationForm",
    "AssignmentForm",
    "GradeForm",
    "PoolBuildForm",
    "PoolExtendForm",
    "ReleaseForm",
]
