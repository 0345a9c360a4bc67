"""REST API v1, one module per resource, one class per resource path: thin calls into
services and selectors."""

from annotations.apis.catalogue import DocumentListCreateApi, QueryListCreateApi
from annotations.apis.collections import CollectionDetailApi, CollectionListCreateApi
from annotations.apis.imports import DocumentsImportApi, QrelsImportApi, TopicsImportApi
from annotations.apis.judgements import JudgementDetailApi, JudgementListCreateApi, QrelsApi
from annotations.apis.runs import RunDetailApi, RunListCreateApi, RunResultsApi
from annotations.apis.scores import (
    CompareApi,
    LeaderboardApi,
    LeaderboardReportApi,
    RunScoresApi,
    leaderboard_body,
)
from annotations.apis.sensitivity import SensitivityApi
from annotations.apis.tokens import TokenApi
from annotations.apis.versions import (
    LeaderboardAsOfApi,
    QrelsAsOfApi,
    QrelsVersionLeaderboardApi,
    QrelsVersionListApi,
    QrelsVersionQrelsApi,
    QrelsVersionsDiffApi,
)

__all__ = [
    "CollectionDetailApi",
    "CollectionListCreateApi",
    "CompareApi",
    "DocumentListCreateApi",
    "DocumentsImportApi",
    "JudgementDetailApi",
    "JudgementListCreateApi",
    "LeaderboardApi",
    "LeaderboardAsOfApi",
    "LeaderboardReportApi",
    "QrelsApi",
    "QrelsAsOfApi",
    "QrelsImportApi",
    "QrelsVersionLeaderboardApi",
    "QrelsVersionListApi",
    "QrelsVersionQrelsApi",
    "QrelsVersionsDiffApi",
    "QueryListCreateApi",
    "RunDetailApi",
    "RunListCreateApi",
    "RunResultsApi",
    "RunScoresApi",
    "SensitivityApi",
    "TokenApi",
    "TopicsImportApi",
    "leaderboard_body",
]
