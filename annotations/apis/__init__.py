"""REST API v1, one module per resource, one class per resource path: thin calls into
services and selectors."""

from annotations.apis.catalogue import DocumentListCreateApi, QueryListCreateApi
from annotations.apis.collections import CollectionDetailApi, CollectionListCreateApi
from annotations.apis.judgements import JudgementDetailApi, JudgementListCreateApi, QrelsApi
from annotations.apis.runs import RunDetailApi, RunListCreateApi
from annotations.apis.scores import CompareApi, LeaderboardApi, RunScoresApi, leaderboard_body
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
    "JudgementDetailApi",
    "JudgementListCreateApi",
    "LeaderboardApi",
    "LeaderboardAsOfApi",
    "QrelsApi",
    "QrelsAsOfApi",
    "QrelsVersionLeaderboardApi",
    "QrelsVersionListApi",
    "QrelsVersionQrelsApi",
    "QrelsVersionsDiffApi",
    "QueryListCreateApi",
    "RunDetailApi",
    "RunListCreateApi",
    "RunScoresApi",
    "SensitivityApi",
    "TokenApi",
    "leaderboard_body",
]
