"""Routes of the REST API v1 (mounted at /api/v1/); resources by slug, qid, docno, run name."""

from django.urls import path

import annotations.converters  # noqa: F401  (registers the <id:...> path converter)
from annotations import apis

app_name = "api"

urlpatterns = [
    path("token/", apis.TokenApi.as_view(), name="token"),
    path("collections/", apis.CollectionListCreateApi.as_view(), name="collections"),
    path("collections/<slug:slug>/", apis.CollectionDetailApi.as_view(), name="collection"),
    path("collections/<slug:slug>/queries/", apis.QueryListCreateApi.as_view(), name="queries"),
    path(
        "collections/<slug:slug>/documents/",
        apis.DocumentListCreateApi.as_view(),
        name="documents",
    ),
    path("collections/<slug:slug>/runs/", apis.RunListCreateApi.as_view(), name="runs"),
    path("collections/<slug:slug>/runs/<id:name>/", apis.RunDetailApi.as_view(), name="run"),
    path(
        "collections/<slug:slug>/runs/<id:name>/results/",
        apis.RunResultsApi.as_view(),
        name="run-results",
    ),
    path(
        "collections/<slug:slug>/runs/<id:name>/scores/",
        apis.RunScoresApi.as_view(),
        name="run-scores",
    ),
    path(
        "collections/<slug:slug>/judgements/",
        apis.JudgementListCreateApi.as_view(),
        name="judgements",
    ),
    path(
        "collections/<slug:slug>/judgements/<id:qid>/<id:docno>/",
        apis.JudgementDetailApi.as_view(),
        name="judgement",
    ),
    path("collections/<slug:slug>/qrels/", apis.QrelsApi.as_view(), name="qrels"),
    path("collections/<slug:slug>/leaderboard/", apis.LeaderboardApi.as_view(), name="leaderboard"),
    path(
        "collections/<slug:slug>/leaderboard/report/",
        apis.LeaderboardReportApi.as_view(),
        name="leaderboard-report",
    ),
    path("collections/<slug:slug>/compare/", apis.CompareApi.as_view(), name="compare"),
    path(
        "collections/<slug:slug>/imports/topics/",
        apis.TopicsImportApi.as_view(),
        name="import-topics",
    ),
    path(
        "collections/<slug:slug>/imports/documents/",
        apis.DocumentsImportApi.as_view(),
        name="import-documents",
    ),
    path(
        "collections/<slug:slug>/imports/qrels/",
        apis.QrelsImportApi.as_view(),
        name="import-qrels",
    ),
    path("collections/<slug:slug>/sensitivity/", apis.SensitivityApi.as_view(), name="sensitivity"),
    path("collections/<slug:slug>/versions/", apis.QrelsVersionListApi.as_view(), name="versions"),
    path(
        "collections/<slug:slug>/versions/<slug:name>/qrels/",
        apis.QrelsVersionQrelsApi.as_view(),
        name="version-qrels",
    ),
    path(
        "collections/<slug:slug>/versions/<slug:name>/leaderboard/",
        apis.QrelsVersionLeaderboardApi.as_view(),
        name="version-leaderboard",
    ),
    path(
        "collections/<slug:slug>/versions-diff/",
        apis.QrelsVersionsDiffApi.as_view(),
        name="versions-diff",
    ),
    path("collections/<slug:slug>/as-of/qrels/", apis.QrelsAsOfApi.as_view(), name="as-of-qrels"),
    path(
        "collections/<slug:slug>/as-of/leaderboard/",
        apis.LeaderboardAsOfApi.as_view(),
        name="as-of-leaderboard",
    ),
]
