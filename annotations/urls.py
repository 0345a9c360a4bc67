"""HTML pages of the app."""

from django.urls import path

import annotations.converters  # noqa: F401  (registers the <id:...> path converter)
from annotations.views import (
    collection_settings,
    collections,
    compare,
    dashboards,
    exports,
    grading,
    imports,
    judges,
    judging,
    members,
    queries,
    runs,
    scores,
    significance,
    stale,
    system_history,
    systems,
    versions,
    webhooks,
)

urlpatterns = [
    path("", collections.home, name="home"),
    path("create-collection/", collection_settings.collection_create, name="collection-create"),
    path("collections/<slug:slug>/", collections.collection_detail, name="collection-detail"),
    path(
        "collections/<slug:slug>/settings/",
        collection_settings.collection_edit,
        name="collection-edit",
    ),
    path("collections/<slug:slug>/leaderboard/", scores.leaderboard, name="leaderboard"),
    path(
        "collections/<slug:slug>/leaderboard/state/",
        scores.leaderboard_state,
        name="leaderboard-state",
    ),
    path(
        "collections/<slug:slug>/leaderboard/significance/",
        significance.leaderboard_significance,
        name="leaderboard-significance",
    ),
    path(
        "collections/<slug:slug>/leaderboard/report/",
        significance.leaderboard_report_download,
        name="leaderboard-report",
    ),
    path(
        "collections/<slug:slug>/dashboard/",
        dashboards.dashboard,
        name="collection-dashboard",
    ),
    path(
        "collections/<slug:slug>/dashboard/state/",
        dashboards.dashboard_state,
        name="collection-dashboard-state",
    ),
    path("collections/<slug:slug>/compare/", compare.compare, name="compare"),
    path("collections/<slug:slug>/runs/", runs.runs, name="collection-runs"),
    path("collections/<slug:slug>/runs/<id:name>/", scores.run_detail, name="run-detail"),
    path(
        "collections/<slug:slug>/runs/<id:name>/download/",
        runs.run_download,
        name="collection-run-download",
    ),
    path(
        "collections/<slug:slug>/runs/<id:name>/describe/",
        runs.run_edit,
        name="collection-run-edit",
    ),
    path(
        "collections/<slug:slug>/runs/<id:name>/replace/",
        runs.run_replace,
        name="collection-run-replace",
    ),
    path(
        "collections/<slug:slug>/runs/<id:name>/delete/",
        runs.run_delete,
        name="collection-run-delete",
    ),
    path("collections/<slug:slug>/queries/", queries.queries, name="queries"),
    path("collections/<slug:slug>/queries/<id:qid>/", scores.query_detail, name="query-detail"),
    path(
        "collections/<slug:slug>/documents/<id:docno>/",
        queries.document_detail,
        name="document-detail",
    ),
    path(
        "collections/<slug:slug>/queries/<id:qid>/to-pool/",
        scores.query_to_pool,
        name="query-to-pool",
    ),
    path("collections/<slug:slug>/members/", members.members, name="collection-members"),
    path(
        "collections/<slug:slug>/members/<int:membership_id>/role/",
        members.member_role,
        name="collection-member-role",
    ),
    path(
        "collections/<slug:slug>/members/<int:membership_id>/remove/",
        members.member_remove,
        name="collection-member-remove",
    ),
    path(
        "collections/<slug:slug>/members/<int:membership_id>/link/",
        members.member_link,
        name="collection-member-link",
    ),
    path("collections/<slug:slug>/exports/", exports.exports_page, name="collection-exports"),
    path(
        "collections/<slug:slug>/exports/qrels/",
        exports.qrels_download,
        name="collection-export-qrels",
    ),
    path(
        "collections/<slug:slug>/exports/assessor-qrels/",
        exports.assessor_qrels_download,
        name="collection-export-assessor",
    ),
    path(
        "collections/<slug:slug>/exports/history/",
        exports.history_download,
        name="collection-export-history",
    ),
    path(
        "collections/<slug:slug>/exports/run/", exports.run_download, name="collection-export-run"
    ),
    path(
        "collections/<slug:slug>/exports/runs.zip",
        exports.runs_zip_download,
        name="collection-export-runs-zip",
    ),
    path(
        "collections/<slug:slug>/exports/scores/",
        exports.scores_download,
        name="collection-export-scores",
    ),
    path("collections/<slug:slug>/import/", imports.imports, name="collection-imports"),
    path(
        "collections/<slug:slug>/import/jobs/",
        imports.import_jobs_state,
        name="collection-import-jobs",
    ),
    path(
        "collections/<slug:slug>/import/jobs/<int:job_id>/retry/",
        imports.import_job_retry_view,
        name="collection-import-retry",
    ),
    path(
        "collections/<slug:slug>/import/jobs/<int:job_id>/dismiss/",
        imports.import_job_dismiss_view,
        name="collection-import-dismiss",
    ),
    path(
        "collections/<slug:slug>/import/ir-datasets/",
        imports.import_dataset,
        name="collection-import-dataset",
    ),
    path(
        "collections/<slug:slug>/import/<slug:kind>/",
        imports.import_upload,
        name="collection-import-upload",
    ),
    path("judging/", judging.queue, name="judging-queue"),
    path(
        "judging/assignments/<int:assignment_id>/",
        judging.assignment_detail,
        name="judging-assignment",
    ),
    path(
        "judging/assignments/<int:assignment_id>/continue/",
        grading.assignment_continue,
        name="judging-continue",
    ),
    path(
        "judging/assignments/<int:assignment_id>/pairs/<int:position>/",
        grading.grade,
        name="judging-grade",
    ),
    path(
        "judging/assignments/<int:assignment_id>/pairs/<int:position>/next/",
        grading.pairs_next,
        name="judging-pairs-next",
    ),
    path(
        "judging/assignments/<int:assignment_id>/undo/",
        grading.assignment_undo,
        name="judging-undo",
    ),
    path("collections/<slug:slug>/pools/", judging.pools, name="judging-pools"),
    path("collections/<slug:slug>/pools/stale/", stale.stale_to_pool, name="judging-stale-pool"),
    path("collections/<slug:slug>/pools/<int:pool_id>/", judging.pool_detail, name="judging-pool"),
    path(
        "collections/<slug:slug>/pools/<int:pool_id>/assign/",
        judging.pool_assign,
        name="judging-pool-assign",
    ),
    path(
        "collections/<slug:slug>/pools/<int:pool_id>/extend/",
        judging.pool_extend,
        name="judging-pool-extend",
    ),
    path(
        "collections/<slug:slug>/pools/<int:pool_id>/assignments/<int:assignment_id>/release/",
        judging.pool_release,
        name="judging-pool-release",
    ),
    path("collections/<slug:slug>/agreement/", judging.agreement, name="judging-agreement"),
    path(
        "collections/<slug:slug>/disagreements/",
        judging.disagreements,
        name="judging-disagreements",
    ),
    path("collections/<slug:slug>/versions/", versions.versions, name="qrels-versions"),
    path(
        "collections/<slug:slug>/versions/<slug:name>/",
        versions.version_detail,
        name="qrels-version",
    ),
    path(
        "collections/<slug:slug>/versions/<slug:name>/qrels/",
        versions.version_qrels,
        name="qrels-version-download",
    ),
    path("collections/<slug:slug>/webhooks/", webhooks.webhooks, name="collection-webhooks"),
    path(
        "collections/<slug:slug>/webhooks/<int:webhook_id>/test/",
        webhooks.webhook_test,
        name="collection-webhook-test",
    ),
    path(
        "collections/<slug:slug>/webhooks/<int:webhook_id>/delete/",
        webhooks.webhook_delete,
        name="collection-webhook-delete",
    ),
    path("collections/<slug:slug>/judges/", judges.judges, name="collection-judges"),
    path("collections/<slug:slug>/judges/<slug:name>/", judges.judge_detail, name="judge-detail"),
    path("collections/<slug:slug>/judges/<slug:name>/run/", judges.judge_run, name="judge-run"),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/state/",
        judges.judge_runs_state,
        name="judge-runs-state",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/",
        judges.judge_run_detail,
        name="judge-run-detail",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/state/",
        judges.judge_run_state,
        name="judge-run-state",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/retry/",
        judges.judge_run_again,
        name="judge-run-retry",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:name>/runs/<int:run_id>/cancel/",
        judges.judge_run_stop,
        name="judge-run-cancel",
    ),
    path("collections/<slug:slug>/systems/", systems.systems, name="collection-systems"),
    path(
        "collections/<slug:slug>/systems/<slug:name>/", systems.system_detail, name="system-detail"
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/state/",
        systems.system_state,
        name="system-state",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/history/",
        system_history.system_history_page,
        name="system-history",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/history/state/",
        system_history.system_history_state,
        name="system-history-state",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/changes/",
        system_history.system_changes,
        name="system-changes",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/changes/to-pool/",
        system_history.system_changes_to_pool,
        name="system-changes-to-pool",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/state/",
        systems.system_fetch_state,
        name="system-fetch-state",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetch/",
        systems.system_fetch,
        name="system-fetch",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/",
        systems.system_fetch_detail,
        name="system-fetch-detail",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/cancel/",
        systems.system_fetch_stop,
        name="system-fetch-cancel",
    ),
    path(
        "collections/<slug:slug>/systems/<slug:name>/fetches/<int:job_id>/retry/",
        systems.system_fetch_again,
        name="system-fetch-retry",
    ),
]
