"""REST API v1, one module per resource, one class per resource path: thin calls into
services and selectors."""

from annotations.apis.catalogue import DocumentListCreateApi, QueryListCreateApi
from annotations.apis.collections import CollectionDetailApi, CollectionListCreateApi
from annotations.apis.import_jobs import (
    ImportJobDetailApi,
    ImportJobListCreateApi,
    IrDatasetImportApi,
)
from annotations.apis.imports import DocumentsImportApi, QrelsImportApi, TopicsImportApi
from annotations.apis.judgements import JudgementDetailApi, JudgementListCreateApi, QrelsApi
from annotations.apis.judges import (
    JudgeRunCancelApi,
    JudgeRunDetailApi,
    JudgeRunFailureListApi,
    JudgeRunListApi,
    JudgeRunRetryApi,
    MachineJudgeDetailApi,
    MachineJudgeListApi,
    MachineJudgeTryApi,
)
from annotations.apis.runs import RunDetailApi, RunListCreateApi, RunResultsApi, RunsZipApi
from annotations.apis.scores import (
    CompareApi,
    LeaderboardApi,
    LeaderboardReportApi,
    RunScoresApi,
    leaderboard_body,
)
from annotations.apis.sensitivity import MachineRulesApi, SensitivityApi
from annotations.apis.systems import (
    SearchSystemDetailApi,
    SearchSystemListApi,
    SearchSystemTryApi,
    SystemChangesApi,
    SystemFetchCancelApi,
    SystemFetchDetailApi,
    SystemFetchFailureListApi,
    SystemFetchListApi,
    SystemFetchRetryApi,
    SystemHistoryApi,
)
from annotations.apis.tokens import TokenApi
from annotations.apis.versions import (
    LeaderboardAsOfApi,
    QrelsAsOfApi,
    QrelsVersionApi,
    QrelsVersionLeaderboardApi,
    QrelsVersionListApi,
    QrelsVersionQrelsApi,
    QrelsVersionsDiffApi,
)
from annotations.apis.webhooks import (
    WebhookDeliveryListApi,
    WebhookDetailApi,
    WebhookListApi,
    WebhookTestApi,
)

__all__ = [
    "CollectionDetailApi",
    "CollectionListCreateApi",
    "CompareApi",
    "DocumentListCreateApi",
    "DocumentsImportApi",
    "ImportJobDetailApi",
    "ImportJobListCreateApi",
    "IrDatasetImportApi",
    "JudgeRunCancelApi",
    "JudgeRunDetailApi",
    "JudgeRunFailureListApi",
    "JudgeRunListApi",
    "JudgeRunRetryApi",
    "JudgementDetailApi",
    "JudgementListCreateApi",
    "LeaderboardApi",
    "LeaderboardAsOfApi",
    "LeaderboardReportApi",
    "MachineJudgeDetailApi",
    "MachineJudgeListApi",
    "MachineJudgeTryApi",
    "MachineRulesApi",
    "QrelsApi",
    "QrelsAsOfApi",
    "QrelsImportApi",
    "QrelsVersionApi",
    "QrelsVersionLeaderboardApi",
    "QrelsVersionListApi",
    "QrelsVersionQrelsApi",
    "QrelsVersionsDiffApi",
    "QueryListCreateApi",
    "RunDetailApi",
    "RunListCreateApi",
    "RunResultsApi",
    "RunScoresApi",
    "RunsZipApi",
    "SearchSystemDetailApi",
    "SearchSystemListApi",
    "SearchSystemTryApi",
    "SensitivityApi",
    "SystemChangesApi",
    "SystemFetchCancelApi",
    "SystemFetchDetailApi",
    "SystemFetchFailureListApi",
    "SystemFetchListApi",
    "SystemFetchRetryApi",
    "SystemHistoryApi",
    "TokenApi",
    "TopicsImportApi",
    "WebhookDeliveryListApi",
    "WebhookDetailApi",
    "WebhookListApi",
    "WebhookTestApi",
    "leaderboard_body",
]
