"""Collections, queries, documents, runs, judgements with their history, and stored scores."""

from annotations.models.accounts import AccountAudit, AccountOrigin
from annotations.models.collections import (
    AGGREGATION_CHOICES,
    DEFAULT_CUTOFFS,
    DEFAULT_GRADES,
    GAIN_CHOICES,
    ID_MAX_LENGTH,
    MACHINE_GRADE_CHOICES,
    MISSING_CHOICES,
    STALE_CHOICES,
    Collection,
    Document,
    GradeLevel,
    Membership,
    Query,
    default_cutoffs,
)
from annotations.models.idempotency import IdempotentResponse
from annotations.models.impact import DocumentImpact, ImpactSnapshot
from annotations.models.jobs import ImportJob
from annotations.models.judgements import (
    Adjudication,
    Judgement,
    JudgementHistory,
    QrelsVersion,
)
from annotations.models.judges import JudgeAnswer, JudgeRun, JudgeRunFailure, MachineJudge
from annotations.models.pools import (
    Assignment,
    AssignmentItem,
    Pool,
    PoolEntry,
)
from annotations.models.runs import (
    HEAD_IDS,
    Ranking,
    Run,
)
from annotations.models.scores import (
    IdealScore,
    LeaderboardSnapshot,
    MeasureSignificance,
    QueryBound,
    QueryScore,
    RankingQrels,
    RunScore,
)
from annotations.models.systems import FetchFailure, SearchSystem
from annotations.models.webhooks import WebhookDelivery, WebhookSubscription

__all__ = [
    "AGGREGATION_CHOICES",
    "DEFAULT_CUTOFFS",
    "DEFAULT_GRADES",
    "GAIN_CHOICES",
    "HEAD_IDS",
    "ID_MAX_LENGTH",
    "MACHINE_GRADE_CHOICES",
    "MISSING_CHOICES",
    "STALE_CHOICES",
    "AccountAudit",
    "AccountOrigin",
    "Adjudication",
    "Assignment",
    "AssignmentItem",
    "Collection",
    "Document",
    "DocumentImpact",
    "FetchFailure",
    "GradeLevel",
    "IdealScore",
    "IdempotentResponse",
    "ImpactSnapshot",
    "ImportJob",
    "JudgeAnswer",
    "JudgeRun",
    "JudgeRunFailure",
    "Judgement",
    "JudgementHistory",
    "LeaderboardSnapshot",
    "MachineJudge",
    "MeasureSignificance",
    "Membership",
    "Pool",
    "PoolEntry",
    "QrelsVersion",
    "Query",
    "QueryBound",
    "QueryScore",
    "Ranking",
    "RankingQrels",
    "Run",
    "RunScore",
    "SearchSystem",
    "WebhookDelivery",
    "WebhookSubscription",
    "default_cutoffs",
]
