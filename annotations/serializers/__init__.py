"""REST API shapes, one module per resource: input validation for writes and the documented
bodies of every response; everything is re-exported here."""

from annotations.serializers.catalogue import (
    DocumentInputSerializer,
    DocumentSerializer,
    QueryInputSerializer,
    QuerySerializer,
)
from annotations.serializers.collections import (
    GRADE_RANGE,
    CollectionCreateSerializer,
    CollectionSerializer,
    CollectionUpdateSerializer,
    GradeLevelSerializer,
)
from annotations.serializers.errors import (
    ErrorDetailSerializer,
    ErrorLocationSerializer,
    ErrorSerializer,
    ImportSummarySerializer,
)
from annotations.serializers.fields import (
    ID_PATTERN,
    ID_SCHEMA,
    QID_PATTERN,
    CutoffsField,
    IdField,
    UploadField,
)
from annotations.serializers.imports import (
    DocumentsUploadSerializer,
    ImportJobSerializer,
    ImportJobUploadSerializer,
    IrDatasetImportSerializer,
    QrelsUploadSerializer,
    TopicsUploadSerializer,
)
from annotations.serializers.judgements import JudgementInputSerializer, JudgementSerializer
from annotations.serializers.runs import (
    RunJsonSerializer,
    RunResultSerializer,
    RunSerializer,
    RunUploadSerializer,
    RunWriteSerializer,
)
from annotations.serializers.scores import (
    BootstrapSerializer,
    BoundsSerializer,
    ComparisonRowSerializer,
    ComparisonSerializer,
    IntervalSerializer,
    LeaderboardComputingSerializer,
    LeaderboardRunSerializer,
    LeaderboardSerializer,
    QueryValueSerializer,
    RunScoresSerializer,
    ScoresStateSerializer,
    SignificanceSerializer,
)

__all__ = [
    "GRADE_RANGE",
    "ID_PATTERN",
    "ID_SCHEMA",
    "QID_PATTERN",
    "BootstrapSerializer",
    "BoundsSerializer",
    "CollectionCreateSerializer",
    "CollectionSerializer",
    "CollectionUpdateSerializer",
    "ComparisonRowSerializer",
    "ComparisonSerializer",
    "CutoffsField",
    "DocumentInputSerializer",
    "DocumentSerializer",
    "DocumentsUploadSerializer",
    "ErrorDetailSerializer",
    "ErrorLocationSerializer",
    "ErrorSerializer",
    "GradeLevelSerializer",
    "IdField",
    "ImportJobSerializer",
    "ImportJobUploadSerializer",
    "ImportSummarySerializer",
    "IntervalSerializer",
    "IrDatasetImportSerializer",
    "JudgementInputSerializer",
    "JudgementSerializer",
    "LeaderboardComputingSerializer",
    "LeaderboardRunSerializer",
    "LeaderboardSerializer",
    "QrelsUploadSerializer",
    "QueryInputSerializer",
    "QuerySerializer",
    "QueryValueSerializer",
    "RunJsonSerializer",
    "RunResultSerializer",
    "RunScoresSerializer",
    "RunSerializer",
    "RunUploadSerializer",
    "RunWriteSerializer",
    "ScoresStateSerializer",
    "SignificanceSerializer",
    "TopicsUploadSerializer",
    "UploadField",
]
