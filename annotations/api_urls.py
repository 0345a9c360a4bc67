"""Routes of the REST API v1 (mounted at /api/v1/); resources by slug, qid, docno, run name."""

from django.urls import path

import annotations.converters  # noqa: F401  (registers the <id:...> path converter)
from annotations import apis
from annotations.apis import assignments, campaign, exports, members, pools

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
    path(
        "collections/<slug:slug>/imports/ir-datasets/",
        apis.IrDatasetImportApi.as_view(),
        name="import-ir-datasets",
    ),
    # Import jobs: create by upload (202), state and progress, list.
    path(
        "collections/<slug:slug>/import-jobs/",
        apis.ImportJobListCreateApi.as_view(),
        name="import-jobs",
    ),
    path(
        "collections/<slug:slug>/import-jobs/<int:job_id>/",
        apis.ImportJobDetailApi.as_view(),
        name="import-job",
    ),
    path(
        "collections/<slug:slug>/runs-zip/",
        apis.RunsZipApi.as_view(),
        name="runs-zip",
    ),
    path("collections/<slug:slug>/sensitivity/", apis.SensitivityApi.as_view(), name="sensitivity"),
    path(
        "collections/<slug:slug>/machine-grades/",
        apis.MachineRulesApi.as_view(),
        name="machine-grades",
    ),
    path("collections/<slug:slug>/versions/", apis.QrelsVersionListApi.as_view(), name="versions"),
    path(
        "collections/<slug:slug>/versions/<slug:name>/",
        apis.QrelsVersionApi.as_view(),
        name="version",
    ),
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
    # Webhooks
    path("collections/<slug:slug>/webhooks/", apis.WebhookListApi.as_view(), name="webhooks"),
    path(
        "collections/<slug:slug>/webhooks/<int:webhook_id>/",
        apis.WebhookDetailApi.as_view(),
        name="webhook",
    ),
    path(
        "collections/<slug:slug>/webhooks/<int:webhook_id>/deliveries/",
        apis.WebhookDeliveryListApi.as_view(),
        name="webhook-deliveries",
    ),
    path(
        "collections/<slug:slug>/webhooks/<int:webhook_id>/test/",
        apis.WebhookTestApi.as_view(),
        name="webhook-test",
    ),
    # Machine judges
    path("collections/<slug:slug>/judges/", apis.MachineJudgeListApi.as_view(), name="judges"),
    path(
        "collections/<slug:slug>/judges/<slug:name>/",
        apis.MachineJudgeDetailApi.as_view(),
        name="judge",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/try/",
        apis.MachineJudgeTryApi.as_view(),
        name="judge-try",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/",
        apis.JudgeRunListApi.as_view(),
        name="judge-runs",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/",
        apis.JudgeRunDetailApi.as_view(),
        name="judge-run",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/failures/",
        apis.JudgeRunFailureListApi.as_view(),
        name="judge-run-failures",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/retry/",
        apis.JudgeRunRetryApi.as_view(),
        name="judge-run-retry",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/cancel/",
        apis.JudgeRunCancelApi.as_view(),
        name="judge-run-cancel",
    ),
    # Search systems and the runs fetched from them
    path("collections/<slug:slug>/systems/", apis.SearchSystemListApi.as_view(), name="systems"),
    path(
        "collections/<slug:slug>/systems/<slug:name>/",
        apis.SearchSystemDetailApi.as_view(),
        name="system",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/try/",
        apis.SearchSystemTryApi.as_view(),
        name="system-try",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/history/",
        apis.SystemHistoryApi.as_view(),
        name="system-history",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/changes/",
        apis.SystemChangesApi.as_view(),
        name="system-changes",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/",
        apis.SystemFetchListApi.as_view(),
        name="system-fetches",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/",
        apis.SystemFetchDetailApi.as_view(),
        name="system-fetch",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/failures/",
        apis.SystemFetchFailureListApi.as_view(),
        name="system-fetch-failures",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/cancel/",
        apis.SystemFetchCancelApi.as_view(),
        name="system-fetch-cancel",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/retry/",
        apis.SystemFetchRetryApi.as_view(),
        name="system-fetch-retry",
    ),
    # The judging campaign: pools, assignments, members and accounts, adjudication,
    # agreement, history, downloads.
    path("collections/<slug:slug>/pools/", pools.PoolListCreateApi.as_view(), name="pools"),
    path(
        "collections/<slug:slug>/pools/<int:pool_id>/",
        pools.PoolDetailApi.as_view(),
        name="pool",
    ),
    path(
        "collections/<slug:slug>/pools/<int:pool_id>/extend/",
        pools.PoolExtendApi.as_view(),
        name="pool-extend",
    ),
    path(
        "collections/<slug:slug>/pools/<int:pool_id>/assign/",
        pools.PoolAssignApi.as_view(),
        name="pool-assign",
    ),
    path(
        "collections/<slug:slug>/assignments/",
        assignments.AssignmentListApi.as_view(),
        name="assignments",
    ),
    path(
        "collections/<slug:slug>/assignments/<int:assignment_id>/items/",
        assignments.AssignmentItemsApi.as_view(),
        name="assignment-items",
    ),
    path(
        "collections/<slug:slug>/assignments/<int:assignment_id>/release/",
        pools.AssignmentReleaseApi.as_view(),
        name="assignment-release",
    ),
    path(
        "collections/<slug:slug>/members/",
        members.MemberListCreateApi.as_view(),
        name="members",
    ),
    path(
        "collections/<slug:slug>/members/<int:membership_id>/",
        members.MemberDetailApi.as_view(),
        name="member",
    ),
    path(
        "collections/<slug:slug>/members/<int:membership_id>/password-link/",
        members.PasswordLinkApi.as_view(),
        name="member-password-link",
    ),
    path(
        "collections/<slug:slug>/accounts/",
        members.AccountCreateApi.as_view(),
        name="accounts",
    ),
    path("collections/<slug:slug>/agreement/", campaign.AgreementApi.as_view(), name="agreement"),
    path(
        "collections/<slug:slug>/disagreements/",
        campaign.DisagreementsApi.as_view(),
        name="disagreements",
    ),
    path(
        "collections/<slug:slug>/adjudications/",
        campaign.AdjudicationListCreateApi.as_view(),
        name="adjudications",
    ),
    path("collections/<slug:slug>/history/", campaign.HistoryApi.as_view(), name="history"),
    path(
        "collections/<slug:slug>/assessor-qrels/",
        exports.AssessorQrelsApi.as_view(),
        name="assessor-qrels",
    ),
    path(
        "collections/<slug:slug>/runs/<id:name>/download/",
        exports.RunDownloadApi.as_view(),
        name="run-download",
    ),
    path(
        "collections/<slug:slug>/scores/export/trec/",
        exports.ScoresTrecExportApi.as_view(),
        name="scores-export-trec",
    ),
    path(
        "collections/<slug:slug>/scores/export/csv/",
        exports.ScoresCsvExportApi.as_view(),
        name="scores-export-csv",
    ),
    path(
        "collections/<slug:slug>/scores/export/json/",
        exports.ScoresJsonExportApi.as_view(),
        name="scores-export-json",
    ),
]
