"""App configuration for the judging and scoring app."""

from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Judging and scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotations import signals  # noqa: F401  (connects the scoring triggers)
