"""URL routing: admin, auth pages, the app's pages and its versioned REST API."""

from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from annotations import api_errors
from annotations.apis.schema import SchemaApi, SchemaDocsPage

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    # The one-time set-password links an organiser hands to a new account; setting the
    # password logs the person in.
    path(
        "accounts/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            post_reset_login=True,
            post_reset_login_backend="django.contrib.auth.backends.ModelBackend",
        ),
        name="password_reset_confirm",
    ),
    path(
        "accounts/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("api/v1/", include("annotations.api_urls")),
    path("api/schema/", SchemaApi.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file, so the docs run no inline script;
    # Swagger UI sets inline styles, which this page alone allows.
    path(
        "api/docs/",
        csp_update({"style-src": ["'unsafe-inline'"]})(
            SchemaDocsPage.as_view(url_name="api-schema")
        ),
        name="api-docs",
    ),
    # Any other path under /api/ (with DEBUG too): the API's JSON 404, not a page.
    re_path(r"^api/", api_errors.api_path_not_found),
    path("", include("annotations.urls")),
]

# Under /api/ even an unknown path or a server error answers in the API's JSON error shape.
handler404 = "annotations.api_errors.page_not_found"
handler500 = "annotations.api_errors.server_error"
